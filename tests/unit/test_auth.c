/* test_auth.c - request signatures (src/proto/sign.c) and the pure policy
 * (src/daemon/core/auth_policy.c).
 *
 * Expected signatures were computed independently of our code, from the
 * Java algorithm (AclClientRPCHook + AclUtils.combineRequestContent +
 * AclSigner): the content string written out by hand (values in TreeMap
 * key order, Signature skipped, body appended), then
 *     printf '%s' CONTENT | openssl dgst -sha1 -hmac SECRET -binary | base64
 * e.g. printf 'rocketmq2TopicTest' | openssl dgst -sha1 -hmac 12345678 -binary | base64
 * Cases A-C were also checked against the real AclClientRPCHook of
 * rocketmq-client 5.3.3 (interop scenario 11_auth, nsinterop.SignVectors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ns/err.h"
#include "ns/seal.h"
#include "ns/sign.h"
#include "nstest.h"
#include "src/daemon/core/auth.h"

static void sig_of(const ns_ext_field_t *ext, size_t n, const char *body, const char *secret,
                   char out[NS_SIGN_B64_LEN + 1])
{
    ns_cmd_t cmd;
    ns_buf_t scratch = NS_BUF_INIT;
    ns_cmd_request_init(&cmd, 105, ext, n);
    cmd.body = (const uint8_t *)body;
    cmd.body_len = body ? strlen(body) : 0;
    assert_int_equal(ns_sign_compute(&cmd, secret, &scratch, out), NS_OK);
    ns_buf_free(&scratch);
}

/* The signature of a request with extFields kv ("k1", "v1", ..., NULL; at
 * most 8 pairs) and body (may be NULL) under secret must be want. */
typedef struct {
    const char *name;
    const char *const *kv;
    const char *body;
    const char *secret, *want;
} sig_case_t;

/* A: a route lookup as a Java client signs it. */
static const char *const kv_a[] = {"topic", "TopicTest", "AccessKey", "rocketmq2", NULL};
/* B: upper case sorts before lower case, SecurityToken is signed, an
 * incoming Signature is not. Content "aktokDefaultCluster". */
static const char *const kv_b[] = {
    "clusterName", "DefaultCluster", "Signature", "whatever", "SecurityToken",
    "tok",         "AccessKey",      "ak",        NULL};
/* C: a registration: values in key order, then the body. */
static const char *const kv_c[] = {"clusterName", "DefaultCluster", "brokerName", "broker-a",
                                   "brokerAddr",  "10.0.0.1:10911", "AccessKey",  "ak1",
                                   NULL};
/* D: Java orders keys by UTF-16 code units: U+1F600 (D83D DE00) before
 * U+E000, the reverse of UTF-8 byte order. Content "BA". */
static const char *const kv_d[] = {"\xee\x80\x80", "A", "\xf0\x9f\x98\x80", "B", NULL};
/* E: the secret is used as its UTF-8 bytes. */
static const char *const kv_e[] = {"AccessKey", "ak1", NULL};

static const sig_case_t sig_cases[] = {
    {"A route lookup", kv_a, NULL, "12345678", "GeeGoP9mRvDhoVp4PD5omX0prgE="},
    {"B token, signature skipped", kv_b, NULL, "sk-secret", "HrKLPreAKqd/2zvbOIHCBZuiIk0="},
    {"C body appended", kv_c, "{\"topicConfigTable\":{}}", "brokersecret",
     "X4NV3tvrnlxil3uP0cIUdElLNCE="},
    {"D UTF-16 key order", kv_d, NULL, "k123456", "O+JTtudaCTOT2J1AlkeisZpeaj8="},
    {"E UTF-8 secret", kv_e, NULL,
     "s\xe2\x82\xac"
     "cret",
     "gYNGSsqW1bs1iHdGPeUnncyv96A="},
};

