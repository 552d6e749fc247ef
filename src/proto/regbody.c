/* regbody.c - RegisterBrokerBody decoding and bodyCrc32 (include/ns/body.h,
 * docs/protocol.md §4.3.12, §5). The body under construction is kept by
 * regbody_build.c; the encoders are in regbody_enc.c.
 *
 * Decoding accepts both encodings: the JSON RegisterBrokerBody (through
 * ns_fastjson_normalize() and cJSON) and the zlib-compressed binary form,
 * which is inflated lazily, field by field, so only the bytes the reader
 * needs are ever inflated and a claimed length never drives an allocation
 * larger than the data actually present.
 */
#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "ns/body.h"
#include "json_read.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/names.h"
#include "regbody_build.h"

/* Request versions (§1.8, §3.5, §5.2): below 37 the body is a bare
 * TopicConfigSerializeWrapper; from 413 (V5_0_0) the compressed form carries
 * the static-topic mapping section. */
#define VERSION_REGISTER_BODY 37
#define VERSION_MAPPINGS 413

#define INFLATE_CHUNK 65536

uint32_t ns_body_crc32(const uint8_t *p, size_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt k = n > UINT_MAX ? UINT_MAX : (uInt)n;
        crc = crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)(crc & 0x7FFFFFFFu);
}

/* ---- tolerant JSON value access (§4.4) ------------------------------------ */

/* *has_timestamp is left alone when o is absent. */
static int dataversion_from_json(const cJSON *o, ns_dataversion_t *dv, bool *has_timestamp)
{
    int rc;
    if (ns_jr_absent(o))
        return NS_OK;
    if (!cJSON_IsObject(o))
        return NS_EINVAL;
    if ((rc = ns_jr_i64(ns_jr_get(o, "counter"), &dv->counter)) != NS_OK ||
        (rc = ns_jr_i64(ns_jr_get(o, "stateVersion"), &dv->state_version)) != NS_OK)
        return rc;
    *has_timestamp = !ns_jr_absent(ns_jr_get(o, "timestamp"));
    return ns_jr_i64(ns_jr_get(o, "timestamp"), &dv->timestamp);
}

/* Reads a JSON array of strings into the filter-server list; absent ->
 * has_filter_server_list stays false. */
static int servers_from_json(ns_rbuild_t *bd, const cJSON *a)
{
    const cJSON *it = NULL;
    int rc = NS_OK;
    if (ns_jr_absent(a))
        return NS_OK;
    if (!cJSON_IsArray(a))
        return NS_EINVAL;
    bd->b->has_filter_server_list = true;
    cJSON_ArrayForEach(it, a)
    {
        char *s = NULL;
        if ((rc = ns_jr_str(it, &s)) != NS_OK)
            return rc;
        if (s != NULL && (rc = ns_rbuild_add_server(bd, s)) != NS_OK)
            return rc;
    }
    return NS_OK;
}

/* Reads one TopicQueueMappingInfo object into *m (heap strings). topic is the
 * map key it was stored under (JSON form) or NULL to use its own member. */
static int mapping_from_json(const cJSON *o, const char *topic, ns_mapping_info_t *m)
{
    const cJSON *ids = ns_jr_get(o, "currIdMap"), *it = NULL;
    ns_id_pair_t *pairs = NULL;
    size_t n = 0;
    char *t = NULL, *bname = NULL, *scope = NULL;
    int rc;

    memset(m, 0, sizeof *m);
    if ((rc = ns_jr_i32(ns_jr_get(o, "totalQueues"), &m->total_queues)) != NS_OK ||
        (rc = ns_jr_i64(ns_jr_get(o, "epoch"), &m->epoch)) != NS_OK ||
        (rc = ns_jr_bool(ns_jr_get(o, "dirty"), &m->dirty)) != NS_OK ||
        (rc = ns_jr_str(ns_jr_get(o, "bname"), &bname)) != NS_OK ||
        (rc = ns_jr_str(ns_jr_get(o, "scope"), &scope)) != NS_OK)
        goto cleanup;
    if (topic != NULL)
        t = strdup(topic);
    else if ((rc = ns_jr_str(ns_jr_get(o, "topic"), &t)) == NS_OK && t == NULL)
        rc = NS_EINVAL; /* Java cannot store a mapping without a topic */
    if (rc != NS_OK)
        goto cleanup;
    if (t == NULL) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    if (!ns_jr_absent(ids)) {
        if (!cJSON_IsObject(ids)) {
            rc = NS_EINVAL;
            goto cleanup;
        }
        size_t cap = (size_t)cJSON_GetArraySize(ids);
        if (cap > 0 && (pairs = calloc(cap, sizeof *pairs)) == NULL) {
            rc = NS_ENOMEM;
            goto cleanup;
        }
        cJSON_ArrayForEach(it, ids)
        {
            int64_t k = 0;
            int32_t v = 0;
            if (ns_jr_absent(it))
                continue;
            if (ns_parse_i64(it->string, strlen(it->string), &k) != NS_OK || k < INT32_MIN ||
                k > INT32_MAX || (rc = ns_jr_i32(it, &v)) != NS_OK) {
                rc = NS_EINVAL;
                goto cleanup;
            }
            pairs[n].logical = (int32_t)k;
            pairs[n].physical = v;
            n++;
        }
    }
    m->topic = t;
    m->bname = bname;
    m->scope = scope;
    m->curr_id_map = pairs;
    m->n_curr_id_map = n;
    t = bname = scope = NULL;
    pairs = NULL;

cleanup:
    free(t);
    free(bname);
    free(scope);
    free(pairs);
    return rc;
}

