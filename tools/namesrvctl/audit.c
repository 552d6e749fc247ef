/* audit.c - `namesrvctl audit`: the history of broker data-version changes
 * that namesrvd records in the audit table (store/keys.h, "audit"), and with
 * --admin the trail of admin requests (table admin_audit, src/daemon/core/trail.h).
 *
 *   namesrvctl audit --data-dir D [--broker NAME] [--topic T] [--since TIME] [--json]
 *   namesrvctl audit --admin --data-dir D [--broker NAME] [--since TIME] [--json]
 *
 * An admin record: {"time":ms,"peer":"ip:port","code":205,
 *   "request":"WIPE_WRITE_PERM_OF_BROKER","fields":{...},"body"?,
 *   "result":"ok|refused","responseCode":n,"remark"?,"detail"?}. With
 * --admin, --broker matches the brokerName or brokerAddr field.
 *
 * The server appends one record per registration whose DataVersion differs
 * from the stored one (store/registry_audit.c, ns_audit_write); an unchanged
 * re-registration writes nothing. A record is a JSON object:
 *   {"time":ms,"cluster","brokerName","brokerAddr","brokerId",
 *    "oldVersion":{counter,stateVersion,timestamp}|null,"newVersion":{...},
 *    "backwards":bool,"topicCount":n,
 *    "added":[{topic,readQueueNums,writeQueueNums,perm,topicSysFlag}],
 *    "changed":[{topic,...new values...,"old":{...}}],"removed":[{topic}]}
 * Filters: --broker matches the broker name or address, --topic a topic in
 * added/changed/removed, --since keeps records at or after TIME (ms since
 * the epoch or an ISO-8601 UTC date/time). Output: a table, or with --json
 * one JSON object per line (the record with its "seq" first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "ctl.h"
#include "ns/err.h"
#include "ns/utf8.h"

#define TOPICS_SHOWN 5 /* names per list in the table; the rest is counted */

typedef struct {
    const char *broker, *topic;
    int64_t since;
    bool has_since, json;
    size_t total, shown;
    ns_buf_t line;
} audit_q_t;

static int64_t num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static bool list_has(const cJSON *list, const char *topic)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        if (strcmp(str(e, "topic"), topic) == 0)
            return true;
    }
    return false;
}

static bool matches(const audit_q_t *q, const cJSON *rec)
{
    if (q->broker && strcmp(str(rec, "brokerName"), q->broker) != 0 &&
        strcmp(str(rec, "brokerAddr"), q->broker) != 0)
        return false;
    if (q->has_since && num(rec, "time") < q->since)
        return false;
    if (q->topic && !list_has(cJSON_GetObjectItemCaseSensitive(rec, "added"), q->topic) &&
        !list_has(cJSON_GetObjectItemCaseSensitive(rec, "changed"), q->topic) &&
        !list_has(cJSON_GetObjectItemCaseSensitive(rec, "removed"), q->topic))
        return false;
    return true;
}

/* "counter/timestamp/stateVersion", or "-" for none. */
static void fmt_version(ns_buf_t *b, const cJSON *dv)
{
    if (!cJSON_IsObject(dv)) {
        ns_buf_append_str(b, "-");
        return;
    }
    ns_buf_printf(b, "%lld/%lld/%lld", (long long)num(dv, "counter"),
                  (long long)num(dv, "timestamp"), (long long)num(dv, "stateVersion"));
}

/* " +a,b,c" with at most TOPICS_SHOWN names. */
static void fmt_list(ns_buf_t *b, char sign, const cJSON *list)
{
    int n = cJSON_GetArraySize(list), i = 0;
    const cJSON *e;
    if (n == 0)
        return;
    ns_buf_printf(b, " %c", sign);
    cJSON_ArrayForEach(e, list)
    {
        if (i == TOPICS_SHOWN) {
            ns_buf_printf(b, ",...(%d more)", n - TOPICS_SHOWN);
            break;
        }
        ns_buf_printf(b, "%s%s", i++ ? "," : "", ctl_txt(str(e, "topic")));
    }
}

