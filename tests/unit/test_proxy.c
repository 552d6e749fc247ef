/* test_proxy.c - the PROXY protocol parser and trusted-peer list
 * (src/proto/proxy.c): detection as Netty's, v1 and v2 headers whole, cut
 * short and malformed, and CIDR matching. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "ns/err.h"
#include "ns/proxy.h"

static const uint8_t sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

static int parse_str(const char *s, ns_proxy_hdr_t *h, const char **why)
{
    return ns_proxy_parse((const uint8_t *)s, strlen(s), h, why);
}

static void detect(void **state)
{
    (void)state;
    assert_int_equal(ns_proxy_detect((const uint8_t *)"PROXY TCP4", 10), NS_PROXY_NEED_MORE);
    assert_int_equal(ns_proxy_detect((const uint8_t *)"PROXY TCP4 1", 12), NS_PROXY_V1);
    assert_int_equal(ns_proxy_detect(sig, 12), NS_PROXY_V2);
    static const uint8_t frame[12] = {0, 0, 0, 40, 0, 0, 0, 30, '{', '"', 'c', 'o'};
    assert_int_equal(ns_proxy_detect(frame, 12), NS_PROXY_NONE);
    static const uint8_t hello[12] = {0x16, 3, 1, 2, 0, 1, 0, 1, 0xfc, 3, 3, 0};
    assert_int_equal(ns_proxy_detect(hello, 12), NS_PROXY_NONE);
    /* decided early when no signature can follow; undecided on a prefix */
    assert_int_equal(ns_proxy_detect(hello, 1), NS_PROXY_NONE);
    assert_int_equal(ns_proxy_detect(frame, 4), NS_PROXY_NONE);
    assert_int_equal(ns_proxy_detect((const uint8_t *)"PRO", 3), NS_PROXY_NEED_MORE);
    assert_int_equal(ns_proxy_detect(sig, 7), NS_PROXY_NEED_MORE);
    assert_int_equal(ns_proxy_detect((const uint8_t *)"PROXZ", 5), NS_PROXY_NONE);
    assert_int_equal(ns_proxy_detect(sig, 0), NS_PROXY_NEED_MORE);
}

