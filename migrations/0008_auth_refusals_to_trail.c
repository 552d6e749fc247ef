/* 0008_auth_refusals_to_trail.c - authentication refusals join the admin
 * audit trail: every record of auth_refusals (v6) is appended to
 * admin_audit in the trail's form, oldest first, after the records already
 * there; then auth_refusals and its meta "auth_refusal_seq" go.
 *
 * Old record: {"time","peer","code","request","accessKey","reason",
 * "suppressedBefore"}. New one (src/daemon/core/trail.h):
 * {"time","peer","code","request","fields":{"AccessKey"?},"result":"refused",
 *  "responseCode":16,"remark":reason,"detail":{"auth":class,"accessKey",
 *  "unrecordedBefore","migrated":true}}, class named from the reason's text
 * as the server names it now (metrics.h NS_M_AUTH_REFUSAL_MAP). A record
 * that is not a JSON object is kept as the remark of an otherwise empty one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "migrations.h"

#define NO_PERMISSION 16 /* RocketMQ's response code */

static const char *reason_class(const char *why)
{
    static const struct {
        const char *text, *label;
    } map[] = {{"needs a signed request", "unsigned"},
               {"signature check failed", "bad_signature"},
               {"cannot check the signature", "store_error"},
               {"source address", "address"},
               {"needs role", "role"},
               {"not granted broker name", "broker_name"}};
    for (size_t i = 0; why && i < sizeof map / sizeof map[0]; i++)
        if (strstr(why, map[i].text))
            return map[i].label;
    return "other";
}

/* The trail form of one old record (heap text, caller frees); NULL when
 * memory runs out. */
static char *convert(const char *json, size_t len)
{
    cJSON *old = cJSON_ParseWithLength(json, len), *rec = cJSON_CreateObject();
    cJSON *fields = cJSON_CreateObject(), *detail = cJSON_CreateObject();
    char *out = NULL;
    if (rec == NULL || fields == NULL || detail == NULL)
        goto out;
    if (!cJSON_IsObject(old)) {
        char *raw = strndup(json, len);
        cJSON_AddNumberToObject(rec, "time", 0);
        cJSON_AddStringToObject(rec, "result", "refused");
        cJSON_AddNumberToObject(rec, "responseCode", NO_PERMISSION);
        cJSON_AddStringToObject(rec, "remark", raw ? raw : "");
        free(raw);
        cJSON_AddStringToObject(detail, "auth", "other");
    } else {
        const cJSON *v;
        const char *ak = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(old, "accessKey"));
        const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(old, "reason"));
        v = cJSON_GetObjectItemCaseSensitive(old, "time");
        cJSON_AddNumberToObject(rec, "time", cJSON_IsNumber(v) ? v->valuedouble : 0);
        v = cJSON_GetObjectItemCaseSensitive(old, "peer");
        cJSON_AddStringToObject(rec, "peer", cJSON_IsString(v) ? v->valuestring : "-");
        v = cJSON_GetObjectItemCaseSensitive(old, "code");
        cJSON_AddNumberToObject(rec, "code", cJSON_IsNumber(v) ? v->valuedouble : 0);
        v = cJSON_GetObjectItemCaseSensitive(old, "request");
        cJSON_AddStringToObject(rec, "request", cJSON_IsString(v) ? v->valuestring : "?");
        if (ak)
            cJSON_AddStringToObject(fields, "AccessKey", ak);
        cJSON_AddItemToObject(rec, "fields", fields);
        fields = NULL;
        cJSON_AddStringToObject(rec, "result", "refused");
        cJSON_AddNumberToObject(rec, "responseCode", NO_PERMISSION);
        cJSON_AddStringToObject(rec, "remark", why ? why : "");
        cJSON_AddStringToObject(detail, "auth", reason_class(why));
        if (ak)
            cJSON_AddStringToObject(detail, "accessKey", ak);
        else
            cJSON_AddNullToObject(detail, "accessKey");
        v = cJSON_GetObjectItemCaseSensitive(old, "suppressedBefore");
        cJSON_AddNumberToObject(detail, "unrecordedBefore", cJSON_IsNumber(v) ? v->valuedouble : 0);
    }
    cJSON_AddBoolToObject(detail, "migrated", 1);
    cJSON_AddItemToObject(rec, "detail", detail);
    detail = NULL;
    out = cJSON_PrintUnformatted(rec);
out:
    cJSON_Delete(old);
    cJSON_Delete(rec);
    cJSON_Delete(fields);
    cJSON_Delete(detail);
    return out;
}

static int meta_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t *out)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    int rc = mdb_get(txn, meta, &k, &v);
    if (rc == MDB_NOTFOUND) {
        *out = 0;
        return 0;
    }
    if (rc == 0 && v.mv_size != 8)
        return MDB_CORRUPTED;
    if (rc == 0)
        memcpy(out, v.mv_data, 8); /* as ns_meta_put_u64 writes it */
    return rc;
}

int ns_migration_0008_auth_refusals_to_trail(MDB_txn *txn)
{
    MDB_dbi old, trail, meta;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    uint64_t seq = 0;
    int rc = mdb_dbi_open(txn, "auth_refusals", 0, &old);
    if (rc == MDB_NOTFOUND)
        return 0; /* nothing to move */
    if (rc != 0 || (rc = mdb_dbi_open(txn, "admin_audit", MDB_CREATE, &trail)) != 0 ||
        (rc = mdb_dbi_open(txn, "meta", 0, &meta)) != 0 ||
        (rc = meta_u64(txn, meta, "admin_audit_seq", &seq)) != 0 ||
        (rc = mdb_cursor_open(txn, old, &cur)) != 0)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        char *rec = convert(v.mv_data, v.mv_size);
        if (rec == NULL) {
            rc = ENOMEM;
            break;
        }
        uint8_t kb[8];
        seq++;
        for (int i = 0; i < 8; i++)
            kb[i] = (uint8_t)(seq >> (56 - 8 * i));
        MDB_val nk = {8, kb}, nv = {strlen(rec), rec};
        rc = mdb_put(txn, trail, &nk, &nv, MDB_APPEND);
        free(rec);
        if (rc != 0)
            break;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND)
        return rc;
    MDB_val sk = {15, "admin_audit_seq"}, sv = {8, &seq};
    MDB_val ok = {16, "auth_refusal_seq"};
    if ((rc = mdb_put(txn, meta, &sk, &sv, 0)) != 0)
        return rc;
    rc = mdb_del(txn, meta, &ok, NULL);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    return mdb_drop(txn, old, 1); /* 1: delete the table itself */
}
