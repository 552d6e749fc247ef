/* nstest_admin.c - the admin-side helpers of nstest_admin.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"

cJSON *nstest_admin_trail(const char *data_dir)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "audit", "--admin", "--data-dir", data_dir, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    cJSON *all = cJSON_CreateArray();
    for (char *line = out, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        cJSON *rec = cJSON_Parse(line);
        assert_non_null(rec);
        cJSON_AddItemToArray(all, rec);
    }
    free(out);
    return all;
}

cJSON *nstest_trail_find(cJSON *trail, const char *request, const char *result)
{
    cJSON *r;
    cJSON_ArrayForEach(r, trail)
    {
        cJSON *q = cJSON_GetObjectItem(r, "request"), *res = cJSON_GetObjectItem(r, "result");
        if (cJSON_IsString(q) && strcmp(q->valuestring, request) == 0 && cJSON_IsString(res) &&
            strcmp(res->valuestring, result) == 0)
            return r;
    }
    return NULL;
}

const char *nstest_trail_field(cJSON *rec, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "fields"), key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

int nstest_config_update(ns_client_t *c, const char *props)
{
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, props, strlen(props), 479, 10000, &rsp);
    int code = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    return code;
}

void nstest_register_two_topics(ns_client_t *c, const char *name, const char *addr)
{
    ns_topic_config_t tc[] = {{"T1", 4, 4, 6, 0}, {"T2", 8, 8, 6, 0}};
    ns_regbody_t body = {0};
    body.data_version = (ns_dataversion_t){1, 0, 1700000000000LL};
    body.topics = tc;
    body.n_topics = 2;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&b, &body), NS_OK);
    const char *kv[] = {"brokerName", name, "brokerAddr",   addr, "clusterName",        "C1",
                        "brokerId",   "0",  "haServerAddr", addr, "enableActingMaster", "false",
                        NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, b.data, b.len, 10000),
                     NS_RSP_SUCCESS);
    ns_buf_free(&b);
}

void nstest_register_topics(ns_client_t *c, const char *cluster, const char *name, const char *addr,
                            const char *ha, ns_topic_config_t *topics, size_t n)
{
    ns_buf_t body = NS_BUF_INIT;
    nstest_regbody_json(&body, topics, n);
    const char *kv[] = {"brokerAddr",  addr,    "brokerId",     "0", "brokerName", name,
                        "clusterName", cluster, "haServerAddr", ha,  NULL};
    /* a bound, not a target: 100,000-topic bodies under ASan on a loaded
     * 2-core host took over 10 s to commit */
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 120000),
                     NS_RSP_SUCCESS);
    ns_buf_free(&body);
}

void nstest_local_name(ns_client_t *c, char *out, size_t n)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(ns_client_fd(c), (struct sockaddr *)&sa, &len), 0);
    snprintf(out, n, "127.0.0.1:%d", ntohs(sa.sin_port));
}

void nstest_put_keys(ns_client_t *c, const char *ns, const char *prefix, int width, int n,
                     const char *value)
{
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s%0*d", prefix, width, i);
        const char *kv[] = {"namespace", ns, "key", key, "value", value, NULL};
        int code = nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, kv, NULL, 0, 10000);
        if (code != NS_RSP_SUCCESS)
            fail_msg("PUT_KV_CONFIG %s/%s: code %d", ns, key, code);
    }
}

void nstest_regbody_json(ns_buf_t *out, ns_topic_config_t *topics, size_t n)
{
    nstest_regbody_version(out, topics, n, 1, 1700000000000LL);
}

void nstest_regbody_version(ns_buf_t *out, ns_topic_config_t *topics, size_t n, int64_t counter,
                            int64_t timestamp)
{
    ns_regbody_t b;
    memset(&b, 0, sizeof b);
    b.data_version.counter = counter;
    b.data_version.timestamp = timestamp;
    b.topics = topics;
    b.n_topics = n;
    b.has_filter_server_list = true;
    ns_buf_reset(out);
    assert_int_equal(ns_regbody_encode_json(out, &b), NS_OK);
}

void nstest_regbody_names(ns_buf_t *out, const char *const *names, size_t n)
{
    ns_topic_config_t *t = calloc(n ? n : 1, sizeof *t);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++)
        t[i] = (ns_topic_config_t){(char *)names[i], 4, 4, 6, 0};
    nstest_regbody_json(out, t, n);
    free(t);
}

int nstest_route_code(const nstest_server_t *srv, const char *topic)
{
    ns_client_t *c = nstest_connect(srv);
    const char *g[] = {"topic", topic, NULL};
    int code = nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, g, NULL, 0, 10000);
    ns_client_close(c);
    return code;
}