static void v1_headers(void **state)
{
    (void)state;
    ns_proxy_hdr_t h;
    const char *why = NULL;
    const char *ok = "PROXY TCP4 203.0.113.7 192.0.2.1 40000 9876\r\nrest";
    assert_int_equal(parse_str(ok, &h, &why), NS_OK);
    assert_true(h.has_addr);
    assert_int_equal(h.version, 1);
    assert_string_equal(h.src, "203.0.113.7");
    assert_string_equal(h.dst, "192.0.2.1");
    assert_int_equal(h.src_port, 40000);
    assert_int_equal(h.dst_port, 9876);
    assert_int_equal(h.header_len, strlen(ok) - 4);
    assert_int_equal(parse_str("PROXY TCP6 2001:DB8::1 ::1 1 65535\r\n", &h, &why), NS_OK);
    assert_string_equal(h.src, "2001:db8::1"); /* canonical form */
    assert_int_equal(h.family, AF_INET6);
    assert_int_equal(parse_str("PROXY UNKNOWN whatever here\r\n", &h, &why), NS_OK);
    assert_false(h.has_addr);
    /* every prefix of a good header asks for more */
    for (size_t n = 0; n < strlen(ok) - 4; n++)
        assert_int_equal(ns_proxy_parse((const uint8_t *)ok, n, &h, &why), NS_EAGAIN);
    const char *bad[] = {
        "PROXY TCP4 203.0.113.7 192.0.2.1 40000 9876\n",    /* LF without CR */
        "PROXY TCP4 203.0.113.7 192.0.2.1 40000 9876\rX",   /* CR without LF */
        "PROXY TCP4 203.0.113.7 192.0.2.1 40000 98765\r\n", /* port too big */
        "PROXY TCP4 203.0.113.7 192.0.2.1 40000 +1\r\n",    /* not digits */
        "PROXY TCP4 2001:db8::1 192.0.2.1 1 2\r\n",         /* family mismatch */
        "PROXY TCP4 203.0.113.7 192.0.2.1 1\r\n",           /* a port missing */
        "PROXY TCP4 203.0.113.7  192.0.2.1 1 2\r\n",        /* double space */
        "PROXY UDP4 203.0.113.7 192.0.2.1 1 2\r\n",         /* protocol */
        "PROXYTCP4 203.0.113.7 192.0.2.1 1 2\r\n",          /* no space */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",             /* extra token */
        "PROXY TCP4 1.2.3.4\x01 5.6.7.8 1 2\r\n",           /* control byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        if (parse_str(bad[i], &h, &why) != NS_EINVAL)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(why);
    }
    char longline[200] = "PROXY UNKNOWN ";
    memset(longline + 14, 'x', 120);
    assert_int_equal(parse_str(longline, &h, &why), NS_EINVAL); /* no CRLF in 107 bytes */
}

static void v2_headers(void **state)
{
    (void)state;
    ns_proxy_hdr_t h;
    const char *why = NULL;
    uint8_t b[64];
    memcpy(b, sig, 12);
    b[12] = 0x21;
    b[13] = 0x11;
    b[14] = 0;
    b[15] = 12;
    uint8_t a4[12] = {198, 51, 100, 9, 192, 0, 2, 1, 0x1f, 0x90, 0x26, 0x94};
    memcpy(b + 16, a4, 12);
    assert_int_equal(ns_proxy_parse(b, 28, &h, &why), NS_OK);
    assert_string_equal(h.src, "198.51.100.9");
    assert_int_equal(h.src_port, 8080);
    assert_int_equal(h.header_len, 28);
    for (size_t n = 0; n < 28; n++)
        assert_int_equal(ns_proxy_parse(b, n, &h, &why), NS_EAGAIN);
    b[12] = 0x20; /* LOCAL: address ignored */
    assert_int_equal(ns_proxy_parse(b, 28, &h, &why), NS_OK);
    assert_false(h.has_addr);
    b[12] = 0x22; /* command 2 */
    assert_int_equal(ns_proxy_parse(b, 28, &h, &why), NS_EINVAL);
    b[12] = 0x11; /* version 1 in a v2 header */
    assert_int_equal(ns_proxy_parse(b, 28, &h, &why), NS_EINVAL);
    b[12] = 0x21;
    b[15] = 8; /* INET needs 12 */
    assert_int_equal(ns_proxy_parse(b, 24, &h, &why), NS_EINVAL);
    b[15] = 16; /* 12 + a TLV claiming 2 bytes but having 1 */
    b[28] = 0x04;
    b[29] = 0;
    b[30] = 2;
    b[31] = 0;
    assert_int_equal(ns_proxy_parse(b, 32, &h, &why), NS_EINVAL);
    b[30] = 1; /* now framed */
    assert_int_equal(ns_proxy_parse(b, 32, &h, &why), NS_OK);
    b[13] = 0x51; /* family 5 */
    assert_int_equal(ns_proxy_parse(b, 32, &h, &why), NS_EINVAL);
    b[13] = 0x01; /* UNSPEC: the real peer stays */
    assert_int_equal(ns_proxy_parse(b, 32, &h, &why), NS_OK);
    assert_false(h.has_addr);
}

static bool allows(const ns_proxy_acl_t *acl, const char *ip)
{
    struct sockaddr_storage ss = {0};
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        inet_pton(AF_INET6, ip, &s6->sin6_addr);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        inet_pton(AF_INET, ip, &s4->sin_addr);
    }
    return ns_proxy_acl_allows(acl, (struct sockaddr *)&ss);
}

static void trusted_list(void **state)
{
    (void)state;
    ns_proxy_acl_t acl;
    char err[128];
    assert_int_equal(ns_proxy_acl_parse("", &acl, err, sizeof err), NS_OK);
    assert_false(allows(&acl, "127.0.0.1"));
    assert_int_equal(
        ns_proxy_acl_parse("10.1.0.0/16, 192.0.2.7,2001:db8::/32", &acl, err, sizeof err), NS_OK);
    assert_true(allows(&acl, "10.1.255.3"));
    assert_false(allows(&acl, "10.2.0.1"));
    assert_true(allows(&acl, "192.0.2.7"));
    assert_false(allows(&acl, "192.0.2.8"));
    assert_true(allows(&acl, "::ffff:10.1.2.3")); /* v4-mapped */
    assert_true(allows(&acl, "2001:db8:ffff::1"));
    assert_false(allows(&acl, "2001:db9::1"));
    assert_int_equal(ns_proxy_acl_parse("*", &acl, err, sizeof err), NS_OK);
    assert_true(allows(&acl, "203.0.113.1"));
    assert_int_equal(ns_proxy_acl_parse("10.0.0.0/33", &acl, err, sizeof err), NS_EINVAL);
    assert_non_null(strstr(err, "10.0.0.0/33"));
    assert_int_equal(ns_proxy_acl_parse("lb.example", &acl, err, sizeof err), NS_EINVAL);
    assert_int_equal(ns_proxy_acl_parse("10.0.0.1/+8", &acl, err, sizeof err), NS_EINVAL);
    assert_int_equal(ns_proxy_acl_parse("10.0.0.0/0", &acl, err, sizeof err), NS_OK);
    assert_true(allows(&acl, "8.8.8.8"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(detect),
        cmocka_unit_test(v1_headers),
        cmocka_unit_test(v2_headers),
        cmocka_unit_test(trusted_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
