/* regbody_enc.c - RegisterBrokerBody encoders (include/ns/body.h,
 * docs/protocol.md §4.3.12, §5.2): the JSON form and the zlib-compressed binary
 * form, as a Java broker writes them. Used by the tools and tests that play
 * a broker; the server only decodes (regbody.c).
 */
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"

static int put_str(ns_buf_t *o, const char *s)
{
    if (s == NULL)
        return ns_buf_append_str(o, "null");
    return ns_buf_append_json_str(o, s, strlen(s), false);
}

/* TopicQueueMappingInfo, legacy form (bare integer keys). */
static int put_mapping(ns_buf_t *o, const ns_mapping_info_t *m)
{
    int rc = ns_buf_append_str(o, "{");
    if (rc == NS_OK && m->bname != NULL) {
        if ((rc = ns_buf_append_str(o, "\"bname\":")) == NS_OK &&
            (rc = put_str(o, m->bname)) == NS_OK)
            rc = ns_buf_append_str(o, ",");
    }
    if (rc == NS_OK)
        rc = ns_buf_append_str(o, "\"currIdMap\":{");
    for (size_t i = 0; rc == NS_OK && i < m->n_curr_id_map; i++)
        rc = ns_buf_printf(o, "%s%d:%d", i ? "," : "", (int)m->curr_id_map[i].logical,
                           (int)m->curr_id_map[i].physical);
    if (rc == NS_OK)
        rc = ns_buf_printf(o,
                           "},\"dirty\":%s,\"epoch\":%lld,\"scope\":", m->dirty ? "true" : "false",
                           (long long)m->epoch);
    if (rc == NS_OK)
        rc = put_str(o, m->scope != NULL ? m->scope : "__global__");
    if (rc == NS_OK && m->topic != NULL) {
        if ((rc = ns_buf_append_str(o, ",\"topic\":")) == NS_OK)
            rc = put_str(o, m->topic);
    }
    if (rc == NS_OK)
        rc = ns_buf_printf(o, ",\"totalQueues\":%d}", (int)m->total_queues);
    return rc;
}

static int put_servers(ns_buf_t *o, const ns_regbody_t *b)
{
    int rc = ns_buf_append_str(o, "[");
    for (size_t i = 0; rc == NS_OK && i < b->n_filter_servers; i++) {
        if (i > 0)
            rc = ns_buf_append_str(o, ",");
        if (rc == NS_OK)
            rc = put_str(o, b->filter_servers[i]);
    }
    if (rc == NS_OK)
        rc = ns_buf_append_str(o, "]");
    return rc;
}

int ns_regbody_encode_json(ns_buf_t *out, const ns_regbody_t *b)
{
    size_t start = out->len;
    const ns_dataversion_t *dv = &b->data_version;
    ns_dataversion_t mdv = {0, 0, dv->timestamp};
    int rc = ns_buf_append_str(out, "{\"filterServerList\":");
    if (rc == NS_OK)
        rc = put_servers(out, b);
    if (rc == NS_OK)
        rc = ns_buf_append_str(out, ",\"topicConfigSerializeWrapper\":{\"dataVersion\":");
    if (rc == NS_OK)
        rc = ns_json_dataversion_encode(out, dv);
    if (rc == NS_OK)
        rc = ns_buf_append_str(out, ",\"mappingDataVersion\":");
    if (rc == NS_OK)
        rc = ns_json_dataversion_encode(out, &mdv);
    if (rc == NS_OK)
        rc = ns_buf_append_str(out, ",\"topicConfigTable\":{");
    for (size_t i = 0; rc == NS_OK && i < b->n_topics; i++) {
        const ns_topic_config_t *t = &b->topics[i];
        if (i > 0)
            rc = ns_buf_append_str(out, ",");
        if (rc == NS_OK)
            rc = put_str(out, t->topic_name);
        if (rc == NS_OK)
            rc = ns_buf_printf(out,
                               ":{\"attributes\":{},\"order\":false,\"perm\":%d,"
                               "\"readQueueNums\":%d,\"topicFilterType\":\"SINGLE_TAG\","
                               "\"topicName\":",
                               (int)t->perm, (int)t->read_queue_nums);
        if (rc == NS_OK)
            rc = put_str(out, t->topic_name);
        if (rc == NS_OK)
            rc = ns_buf_printf(out, ",\"topicSysFlag\":%d,\"writeQueueNums\":%d}",
                               (int)t->topic_sys_flag, (int)t->write_queue_nums);
    }
    if (rc == NS_OK)
        rc = ns_buf_append_str(out, "},\"topicQueueMappingDetailMap\":{},"
                                    "\"topicQueueMappingInfoMap\":{");
    for (size_t i = 0; rc == NS_OK && i < b->n_mappings; i++) {
        if (i > 0)
            rc = ns_buf_append_str(out, ",");
        if (rc == NS_OK)
            rc = put_str(out, b->mappings[i].topic);
        if (rc == NS_OK)
            rc = ns_buf_append_str(out, ":");
        if (rc == NS_OK)
            rc = put_mapping(out, &b->mappings[i]);
    }
    if (rc == NS_OK)
        rc = ns_buf_append_str(out, "}}}");
    if (rc != NS_OK && out->data != NULL) {
        out->len = start;
        out->data[start] = 0;
    }
    return rc;
}