/* Parses a mapping and adds it; entries without a bname cannot be keyed by
 * broker and are skipped. */
static int add_mapping_json(ns_rbuild_t *bd, const cJSON *o, const char *topic)
{
    ns_mapping_info_t m;
    int rc;
    if (ns_jr_absent(o))
        return NS_OK;
    if (!cJSON_IsObject(o))
        return NS_EINVAL;
    if ((rc = mapping_from_json(o, topic, &m)) != NS_OK)
        return rc;
    if (m.bname == NULL) {
        ns_rbuild_mapping_free(&m);
        return NS_OK;
    }
    return ns_rbuild_add_mapping(bd, &m);
}

/* TopicConfigSerializeWrapper / TopicConfigAndMappingSerializeWrapper. */
static int wrapper_from_json(ns_rbuild_t *bd, const cJSON *w)
{
    const cJSON *table = NULL, *maps = NULL, *it = NULL;
    int rc;
    if (ns_jr_absent(w))
        return NS_OK;
    if (!cJSON_IsObject(w))
        return NS_EINVAL;
    bool has_ts = false;
    if ((rc = dataversion_from_json(ns_jr_get(w, "dataVersion"), &bd->b->data_version, &has_ts)) !=
        NS_OK)
        return rc;
    bd->b->dv_timestamp_absent = !has_ts;
    table = ns_jr_get(w, "topicConfigTable");
    if (!ns_jr_absent(table)) {
        if (!cJSON_IsObject(table))
            return NS_EINVAL;
        cJSON_ArrayForEach(it, table)
        {
            ns_topic_config_t t = {NULL, 0, 0, 0, 0};
            if (ns_jr_absent(it))
                continue;
            if (!cJSON_IsObject(it))
                return NS_EINVAL;
            if ((rc = ns_jr_i32(ns_jr_get(it, "readQueueNums"), &t.read_queue_nums)) != NS_OK ||
                (rc = ns_jr_i32(ns_jr_get(it, "writeQueueNums"), &t.write_queue_nums)) != NS_OK ||
                (rc = ns_jr_i32(ns_jr_get(it, "perm"), &t.perm)) != NS_OK ||
                (rc = ns_jr_i32(ns_jr_get(it, "topicSysFlag"), &t.topic_sys_flag)) != NS_OK ||
                (rc = ns_jr_str(ns_jr_get(it, "topicName"), &t.topic_name)) != NS_OK)
                return rc;
            if (t.topic_name == NULL && (t.topic_name = strdup(it->string)) == NULL)
                return NS_ENOMEM;
            if ((rc = ns_rbuild_add_topic(bd, &t)) != NS_OK)
                return rc;
        }
    }
    maps = ns_jr_get(w, "topicQueueMappingInfoMap");
    if (!ns_jr_absent(maps)) {
        if (!cJSON_IsObject(maps))
            return NS_EINVAL;
        cJSON_ArrayForEach(it, maps)
        {
            if ((rc = add_mapping_json(bd, it, it->string)) != NS_OK)
                return rc;
        }
    }
    return NS_OK;
}

static int decode_json(ns_rbuild_t *bd, const uint8_t *p, size_t n, int request_version)
{
    cJSON *root = NULL;
    const cJSON *wrapper = NULL;
    int rc = ns_jr_parse_object(p, n, &root);
    if (rc != NS_OK)
        goto cleanup;
    wrapper = root;
    if (request_version >= VERSION_REGISTER_BODY) {
        if ((rc = servers_from_json(bd, ns_jr_get(root, "filterServerList"))) != NS_OK)
            goto cleanup;
        wrapper = ns_jr_get(root, "topicConfigSerializeWrapper");
    }
    rc = wrapper_from_json(bd, wrapper);

cleanup:
    cJSON_Delete(root);
    return rc;
}