static void test_java_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sig_cases / sizeof sig_cases[0]; i++) {
        const sig_case_t *k = &sig_cases[i];
        ns_ext_field_t ext[8];
        size_t n = 0;
        for (; k->kv[2 * n] && n < 8; n++)
            ext[n] = ns_ext_field(k->kv[2 * n], k->kv[2 * n + 1]);
        char sig[NS_SIGN_B64_LEN + 1];
        sig_of(ext, n, k->body, k->secret, sig);
        if (strcmp(sig, k->want) != 0)
            fail_msg("case %s: signature %s, expected %s", k->name, sig, k->want);
    }
}

/* The client's signing adds AccessKey and a Signature that verifies, and
 * replaces stale ones. */
static void test_sign_request_roundtrip(void **state)
{
    ns_ext_field_t ext[] = {ns_ext_field("topic", "TopicTest"), ns_ext_field("Signature", "stale"),
                            ns_ext_field("AccessKey", "old")};
    ns_cmd_t cmd;
    ns_signed_t s;
    ns_buf_t scratch = NS_BUF_INIT;
    ns_cmd_request_init(&cmd, 105, ext, 3);
    assert_int_equal(ns_sign_request(&cmd, "rocketmq2", "12345678", &scratch, &s), NS_OK);
    assert_int_equal(s.cmd.n_ext, 3);
    assert_string_equal(ns_cmd_ext_get(&s.cmd, "AccessKey"), "rocketmq2");
    assert_string_equal(ns_cmd_ext_get(&s.cmd, "Signature"), "GeeGoP9mRvDhoVp4PD5omX0prgE=");
    char want[NS_SIGN_B64_LEN + 1];
    assert_int_equal(ns_sign_compute(&s.cmd, "12345678", &scratch, want), NS_OK);
    assert_true(ns_sign_equal(want, s.sig, strlen(s.sig)));
    ns_signed_free(&s);
    ns_buf_free(&scratch);
}

static void test_equal(void **state)
{
    const char *w = "GeeGoP9mRvDhoVp4PD5omX0prgE=";
    assert_true(ns_sign_equal(w, w, 28));
    assert_false(ns_sign_equal(w, "GeeGoP9mRvDhoVp4PD5omX0prgF=", 28));
    assert_false(ns_sign_equal(w, w, 27));
    assert_false(ns_sign_equal(w, "GeeGoP9mRvDhoVp4PD5omX0prgE==", 29));
    assert_false(ns_sign_equal(w, "", 0));
}

static void test_roles(void **state)
{
    assert_int_equal(ns_auth_required_role(NS_AUTH_OFF, NS_NEED_ADMIN), 0);
    assert_int_equal(ns_auth_required_role(NS_AUTH_OFF, NS_NEED_USERS), NS_ROLE_ADMIN);
    assert_int_equal(ns_auth_required_role(NS_AUTH_WRITES, NS_NEED_READ), 0);
    assert_int_equal(ns_auth_required_role(NS_AUTH_ALL, NS_NEED_READ), NS_ROLE_CLIENT);
    assert_int_equal(ns_auth_required_role(NS_AUTH_WRITES, NS_NEED_BROKER_NAMED), NS_ROLE_BROKER);
    assert_int_equal(ns_auth_required_role(NS_AUTH_WRITES, NS_NEED_ADMIN), NS_ROLE_ADMIN);
    assert_true(ns_auth_role_allows(NS_ROLE_CLIENT, NS_NEED_READ));
    assert_false(ns_auth_role_allows(NS_ROLE_CLIENT, NS_NEED_BROKER));
    assert_true(ns_auth_role_allows(NS_ROLE_BROKER, NS_NEED_BROKER_NAMED));
    assert_false(ns_auth_role_allows(NS_ROLE_BROKER, NS_NEED_ADMIN));
    assert_true(ns_auth_role_allows(NS_ROLE_ADMIN, NS_NEED_USERS));
    ns_auth_mode_t m;
    assert_int_equal(ns_auth_mode_parse("writes", &m), NS_OK);
    assert_int_equal(m, NS_AUTH_WRITES);
    assert_int_equal(ns_auth_mode_parse("ALL", &m), NS_EINVAL);
}