static int print_row(audit_q_t *q, uint64_t seq, const cJSON *rec)
{
    char when[40];
    ns_buf_t *b = &q->line;
    ns_buf_reset(b);
    ctl_format_time(num(rec, "time"), when, sizeof when);
    ns_buf_printf(b, "%-6llu %-24s %-16s %-21s ", (unsigned long long)seq, when,
                  ctl_txt(str(rec, "brokerName")), ctl_txt(str(rec, "brokerAddr")));
    size_t vstart = b->len;
    fmt_version(b, cJSON_GetObjectItemCaseSensitive(rec, "oldVersion"));
    ns_buf_append_str(b, " -> ");
    fmt_version(b, cJSON_GetObjectItemCaseSensitive(rec, "newVersion"));
    while (b->len - vstart < 44)
        ns_buf_append_u8(b, ' ');
    ns_buf_printf(b, " %lld topics", (long long)num(rec, "topicCount"));
    fmt_list(b, '+', cJSON_GetObjectItemCaseSensitive(rec, "added"));
    fmt_list(b, '~', cJSON_GetObjectItemCaseSensitive(rec, "changed"));
    fmt_list(b, '-', cJSON_GetObjectItemCaseSensitive(rec, "removed"));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "backwards")))
        ns_buf_append_str(b, "  BACKWARDS");
    if (ns_buf_append_u8(b, '\n') != NS_OK)
        return NS_ENOMEM;
    fwrite(b->data, 1, b->len, stdout);
    return 0;
}

/* The record with "seq" as its first member, on one line. */
static int print_json(uint64_t seq, cJSON *rec)
{
    cJSON *out = cJSON_CreateObject();
    char *text = NULL;
    int rc = NS_ENOMEM;
    if (out == NULL || cJSON_AddNumberToObject(out, "seq", (double)seq) == NULL)
        goto done;
    while (rec->child) {
        cJSON *c = cJSON_DetachItemViaPointer(rec, rec->child);
        cJSON_AddItemToObject(out, c->string, c);
    }
    if ((text = cJSON_PrintUnformatted(out)) != NULL) {
        puts(text);
        rc = 0;
    }
done:
    free(text);
    cJSON_Delete(out);
    return rc;
}

/* ---- the admin trail ---- */

static bool admin_matches(const audit_q_t *q, const cJSON *rec)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(rec, "fields");
    if (q->has_since && num(rec, "time") < q->since)
        return false;
    if (q->broker && strcmp(str(f, "brokerName"), q->broker) != 0 &&
        strcmp(str(f, "brokerAddr"), q->broker) != 0)
        return false;
    if (q->topic && strcmp(str(f, "topic"), q->topic) != 0)
        return false;
    return true;
}

static int print_admin_row(audit_q_t *q, uint64_t seq, const cJSON *rec)
{
    char when[40];
    const cJSON *e, *detail = cJSON_GetObjectItemCaseSensitive(rec, "detail");
    const char *body = str(rec, "body");
    ns_buf_t *b = &q->line;
    ns_buf_reset(b);
    ctl_format_time(num(rec, "time"), when, sizeof when);
    ns_buf_printf(b, "%-6llu %-24s %-21s %-26s %-7s", (unsigned long long)seq, when,
                  ctl_txt(str(rec, "peer")), ctl_txt(str(rec, "request")),
                  ctl_txt(str(rec, "result")));
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(rec, "fields"))
    {
        ns_buf_printf(b, " %s=%s", ctl_txt(e->string),
                      cJSON_IsString(e) ? ctl_txt(e->valuestring) : "?");
    }
    if (*body) { /* one line: the body's newlines shown as ';' */
        ns_buf_append_str(b, " body=");
        for (const char *p = body, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
            nl = strchr(p, '\n');
            if (p != body)
                ns_buf_append_u8(b, ';');
            ns_buf_append_escaped(b, p, nl ? (size_t)(nl - p) : strlen(p), NS_ESC_BACKSLASH);
        }
    }
    if (*str(rec, "remark"))
        ns_buf_printf(b, " remark=\"%s\"", ctl_txt(str(rec, "remark")));
    if (cJSON_IsObject(detail)) {
        char *d = cJSON_PrintUnformatted(detail);
        ns_buf_printf(b, " %s", ctl_txt_json(d ? d : ""));
        free(d);
    }
    if (ns_buf_append_u8(b, '\n') != NS_OK)
        return NS_ENOMEM;
    fwrite(b->data, 1, b->len, stdout);
    return 0;
}

