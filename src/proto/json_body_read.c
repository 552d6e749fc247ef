/* json_body_read.c - tolerant readers of small Java-produced JSON bodies
 * (include/ns/body.h, docs/protocol.md §4.4): DataVersion and a list of QueueData
 * (TopicRouteData.queueDatas). Values are coerced as fastjson does, through
 * json_read.h. The writers are in json_body.c.
 */
#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "ns/body.h"
#include "ns/err.h"

int ns_json_dataversion_decode(const uint8_t *p, size_t n, ns_dataversion_t *out)
{
    bool has_timestamp;
    return ns_json_dataversion_decode_ts(p, n, out, &has_timestamp);
}

int ns_json_dataversion_decode_ts(const uint8_t *p, size_t n, ns_dataversion_t *out,
                                  bool *has_timestamp)
{
    cJSON *root = NULL;
    ns_dataversion_t dv = {0, 0, 0};
    int rc = ns_jr_parse_object(p, n, &root);
    if (rc != NS_OK)
        goto cleanup;
    if ((rc = ns_jr_i64(cJSON_GetObjectItemCaseSensitive(root, "counter"), &dv.counter)) != NS_OK ||
        (rc = ns_jr_i64(cJSON_GetObjectItemCaseSensitive(root, "stateVersion"),
                        &dv.state_version)) != NS_OK ||
        (rc = ns_jr_i64(cJSON_GetObjectItemCaseSensitive(root, "timestamp"), &dv.timestamp)) !=
            NS_OK)
        goto cleanup;
    *out = dv;
    *has_timestamp = !ns_jr_absent(cJSON_GetObjectItemCaseSensitive(root, "timestamp"));

cleanup:
    cJSON_Delete(root);
    return rc;
}

/* Fills one QueueData from its JSON object; q->broker_name becomes a heap
 * string ("" when the member is missing). */
static int queue_data_from_json(const cJSON *o, ns_queue_data_t *q)
{
    char *name = NULL;
    const cJSON *flag = cJSON_GetObjectItemCaseSensitive(o, "topicSysFlag");
    int rc;
    if (ns_jr_absent(flag))
        flag = cJSON_GetObjectItemCaseSensitive(o, "topicSynFlag"); /* before 4.9.0 */
    if ((rc = ns_jr_i32(cJSON_GetObjectItemCaseSensitive(o, "perm"), &q->perm)) != NS_OK ||
        (rc = ns_jr_i32(cJSON_GetObjectItemCaseSensitive(o, "readQueueNums"),
                        &q->read_queue_nums)) != NS_OK ||
        (rc = ns_jr_i32(cJSON_GetObjectItemCaseSensitive(o, "writeQueueNums"),
                        &q->write_queue_nums)) != NS_OK ||
        (rc = ns_jr_i32(flag, &q->topic_sys_flag)) != NS_OK ||
        (rc = ns_jr_str(cJSON_GetObjectItemCaseSensitive(o, "brokerName"), &name)) != NS_OK)
        goto cleanup;
    if (name == NULL && (name = strdup("")) == NULL) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    q->broker_name = name;
    name = NULL;

cleanup:
    free(name);
    return rc;
}

int ns_json_queue_datas_decode(const uint8_t *p, size_t n, ns_queue_data_t **out, size_t *n_out)
{
    cJSON *root = NULL;
    ns_queue_data_t *q = NULL;
    size_t count = 0;
    const cJSON *list = NULL, *it = NULL;
    size_t cap = 0;
    int rc = NS_OK;

    *out = NULL;
    *n_out = 0;
    if (ns_jr_blank(p, n))
        goto cleanup; /* no body: nothing to register */
    if ((rc = ns_jr_parse_object(p, n, &root)) != NS_OK)
        goto cleanup;
    list = cJSON_GetObjectItemCaseSensitive(root, "queueDatas");
    if (ns_jr_absent(list))
        goto cleanup;
    if (!cJSON_IsArray(list)) {
        rc = NS_EINVAL;
        goto cleanup;
    }
    cap = (size_t)cJSON_GetArraySize(list);
    if (cap == 0)
        goto cleanup;
    if ((q = calloc(cap, sizeof *q)) == NULL) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    cJSON_ArrayForEach(it, list)
    {
        if (ns_jr_absent(it))
            continue;
        if (!cJSON_IsObject(it)) {
            rc = NS_EINVAL;
            goto cleanup;
        }
        if ((rc = queue_data_from_json(it, &q[count])) != NS_OK)
            goto cleanup;
        count++;
    }
    if (count == 0)
        goto cleanup;
    *out = q;
    *n_out = count;
    q = NULL;
    count = 0;

cleanup:
    ns_queue_datas_free(q, count);
    cJSON_Delete(root);
    return rc;
}

void ns_queue_datas_free(ns_queue_data_t *q, size_t n)
{
    if (q == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free((char *)q[i].broker_name);
    free(q);
}