static void test_addresses(void **state)
{
    static const struct {
        const char *allow, *ip;
        bool want;
    } addrs[] = {
        {"", "10.1.2.3", true},
        {"10.0.0.0/8", "10.1.2.3", true},
        {"10.0.0.0/8", "11.1.2.3", false},
        {"192.168.1.5, 127.0.0.1", "127.0.0.1", true},
        {"192.168.1.5", "192.168.1.6", false},
        {"10.0.0.0/8", "::ffff:10.9.9.9", true},
        {"fd00::/8", "fd12::1", true},
        {"fd00::/8", "fe80::1", false},
        {"::1", "127.0.0.1", false},
        {"*", "203.0.113.9", true},
        {"10.0.0.0/33", "10.0.0.1", false},
        {"garbage", "10.0.0.1", false},
        {"0.0.0.0/0", "8.8.8.8", true},
    };
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++)
        if (ns_auth_addr_allowed(addrs[i].allow, addrs[i].ip) != addrs[i].want)
            fail_msg("allow '%s', %s: expected %d", addrs[i].allow, addrs[i].ip, addrs[i].want);
    char ip[48];
    ns_auth_peer_ip("127.0.0.1:5555", ip, sizeof ip);
    assert_string_equal(ip, "127.0.0.1");
    ns_auth_peer_ip("::1:5555", ip, sizeof ip);
    assert_string_equal(ip, "::1");
    assert_true(ns_auth_is_loopback("127.0.0.2"));
    assert_true(ns_auth_is_loopback("::1"));
    assert_false(ns_auth_is_loopback("10.0.0.1"));
    /* the host a broker address names, against a peer's IP */
    static const struct {
        const char *ip, *addr;
        bool want;
    } hosts[] = {
        {"127.0.0.1", "127.0.0.1:10911", true},
        {"127.0.0.1", "127.0.0.2:10911", false},
        {"10.1.2.3", "10.1.2.3:1", true},
        {"::ffff:10.1.2.3", "10.1.2.3:10911", true}, /* a v4 peer on a v6 socket */
        {"2001:db8::7", "2001:db8::7:10911", true},
        {"2001:db8::7", "[2001:db8::7]:10911", true},
        {"2001:db8::7", "2001:db8::8:10911", false},
        {"127.0.0.1", "localhost:10911", false}, /* names are not resolved */
        {"127.0.0.1", "127.0.0.1", false},       /* no port: not a broker address */
        {"127.0.0.1", "", false},
    };
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
        if (ns_auth_same_host(hosts[i].ip, hosts[i].addr) != hosts[i].want)
            fail_msg("peer %s, broker %s: expected %d", hosts[i].ip, hosts[i].addr, hosts[i].want);
}

