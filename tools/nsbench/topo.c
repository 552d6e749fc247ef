/* topo.c - the benchmark topology, request frames and the fast response scan
 * (nsbench.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/sign.h"
#include "nsbench.h"
#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/remoting.h"

/* ---- random numbers ---- */

void rng_seed(rng_t *r, uint64_t seed)
{
    r->s = seed ^ 0x9E3779B97F4A7C15ull;
    if (r->s == 0)
        r->s = 1;
}

/* splitmix64 */
uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rng_unit(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- distributions ---- */

int dist_init(dist_t *d, uint32_t n, bool zipf, double s, rng_t *r)
{
    memset(d, 0, sizeof *d);
    d->n = n ? n : 1;
    d->zipf = zipf;
    if (!zipf)
        return NS_OK;
    d->cdf = malloc(d->n * sizeof *d->cdf);
    d->perm = malloc(d->n * sizeof *d->perm);
    if (d->cdf == NULL || d->perm == NULL) {
        dist_free(d);
        return NS_ENOMEM;
    }
    double acc = 0;
    for (uint32_t i = 0; i < d->n; i++) {
        acc += 1.0 / pow((double)(i + 1), s);
        d->cdf[i] = acc;
    }
    for (uint32_t i = 0; i < d->n; i++)
        d->cdf[i] /= acc;
    /* ranks -> topics: a seeded shuffle, so the hot topics are spread over
     * brokers and over the key space */
    for (uint32_t i = 0; i < d->n; i++)
        d->perm[i] = i;
    for (uint32_t i = d->n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(rng_next(r) % (i + 1));
        uint32_t t = d->perm[i];
        d->perm[i] = d->perm[j];
        d->perm[j] = t;
    }
    return NS_OK;
}

uint32_t dist_next(const dist_t *d, rng_t *r)
{
    if (!d->zipf)
        return (uint32_t)(rng_next(r) % d->n);
    double u = rng_unit(r);
    uint32_t lo = 0, hi = d->n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return d->perm[lo];
}

void dist_free(dist_t *d)
{
    free(d->cdf);
    free(d->perm);
    d->cdf = NULL;
    d->perm = NULL;
}

/* ---- names and placement ---- */

void topo_topic_name(char *buf, size_t n, uint32_t topic)
{
    snprintf(buf, n, "BenchTopic-%07u", topic);
}

void topo_broker_name(char *buf, size_t n, uint32_t broker, bool reg)
{
    if (reg)
        snprintf(buf, n, "bench-regbroker-%03u", broker);
    else
        snprintf(buf, n, "bench-broker-%05u", broker);
}

void topo_broker_addr(char *buf, size_t n, uint32_t broker, bool reg)
{
    snprintf(buf, n, "127.0.0.1:%u", (reg ? 40000u : 20000u) + broker);
}

uint32_t topo_primary(uint32_t topic, uint32_t n_brokers)
{
    return topic % n_brokers;
}

uint32_t topo_secondary(uint32_t topic, uint32_t n_brokers)
{
    if (n_brokers < 2 || (topic / n_brokers) % 2 == 0)
        return UINT32_MAX;
    uint32_t off = 1 + (topic / n_brokers / 2) % (n_brokers - 1);
    return (topic % n_brokers + off) % n_brokers;
}

int topo_broker_topics(uint32_t n_topics, uint32_t n_brokers, uint32_t ***lists_out,
                       uint32_t **counts_out)
{
    uint32_t **lists = calloc(n_brokers ? n_brokers : 1, sizeof *lists);
    uint32_t *counts = calloc(n_brokers ? n_brokers : 1, sizeof *counts);
    uint32_t *fill = calloc(n_brokers ? n_brokers : 1, sizeof *fill);
    int rc = NS_ENOMEM;
    if (lists == NULL || counts == NULL || fill == NULL)
        goto fail;
    for (uint32_t t = 0; t < n_topics; t++) {
        counts[topo_primary(t, n_brokers)]++;
        uint32_t s = topo_secondary(t, n_brokers);
        if (s != UINT32_MAX)
            counts[s]++;
    }
    for (uint32_t b = 0; b < n_brokers; b++)
        if ((lists[b] = malloc((counts[b] ? counts[b] : 1) * sizeof **lists)) == NULL)
            goto fail;
    for (uint32_t t = 0; t < n_topics; t++) {
        uint32_t p = topo_primary(t, n_brokers), s = topo_secondary(t, n_brokers);
        lists[p][fill[p]++] = t;
        if (s != UINT32_MAX)
            lists[s][fill[s]++] = t;
    }
    free(fill);
    *lists_out = lists;
    *counts_out = counts;
    return NS_OK;
fail:
    free(fill);
    topo_lists_free(lists, counts, n_brokers);
    return rc;
}

void topo_lists_free(uint32_t **lists, uint32_t *counts, uint32_t n_brokers)
{
    if (lists)
        for (uint32_t b = 0; b < n_brokers; b++)
            free(lists[b]);
    free(lists);
    free(counts);
}

/* ---- bodies and frames ---- */

static bool topo_plain; /* topo_set_plain_bodies */

void topo_set_plain_bodies(bool plain)
{
    topo_plain = plain;
}

int topo_regbody(ns_buf_t *out, const uint32_t *topics, size_t n, int32_t queue_nums,
                 const ns_dataversion_t *dv)
{
    ns_regbody_t b;
    memset(&b, 0, sizeof b);
    b.data_version = *dv;
    b.has_filter_server_list = true;
    b.topics = calloc(n ? n : 1, sizeof *b.topics);
    char *names = malloc((n ? n : 1) * 24);
    int rc = NS_ENOMEM;
    if (b.topics == NULL || names == NULL)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        char *name = names + i * 24;
        topo_topic_name(name, 24, topics[i]);
        b.topics[i].topic_name = name;
        b.topics[i].read_queue_nums = queue_nums;
        b.topics[i].write_queue_nums = queue_nums;
        b.topics[i].perm = NS_PERM_READ | NS_PERM_WRITE;
        b.topics[i].topic_sys_flag = 0;
    }
    b.n_topics = n;
    rc = topo_plain ? ns_regbody_encode_json(out, &b) : ns_regbody_encode_compressed(out, &b, true);
cleanup:
    free(b.topics);
    free(names);
    return rc;
}