/* ---- compressed form (§5.2) ----------------------------------------------- */

/* A lazily inflating reader over the zlib stream. */
typedef struct {
    z_stream zs;
    bool ready;   /* inflateInit done */
    bool ended;   /* Z_STREAM_END seen */
    size_t total; /* bytes inflated so far */
    size_t limit; /* max_inflate_bytes */
} zin_t;

static int zin_open(zin_t *z, const uint8_t *p, size_t n, size_t limit)
{
    memset(z, 0, sizeof *z);
    z->limit = limit;
    if (n > UINT_MAX)
        return NS_ETOOBIG;
    z->zs.next_in = (Bytef *)p;
    z->zs.avail_in = (uInt)n;
    int zr = inflateInit(&z->zs);
    if (zr != Z_OK)
        return zr == Z_MEM_ERROR ? NS_ENOMEM : NS_EINVAL;
    z->ready = true;
    return NS_OK;
}

static void zin_close(zin_t *z)
{
    if (z->ready)
        inflateEnd(&z->zs);
    z->ready = false;
}

/* Appends exactly n inflated bytes to dst (which is grown by at most one
 * chunk beyond the data actually produced). */
static int zin_read(zin_t *z, ns_buf_t *dst, size_t n)
{
    while (n > 0) {
        if (z->ended)
            return NS_EINVAL; /* stream ended before the field did */
        if (z->total >= z->limit)
            return NS_ETOOBIG;
        size_t chunk = n < INFLATE_CHUNK ? n : INFLATE_CHUNK;
        if (chunk > z->limit - z->total)
            chunk = z->limit - z->total;
        if (ns_buf_reserve(dst, chunk) != NS_OK)
            return NS_ENOMEM;
        z->zs.next_out = dst->data + dst->len;
        z->zs.avail_out = (uInt)chunk;
        int zr = inflate(&z->zs, Z_NO_FLUSH);
        size_t got = chunk - z->zs.avail_out;
        dst->len += got;
        dst->data[dst->len] = 0;
        z->total += got;
        n -= got;
        if (zr == Z_STREAM_END)
            z->ended = true;
        else if (zr == Z_MEM_ERROR)
            return NS_ENOMEM;
        else if (zr == Z_BUF_ERROR && got == 0)
            return NS_EINVAL; /* input exhausted: truncated stream */
        else if (zr != Z_OK && zr != Z_BUF_ERROR)
            return NS_EINVAL; /* Z_DATA_ERROR, Z_NEED_DICT, ... */
    }
    return NS_OK;
}

/* Reads a big-endian int that must be >= 0. */
static int zin_len(zin_t *z, ns_buf_t *tmp, size_t *out)
{
    ns_buf_reset(tmp);
    int rc = zin_read(z, tmp, 4);
    if (rc != NS_OK)
        return rc;
    int32_t v = (int32_t)ns_be32_read(tmp->data);
    if (v < 0)
        return NS_EINVAL;
    *out = (size_t)v;
    return NS_OK;
}

/* Reads a length-prefixed field into tmp (NUL-terminated). */
static int zin_field(zin_t *z, ns_buf_t *tmp)
{
    size_t len = 0;
    int rc = zin_len(z, tmp, &len);
    if (rc != NS_OK)
        return rc;
    ns_buf_reset(tmp);
    if ((rc = ns_buf_reserve(tmp, 0)) != NS_OK)
        return rc;
    tmp->data[0] = 0;
    return zin_read(z, tmp, len);
}

/* Integer.parseInt: optional sign and decimal digits, int range. */
static int parse_int(const char *s, size_t n, int32_t *out)
{
    int64_t v = 0;
    if (ns_parse_i64(s, n, &v) != NS_OK || v < INT32_MIN || v > INT32_MAX)
        return NS_EINVAL;
    *out = (int32_t)v;
    return NS_OK;
}

/* Parses a TopicConfig text line (§5.3) "name r w perm filterType [attrs]";
 * t->topic_name becomes a heap copy. */