static void test_broker_grants(void **state)
{
    static const struct {
        const char *grants, *cluster, *name; /* cluster, name: NULL when not named */
        bool want;
    } cases[] = {
        {"broker-a", "C1", "broker-a", true},
        {"broker-a", "C1", "broker-b", false},
        {"C1/broker-a", "C1", "broker-a", true},
        {"C1/broker-a", "C2", "broker-a", false},
        {"x, C1/*", "C1", "anything", true},
        {"C1/*", NULL, "anything", true}, /* no cluster named */
        {"C1/b", NULL, "b", true},
        {"C1/b", NULL, "c", false},
        {"*", NULL, "b", true},
        {"", "C1", "b", false},
        {"broker-a", "C1", NULL, false},
        {"broker-ab", "C1", "broker-a", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (ns_auth_broker_granted(cases[i].grants, cases[i].cluster, cases[i].name) !=
            cases[i].want)
            fail_msg("grants '%s', %s/%s: expected %d", cases[i].grants,
                     cases[i].cluster ? cases[i].cluster : "-", cases[i].name ? cases[i].name : "-",
                     cases[i].want);
}

static void test_penalty(void **state)
{
    assert_int_equal(ns_auth_penalty_ms(1, 5000), 0);
    assert_int_equal(ns_auth_penalty_ms(3, 5000), 0);
    assert_int_equal(ns_auth_penalty_ms(4, 5000), 100);
    assert_int_equal(ns_auth_penalty_ms(5, 5000), 200);
    assert_int_equal(ns_auth_penalty_ms(9, 5000), 3200);
    assert_int_equal(ns_auth_penalty_ms(10, 5000), 5000);
    assert_int_equal(ns_auth_penalty_ms(1000000, 5000), 5000);
    assert_int_equal(ns_auth_penalty_ms(50, 0), 0);
}

/* Secrets sealed at rest: round trip, bound to the access key and the
 * key, tampering detected, key files read strictly. */
static void test_seal(void **state)
{
    uint8_t key[NS_SEAL_KEY_BYTES], other[NS_SEAL_KEY_BYTES];
    for (int i = 0; i < NS_SEAL_KEY_BYTES; i++) {
        key[i] = (uint8_t)i;
        other[i] = (uint8_t)(i + 1);
    }
    char *sealed = NULL, *plain = NULL, *again = NULL;
    assert_int_equal(ns_seal(key, "cli1", "clientsecret", &sealed), NS_OK);
    assert_true(ns_sealed(sealed));
    assert_null(strstr(sealed, "clientsecret"));
    assert_int_equal(ns_unseal(key, "cli1", sealed, &plain), NS_OK);
    assert_string_equal(plain, "clientsecret");
    free(plain);
    assert_int_equal(ns_seal(key, "cli1", "clientsecret", &again), NS_OK);
    assert_string_not_equal(sealed, again); /* a fresh nonce each time */
    free(again);
    assert_int_equal(ns_unseal(key, "cli2", sealed, &plain), NS_EINVAL);
    assert_int_equal(ns_unseal(other, "cli1", sealed, &plain), NS_EINVAL);
    size_t n = strlen(sealed);
    sealed[n - 6] = sealed[n - 6] == 'A' ? 'B' : 'A';
    assert_int_equal(ns_unseal(key, "cli1", sealed, &plain), NS_EINVAL);
    assert_int_equal(ns_unseal(key, "cli1", "enc1:", &plain), NS_EINVAL);
    assert_int_equal(ns_unseal(key, "cli1", "enc1:!!!!", &plain), NS_EINVAL);
    assert_int_equal(ns_unseal(key, "cli1", "clientsecret", &plain), NS_EINVAL);
    free(sealed);

    char *dir = nstest_tmpdir("seal"), path[4200], err[256];
    uint8_t k2[NS_SEAL_KEY_BYTES];
    snprintf(path, sizeof path, "%s/key", dir);
    FILE *f = fopen(path, "w");
    fputs("  000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F\n", f);
    fclose(f);
    assert_int_equal(ns_seal_key_load(path, k2, err, sizeof err), NS_OK);
    assert_memory_equal(k2, key, NS_SEAL_KEY_BYTES);
    f = fopen(path, "w");
    fputs("000102030405060708090a0b0c0d0e0f1011121314151617", f);
    fclose(f);
    assert_int_equal(ns_seal_key_load(path, k2, err, sizeof err), NS_EINVAL);
    f = fopen(path, "w");
    fputs("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00", f);
    fclose(f);
    assert_int_equal(ns_seal_key_load(path, k2, err, sizeof err), NS_EINVAL);
    snprintf(path, sizeof path, "%s/none", dir);
    assert_int_equal(ns_seal_key_load(path, k2, err, sizeof err), NS_EIO);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_vectors), cmocka_unit_test(test_sign_request_roundtrip),
        cmocka_unit_test(test_equal),        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_addresses),    cmocka_unit_test(test_broker_grants),
        cmocka_unit_test(test_penalty),      cmocka_unit_test(test_seal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