/* Credentials every request is signed with (topo_set_credentials). */
static const char *topo_ak, *topo_sk;
static ns_buf_t topo_sign_scratch;

void topo_set_credentials(const char *access_key, const char *secret_key)
{
    topo_ak = access_key;
    topo_sk = secret_key;
}

/* Encodes c, signed as the Java AclClientRPCHook signs when credentials are
 * set (include/ns/sign.h). */
static int topo_encode(ns_buf_t *out, const ns_cmd_t *c)
{
    if (topo_ak == NULL)
        return ns_remoting_encode(out, c);
    ns_signed_t s;
    int rc = ns_sign_request(c, topo_ak, topo_sk, &topo_sign_scratch, &s);
    if (rc == NS_OK) {
        rc = ns_remoting_encode(out, &s.cmd);
        ns_signed_free(&s);
    }
    return rc;
}

int topo_register_frame(ns_buf_t *out, uint32_t broker, bool reg, const ns_buf_t *body,
                        int32_t opaque)
{
    char name[48], addr[48], ha[48], crc[16];
    ns_ext_field_t ext[9];
    topo_broker_name(name, sizeof name, broker, reg);
    topo_broker_addr(addr, sizeof addr, broker, reg);
    snprintf(ha, sizeof ha, "127.0.0.1:%u", (reg ? 41000u : 30000u) + broker);
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body->data, body->len));
    ext[0] = ns_ext_field("brokerName", name);
    ext[1] = ns_ext_field("brokerAddr", addr);
    ext[2] = ns_ext_field("clusterName", TOPO_CLUSTER);
    ext[3] = ns_ext_field("haServerAddr", ha);
    ext[4] = ns_ext_field("brokerId", "0");
    ext[5] = ns_ext_field("enableActingMaster", "false");
    ext[6] = ns_ext_field("heartbeatTimeoutMillis", "600000");
    ext[7] = ns_ext_field("compressed", topo_plain ? "false" : "true");
    ext[8] = ns_ext_field("bodyCrc32", crc);
    ns_cmd_t c;
    ns_cmd_request_init(&c, NS_REQ_REGISTER_BROKER, ext, 9);
    c.opaque = opaque;
    c.body = body->data;
    c.body_len = body->len;
    return topo_encode(out, &c);
}

int topo_heartbeat_frame(ns_buf_t *out, uint32_t broker, bool reg, int32_t opaque, bool oneway)
{
    char name[48], addr[48];
    ns_ext_field_t ext[4];
    topo_broker_name(name, sizeof name, broker, reg);
    topo_broker_addr(addr, sizeof addr, broker, reg);
    ext[0] = ns_ext_field("clusterName", TOPO_CLUSTER);
    ext[1] = ns_ext_field("brokerAddr", addr);
    ext[2] = ns_ext_field("brokerName", name);
    ext[3] = ns_ext_field("brokerId", "0");
    ns_cmd_t c;
    ns_cmd_request_init(&c, NS_REQ_BROKER_HEARTBEAT, ext, 4);
    c.opaque = opaque;
    c.flag = oneway ? NS_FLAG_ONEWAY : 0;
    return topo_encode(out, &c);
}

static int route_frame_slow(ns_buf_t *out, const char *topic, size_t topic_len, int32_t opaque)
{
    ns_ext_field_t ext = {"topic", 5, topic, topic_len};
    ns_cmd_t c;
    ns_cmd_request_init(&c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, &ext, 1);
    c.opaque = opaque;
    return topo_encode(out, &c);
}

static const char ROUTE_HEAD[] = "{\"code\":105,\"extFields\":{\"topic\":\"";
static const char ROUTE_MID[] = "\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":";
static const char ROUTE_TAIL[] = ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";