/* Appends tmp to raw as a big-endian length and the bytes; empties tmp. */
static int put_field(ns_buf_t *raw, ns_buf_t *tmp)
{
    if (tmp->len > INT32_MAX)
        return NS_ETOOBIG;
    int rc = ns_buf_append_be32(raw, (uint32_t)tmp->len);
    if (rc == NS_OK)
        rc = ns_buf_append(raw, tmp->data, tmp->len);
    ns_buf_reset(tmp);
    return rc;
}

int ns_regbody_encode_compressed(ns_buf_t *out, const ns_regbody_t *b, bool with_mappings)
{
    ns_buf_t raw = NS_BUF_INIT, tmp = NS_BUF_INIT;
    int rc = NS_OK;

    if (b->n_topics > INT32_MAX || b->n_mappings > INT32_MAX) {
        rc = NS_ETOOBIG;
        goto cleanup;
    }
    if ((rc = ns_json_dataversion_encode(&tmp, &b->data_version)) != NS_OK ||
        (rc = put_field(&raw, &tmp)) != NS_OK ||
        (rc = ns_buf_append_be32(&raw, (uint32_t)b->n_topics)) != NS_OK)
        goto cleanup;
    for (size_t i = 0; i < b->n_topics; i++) {
        const ns_topic_config_t *t = &b->topics[i];
        if ((rc = ns_buf_printf(&tmp, "%s %d %d %d SINGLE_TAG {}", t->topic_name,
                                (int)t->read_queue_nums, (int)t->write_queue_nums, (int)t->perm)) !=
                NS_OK ||
            (rc = put_field(&raw, &tmp)) != NS_OK)
            goto cleanup;
    }
    if ((rc = put_servers(&tmp, b)) != NS_OK || (rc = put_field(&raw, &tmp)) != NS_OK)
        goto cleanup;
    if (with_mappings) {
        if ((rc = ns_buf_append_be32(&raw, (uint32_t)b->n_mappings)) != NS_OK)
            goto cleanup;
        for (size_t i = 0; i < b->n_mappings; i++)
            if ((rc = put_mapping(&tmp, &b->mappings[i])) != NS_OK ||
                (rc = put_field(&raw, &tmp)) != NS_OK)
                goto cleanup;
    }

    uLong bound = compressBound((uLong)raw.len);
    if ((rc = ns_buf_reserve(out, (size_t)bound)) != NS_OK)
        goto cleanup;
    uLongf clen = bound;
    int zr = compress2(out->data + out->len, &clen, raw.data, (uLong)raw.len, Z_BEST_COMPRESSION);
    if (zr != Z_OK) {
        rc = zr == Z_MEM_ERROR ? NS_ENOMEM : NS_EINTERNAL;
        goto cleanup;
    }
    out->len += (size_t)clen;
    out->data[out->len] = 0;

cleanup:
    ns_buf_free(&raw);
    ns_buf_free(&tmp);
    return rc;
}