static int parse_topic_line(const char *s, size_t n, ns_topic_config_t *t)
{
    size_t start[5], len[5];
    size_t pos = 0;
    int rc;

    if (memchr(s, 0, n) != NULL)
        return NS_EINVAL;
    for (size_t f = 0; f < 5; f++) {
        if (pos > n)
            return NS_EINVAL; /* fewer than five fields */
        const char *sp = memchr(s + pos, ' ', n - pos);
        start[f] = pos;
        len[f] = sp != NULL ? (size_t)(sp - (s + pos)) : n - pos;
        pos += len[f] + 1;
    }
    /* Java's split(" ") drops trailing empty fields, and TopicFilterType
     * must name a constant. */
    if (!((len[4] == 10 && memcmp(s + start[4], "SINGLE_TAG", 10) == 0) ||
          (len[4] == 9 && memcmp(s + start[4], "MULTI_TAG", 9) == 0)))
        return NS_EINVAL;
    memset(t, 0, sizeof *t);
    if ((rc = parse_int(s + start[1], len[1], &t->read_queue_nums)) != NS_OK ||
        (rc = parse_int(s + start[2], len[2], &t->write_queue_nums)) != NS_OK ||
        (rc = parse_int(s + start[3], len[3], &t->perm)) != NS_OK)
        return rc;
    t->topic_name = strndup(s + start[0], len[0]);
    return t->topic_name != NULL ? NS_OK : NS_ENOMEM;
}

static int decode_compressed(ns_rbuild_t *bd, const uint8_t *p, size_t n, int request_version,
                             size_t limit)
{
    zin_t z;
    ns_buf_t tmp = NS_BUF_INIT;
    cJSON *json = NULL;
    size_t count = 0;
    int rc = zin_open(&z, p, n, limit);
    if (rc != NS_OK)
        goto cleanup;

    bool has_ts = false;
    if ((rc = zin_field(&z, &tmp)) != NS_OK ||
        (rc = ns_json_dataversion_decode_ts(tmp.data, tmp.len, &bd->b->data_version, &has_ts)) !=
            NS_OK)
        goto cleanup;
    bd->b->dv_timestamp_absent = !has_ts;

    if ((rc = zin_len(&z, &tmp, &count)) != NS_OK ||
        (rc = ns_rbuild_presize_topics(bd, count)) != NS_OK)
        goto cleanup;
    for (size_t i = 0; i < count; i++) {
        ns_topic_config_t t;
        if ((rc = zin_field(&z, &tmp)) != NS_OK ||
            (rc = parse_topic_line((const char *)tmp.data, tmp.len, &t)) != NS_OK ||
            (rc = ns_rbuild_add_topic(bd, &t)) != NS_OK)
            goto cleanup;
    }

    /* filter-server list: "" or "null" (JSON.parseArray -> null) = absent */
    if ((rc = zin_field(&z, &tmp)) != NS_OK)
        goto cleanup;
    if (tmp.len > 0) {
        if ((rc = ns_jr_parse(tmp.data, tmp.len, &json)) != NS_OK ||
            (rc = servers_from_json(bd, json)) != NS_OK)
            goto cleanup;
        cJSON_Delete(json);
        json = NULL;
    }

    if (request_version >= VERSION_MAPPINGS) {
        if ((rc = zin_len(&z, &tmp, &count)) != NS_OK)
            goto cleanup;
        for (size_t i = 0; i < count; i++) {
            if ((rc = zin_field(&z, &tmp)) != NS_OK ||
                (rc = ns_jr_parse_object(tmp.data, tmp.len, &json)) != NS_OK)
                goto cleanup;
            if ((rc = add_mapping_json(bd, json, NULL)) != NS_OK)
                goto cleanup;
            cJSON_Delete(json);
            json = NULL;
        }
    }
    /* anything after the last expected field is ignored */

cleanup:
    cJSON_Delete(json);
    ns_buf_free(&tmp);
    zin_close(&z);
    return rc;
}

int ns_regbody_decode(const uint8_t *p, size_t n, int request_version, size_t max_inflate_bytes,
                      ns_regbody_t *out)
{
    ns_regbody_t b;
    ns_rbuild_t bd;
    size_t i = 0;
    int rc = NS_OK;

    memset(&b, 0, sizeof b);
    memset(&bd, 0, sizeof bd);
    bd.b = &b;
    memset(out, 0, sizeof *out);
    b.dv_timestamp_absent = true; /* until a dataVersion with a timestamp is read */
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == n)
        goto cleanup; /* no body: empty table, zero DataVersion */
    if (p[i] == '{')
        rc = decode_json(&bd, p + i, n - i, request_version);
    else
        rc = decode_compressed(&bd, p, n, request_version, max_inflate_bytes);

cleanup:
    ns_rbuild_done(&bd);
    if (rc != NS_OK) {
        ns_regbody_free(&b);
        return rc;
    }
    *out = b;
    return NS_OK;
}