int topo_route_frame(ns_buf_t *out, const char *topic, size_t topic_len, int32_t opaque)
{
    if (topo_ak) /* signed: one HMAC per request, as a Java client does */
        return route_frame_slow(out, topic, topic_len, opaque);
    for (size_t i = 0; i < topic_len; i++) {
        unsigned char ch = (unsigned char)topic[i];
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
            return route_frame_slow(out, topic, topic_len, opaque);
    }
    char num[16];
    int nl = snprintf(num, sizeof num, "%d", (int)opaque);
    size_t hlen = (sizeof ROUTE_HEAD - 1) + topic_len + (sizeof ROUTE_MID - 1) + (size_t)nl +
                  (sizeof ROUTE_TAIL - 1);
    if (ns_buf_reserve(out, 8 + hlen + 1) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = out->data + out->len;
    ns_be32_write(p, (uint32_t)(4 + hlen));
    ns_be32_write(p + 4, (uint32_t)hlen); /* type JSON (0) << 24 */
    p += 8;
    memcpy(p, ROUTE_HEAD, sizeof ROUTE_HEAD - 1);
    p += sizeof ROUTE_HEAD - 1;
    memcpy(p, topic, topic_len);
    p += topic_len;
    memcpy(p, ROUTE_MID, sizeof ROUTE_MID - 1);
    p += sizeof ROUTE_MID - 1;
    memcpy(p, num, (size_t)nl);
    p += nl;
    memcpy(p, ROUTE_TAIL, sizeof ROUTE_TAIL - 1);
    out->len += 8 + hlen;
    out->data[out->len] = 0;
    return NS_OK;
}

int topo_selftest(void)
{
    ns_buf_t a = NS_BUF_INIT, b = NS_BUF_INIT;
    int rc = NS_OK;
    const int32_t ops[] = {0, 1, 42, 2147483647};
    char topic[32];
    topo_topic_name(topic, sizeof topic, 123);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && rc == NS_OK; i++) {
        ns_buf_reset(&a);
        ns_buf_reset(&b);
        rc = topo_route_frame(&a, topic, strlen(topic), ops[i]);
        rc = rc ? rc : route_frame_slow(&b, topic, strlen(topic), ops[i]);
        if (rc == NS_OK && (a.len != b.len || memcmp(a.data, b.data, a.len) != 0))
            rc = NS_EINTERNAL;
    }
    ns_buf_free(&a);
    ns_buf_free(&b);
    return rc;
}

/* ---- response scan ---- */

/* Integer after "key": at the top of a JSON header (see frame_scan). */
static bool scan_int(const uint8_t *h, size_t n, const char *key, size_t klen, int32_t *out)
{
    const uint8_t *p = memmem(h, n, key, klen);
    if (p == NULL)
        return false;
    p += klen;
    const uint8_t *end = h + n;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return false;
    int64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v > 2147483648ll)
            return false;
        p++;
    }
    if (neg)
        v = -v;
    if (v > INT32_MAX || v < INT32_MIN)
        return false;
    *out = (int32_t)v;
    return true;
}

/* JSON headers: the first "code": and "opaque": are the top-level members
 * in every header a NameServer writes (Java sorts keys: code comes first;
 * extFields values and remarks are JSON strings, so an embedded quote is
 * escaped and cannot complete a match; an integer that fails to parse sends
 * us to the full decoder). Binary headers: fixed offsets. */
int frame_scan(const uint8_t *f, size_t len, int32_t *code, int32_t *opaque, int32_t *flag,
               const uint8_t **body, size_t *body_len)
{
    if (len < 8)
        return NS_EINVAL;
    uint32_t hw = ns_be32_read(f + 4);
    uint32_t type = hw >> 24, hlen = hw & 0xFFFFFFu;
    if (hlen > len - 8)
        return NS_EINVAL;
    const uint8_t *h = f + 8;
    *body = f + 8 + hlen;
    *body_len = len - 8 - hlen;
    if (type == NS_SERIALIZE_ROCKETMQ && hlen >= 13) {
        *code = (int16_t)ns_be16_read(h);
        *opaque = (int32_t)ns_be32_read(h + 5);
        *flag = (int32_t)ns_be32_read(h + 9);
        return NS_OK;
    }
    if (type == NS_SERIALIZE_JSON && scan_int(h, hlen, "\"code\":", 7, code) &&
        scan_int(h, hlen, "\"opaque\":", 9, opaque)) {
        if (!scan_int(h, hlen, "\"flag\":", 7, flag))
            *flag = 0;
        return NS_OK;
    }
    static ns_cmd_msg_t msg;
    static bool init;
    if (!init) {
        ns_cmd_msg_init(&msg);
        init = true;
    }
    if (ns_remoting_decode(f, len, &msg) != NS_OK)
        return NS_EINVAL;
    *code = msg.cmd.code;
    *opaque = msg.cmd.opaque;
    *flag = msg.cmd.flag;
    *body = msg.cmd.body;
    *body_len = msg.cmd.body_len;
    return NS_OK;
}
