/* registry_audit.c - the history record a registration that changed the
 * broker's DataVersion writes (which topics were added, changed, removed;
 * the audit table of store/keys.h), and its trimming to auditRetention. */
#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/err.h"
#include "ns/log.h"
#include "registry_int.h"

/* ---- audit record of a data-version change ---- */

/* "readQueueNums":r,"writeQueueNums":w,"perm":p,"topicSysFlag":f, without
 * printf (a first registration lists 1000 topics). */
static int audit_queue_nums(ns_buf_t *b, int32_t r, int32_t w, int32_t perm, int32_t flag)
{
    static const char *const names[4] = {
        "\"readQueueNums\":", ",\"writeQueueNums\":", ",\"perm\":", ",\"topicSysFlag\":"};
    const int32_t v[4] = {r, w, perm, flag};
    int rc = NS_OK;
    for (int i = 0; i < 4 && rc == NS_OK; i++) {
        rc = ns_buf_append_str(b, names[i]);
        rc = rc ? rc : ns_buf_append_i64_dec(b, v[i]);
    }
    return rc;
}

static int audit_queue(ns_buf_t *b, const ns_topic_config_t *tc)
{
    return audit_queue_nums(b, tc->read_queue_nums, tc->write_queue_nums, tc->perm,
                            tc->topic_sys_flag);
}

static int audit_dv(ns_buf_t *b, const char *name, const ns_dataversion_t *dv)
{
    int rc = ns_buf_printf(b, ",\"%s\":", name);
    return rc ? rc : dv ? ns_json_dataversion_encode(b, dv) : ns_buf_append_str(b, "null");
}

/* A history record lists at most this many topics per list (and counts
 * them all), so a broker re-registering 100,000 changed topics does not
 * write megabytes of history per version. */
#define AUDIT_MAX_LISTED 1000

int ns_audit_list_add(ns_buf_t *list, size_t *n, const char *topic, const ns_topic_config_t *tc,
                      const ns_queue_data_t *old)
{
    if (*n >= AUDIT_MAX_LISTED) {
        (*n)++;
        return NS_OK;
    }
    int rc = ns_buf_append_str(list, *n ? ",{\"topic\":" : "{\"topic\":");
    rc = rc ? rc : ns_buf_append_json_str(list, topic, strlen(topic), false);
    if (rc == NS_OK && tc) {
        rc = ns_buf_append_u8(list, ',');
        rc = rc ? rc : audit_queue(list, tc);
    }
    if (rc == NS_OK && old) {
        rc = ns_buf_append_str(list, ",\"old\":{");
        rc = rc ? rc
                : audit_queue_nums(list, old->read_queue_nums, old->write_queue_nums, old->perm,
                                   old->topic_sys_flag);
        rc = rc ? rc : ns_buf_append_u8(list, '}');
    }
    rc = rc ? rc : ns_buf_append_u8(list, '}');
    (*n)++;
    return rc;
}

void ns_audit_diff_free(audit_diff_t *d)
{
    ns_buf_free(&d->added);
    ns_buf_free(&d->changed);
    ns_buf_free(&d->removed);
}

int ns_audit_write(ns_txn_t *t, const ns_register_args_t *a, const ns_dataversion_t *old,
                   audit_diff_t *d)
{
    ns_buf_t b = NS_BUF_INIT;
    const ns_dataversion_t *nv = &a->body->data_version;
    bool backwards = old && (nv->counter < old->counter ||
                             (nv->counter == old->counter && nv->timestamp < old->timestamp));
    int rc = ns_buf_printf(&b, "{\"time\":%lld,\"cluster\":", (long long)a->now_ms);
    rc = rc ? rc : ns_buf_append_json_str(&b, a->cluster, strlen(a->cluster), false);
    rc = rc ? rc : ns_buf_append_str(&b, ",\"brokerName\":");
    rc = rc ? rc : ns_buf_append_json_str(&b, a->broker_name, strlen(a->broker_name), false);
    rc = rc ? rc : ns_buf_append_str(&b, ",\"brokerAddr\":");
    rc = rc ? rc : ns_buf_append_json_str(&b, a->addr, strlen(a->addr), false);
    rc = rc ? rc : ns_buf_printf(&b, ",\"brokerId\":%lld", (long long)a->broker_id);
    rc = rc ? rc : audit_dv(&b, "oldVersion", old);
    rc = rc ? rc : audit_dv(&b, "newVersion", nv);
    rc = rc ? rc
            : ns_buf_printf(&b, ",\"backwards\":%s,\"topicCount\":%zu,\"added\":[",
                            backwards ? "true" : "false", a->body->n_topics);
    rc = rc ? rc : ns_buf_append(&b, d->added.data, d->added.len);
    rc = rc ? rc : ns_buf_append_str(&b, "],\"changed\":[");
    rc = rc ? rc : ns_buf_append(&b, d->changed.data, d->changed.len);
    rc = rc ? rc : ns_buf_append_str(&b, "],\"removed\":[");
    rc = rc ? rc : ns_buf_append(&b, d->removed.data, d->removed.len);
    rc = rc ? rc
            : ns_buf_printf(&b,
                            "],\"addedCount\":%zu,\"changedCount\":%zu,"
                            "\"removedCount\":%zu}",
                            d->n_added, d->n_changed, d->n_removed);
    rc = rc ? rc : ns_audit_append(t, (const char *)b.data, b.len, NULL);
    rc = rc ? rc : ns_audit_trim(t, a->audit_retention);
    if (backwards)
        NS_LOG_WARN("broker %s (%s) data version went backwards: counter %lld -> %lld",
                    a->broker_name, a->addr, (long long)old->counter, (long long)nv->counter);
    ns_buf_free(&b);
    return rc;
}

/* Sorted copy of the body's topic names, to test membership (the topics a
 * registration with deleteTopicWithBrokerRegistration no longer lists). */