static int admin_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    audit_q_t *q = ctx;
    cJSON *rec = cJSON_ParseWithLength(json, len);
    int rc = 0;
    q->total++;
    if (rec == NULL || !cJSON_IsObject(rec)) {
        ctl_err("warning: admin audit record %llu is not a JSON object; skipped",
                (unsigned long long)seq);
    } else if (admin_matches(q, rec)) {
        q->shown++;
        rc = q->json ? print_json(seq, rec) : print_admin_row(q, seq, rec);
    }
    cJSON_Delete(rec);
    return rc;
}

static int audit_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    audit_q_t *q = ctx;
    cJSON *rec = cJSON_ParseWithLength(json, len);
    int rc = 0;
    q->total++;
    if (rec == NULL || !cJSON_IsObject(rec)) {
        ctl_err("warning: audit record %llu is not a JSON object; skipped",
                (unsigned long long)seq);
    } else if (matches(q, rec)) {
        q->shown++;
        rc = q->json ? print_json(seq, rec) : print_row(q, seq, rec);
    }
    cJSON_Delete(rec);
    return rc;
}

int ctl_cmd_audit(int argc, char **argv)
{
    const char *dir = NULL, *since = NULL;
    audit_q_t q = {0};
    bool admin = false;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},    {"-d", &dir, NULL},
                        {"--broker", &q.broker, NULL}, {"--topic", &q.topic, NULL},
                        {"--since", &since, NULL},     {"--json", NULL, &q.json},
                        {"--admin", NULL, &admin},     {NULL, NULL, NULL}};
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    int rc = ctl_parse("audit", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL && (dir = ctl_default_data_dir()) == NULL)
        return ctl_missing("audit", "--data-dir");
    if (since) {
        if (ctl_parse_time(since, &q.since) != NS_OK) {
            fprintf(stderr,
                    "namesrvctl audit: --since '%s' is neither ms since the epoch nor "
                    "an ISO-8601 date (YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z])\n",
                    since);
            return CTL_USAGE;
        }
        q.has_since = true;
    }
    if ((rc = ctl_store_open_ro(dir, &st)) != CTL_OK)
        return rc;
    if (!q.json && admin)
        printf("%-6s %-24s %-21s %-26s %-7s %s\n", "SEQ", "TIME (UTC)", "PEER", "REQUEST", "RESULT",
               "FIELDS");
    else if (!q.json)
        printf("%-6s %-24s %-16s %-21s %-44s %s\n", "SEQ", "TIME (UTC)", "BROKER", "ADDR",
               "VERSION counter/timestamp/stateVersion", "TOPICS (+added ~changed -removed)");
    int nrc = ns_txn_begin(st, false, &t);
    if (admin)
        nrc = nrc ? nrc : ns_admin_audit_iter(t, 0, admin_cb, &q);
    else
        nrc = nrc ? nrc : ns_audit_iter(t, audit_cb, &q);
    ns_txn_abort(t);
    if (nrc != NS_OK) {
        ctl_err("reading the audit history of %s failed: %s", dir, ns_strerror(nrc));
        rc = ctl_exit_for(nrc);
    } else if (!q.json) {
        printf("%zu of %zu record(s)\n", q.shown, q.total);
    }
    ns_buf_free(&q.line);
    ns_store_close(st);
    return rc;
}
