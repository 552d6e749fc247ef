/* json_legacy.c - deriving a route's legacy JSON form from its standard form
 * (include/ns/body.h). For most topics the two differ only in the keys of
 * brokerAddrs: quoted in the standard form ("0":), bare in the legacy one
 * (0:). The writer stores such routes once and the lookup derives the legacy
 * form; anything this scanner does not recognise is refused, and the writer
 * only omits a legacy form after comparing the derivation with the real one. */
#include <stdbool.h>
#include <string.h>

#include "ns/body.h"
#include "ns/err.h"

/* brokerAddrs is the first member of a BrokerData object in our encoding;
 * anchoring on the `{` skips the many quotes in between. */
static const char ADDRS_KEY[] = "{\"brokerAddrs\":{";
#define ADDRS_KEY_LEN (sizeof ADDRS_KEY - 1)

/* Offset of the next `{"brokerAddrs":{` at or after i, or n. */
static size_t next_addrs(const uint8_t *s, size_t n, size_t i)
{
    while (i + ADDRS_KEY_LEN <= n) {
        const uint8_t *q = memchr(s + i, '{', n - i - ADDRS_KEY_LEN + 1);
        if (q == NULL)
            break;
        i = (size_t)(q - s);
        if (memcmp(q, ADDRS_KEY, ADDRS_KEY_LEN) == 0)
            return i;
        i++;
    }
    return n;
}

/* Copies the members of one brokerAddrs object, s[*i] being just after its
 * `{`, up to and including its `}`, with the keys unquoted. *removed counts
 * the quotes dropped before offset mark. */
static int copy_addrs(ns_buf_t *out, const uint8_t *s, size_t n, size_t *i, size_t mark,
                      size_t *removed)
{
    size_t p = *i;
    while (p < n && s[p] != '}') {
        size_t d = p + 1; /* key: "-?digits": */
        if (s[p] != '"')
            return NS_EINVAL;
        if (d < n && s[d] == '-')
            d++;
        size_t digits = d;
        while (d < n && s[d] >= '0' && s[d] <= '9')
            d++;
        if (d == digits || d + 2 >= n || s[d] != '"' || s[d + 1] != ':' || s[d + 2] != '"')
            return NS_EINVAL;
        if (ns_buf_append(out, s + p + 1, d - p - 1) != NS_OK ||
            ns_buf_append(out, ":", 1) != NS_OK)
            return NS_ENOMEM;
        *removed += (p < mark) + (d < mark);
        size_t v = d + 3; /* value: a JSON string */
        while (v < n && s[v] != '"')
            v += s[v] == '\\' ? 2 : 1;
        if (v >= n)
            return NS_EINVAL;
        if (ns_buf_append(out, s + d + 2, v + 1 - (d + 2)) != NS_OK)
            return NS_ENOMEM;
        p = v + 1;
        if (p < n && s[p] == ',') {
            if (p + 1 >= n || s[p + 1] != '"')
                return NS_EINVAL;
            if (ns_buf_append(out, ",", 1) != NS_OK)
                return NS_ENOMEM;
            p++;
        }
    }
    if (p >= n)
        return NS_EINVAL;
    if (ns_buf_append(out, "}", 1) != NS_OK)
        return NS_ENOMEM;
    *i = p + 1;
    return NS_OK;
}

int ns_json_route_legacy(ns_buf_t *out, const uint8_t *std, size_t len, size_t std_insert,
                         size_t *legacy_insert)
{
    size_t start = out->len, i = 0, removed = 0;
    int rc = NS_OK;
    while (rc == NS_OK && i < len) {
        size_t hit = next_addrs(std, len, i);
        size_t upto = hit < len ? hit + ADDRS_KEY_LEN : len;
        if (ns_buf_append(out, std + i, upto - i) != NS_OK)
            rc = NS_ENOMEM;
        i = upto;
        if (rc == NS_OK && hit < len)
            rc = copy_addrs(out, std, len, &i, std_insert, &removed);
    }
    if (rc != NS_OK) {
        if (out->data != NULL) {
            out->len = start;
            out->data[start] = 0;
        }
        return rc;
    }
    *legacy_insert = std_insert - removed;
    return NS_OK;
}

/* True when s holds no byte of 0x80 or above: such a string is written the
 * same in both forms (only non-ASCII text is escaped in the standard one). */
static bool ascii(const char *s)
{
    if (s == NULL)
        return true;
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

bool ns_json_route_legacy_by_parts(const ns_route_t *r)
{
    if (r->n_filters > 0 || r->n_mappings > 0 || !ascii(r->order_topic_conf))
        return false;
    for (size_t i = 0; i < r->n_queues; i++)
        if (!ascii(r->queues[i].broker_name))
            return false;
    return true;
}
