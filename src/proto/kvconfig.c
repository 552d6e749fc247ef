/* kvconfig.c - Java's kvConfig.json, {"configTable":{ns:{key:"value"}}}
 * (docs/protocol.md §7.2), and the same table inside a dump (jsondoc.h).
 */
#include <stdio.h>
#include <string.h>

#include "ns/err.h"
#include "ns/jsondoc.h"
#include "ns/names.h"

/* "<path>: <what>" into err; NS_EINVAL. */
static int bad(char *err, size_t errlen, const char *path, const char *what, const char *detail)
{
    snprintf(err, errlen, "%s: %s%s", path, what, detail ? detail : "");
    return NS_EINVAL;
}

/* Names unique within obj (at path); NS_OK, NS_EINVAL or NS_ENOMEM. */
static int unique(const cJSON *obj, const char *path, char *err, size_t errlen)
{
    bool oom = false;
    const char *dup = ns_json_dup_member(obj, &oom);
    char what[600];
    if (oom) {
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    if (dup == NULL)
        return NS_OK;
    snprintf(what, sizeof what, "member '%.500s' appears twice", dup);
    return bad(err, errlen, path, what, NULL);
}

static int check_ns(const cJSON *ns, const char *path, bool allow_null, ns_kvconfig_counts_t *c,
                    char *err, size_t errlen)
{
    char kp[600];
    const char *why;
    int rc = unique(ns, path, err, errlen);
    for (const cJSON *v = ns->child; v && rc == NS_OK; v = v->next) {
        ns_json_path_key(kp, sizeof kp, path, v->string);
        if ((why = ns_name_problem_stored(v->string, strlen(v->string))) != NULL)
            return bad(err, errlen, kp, "not a valid key: ", why);
        if (allow_null && cJSON_IsNull(v)) { /* kvConfig.json: Java drops null values */
            c->nulls++;
            continue;
        }
        if (!cJSON_IsString(v))
            return bad(err, errlen, kp, "expected a string, found ", ns_json_type_name(v));
        c->keys++;
    }
    return rc;
}

int ns_kvconfig_check(const cJSON *table, const char *base, bool allow_null,
                      ns_kvconfig_counts_t *c, char *err, size_t errlen)
{
    char path[512];
    const char *why;
    int rc = unique(table, base, err, errlen);
    for (const cJSON *ns = table->child; ns && rc == NS_OK; ns = ns->next) {
        ns_json_path_key(path, sizeof path, base, ns->string);
        if (ns->string[0] == 0)
            return bad(err, errlen, path, "empty namespace name", NULL);
        if ((why = ns_name_problem_stored(ns->string, strlen(ns->string))) != NULL)
            return bad(err, errlen, path, "not a valid namespace name: ", why);
        if (!cJSON_IsObject(ns))
            return bad(err, errlen, path, "expected an object, found ", ns_json_type_name(ns));
        if ((rc = check_ns(ns, path, allow_null, c, err, errlen)) == NS_OK)
            c->namespaces++;
    }
    return rc;
}

int ns_kvconfig_parse(const char *text, size_t len, cJSON **root, const cJSON **table,
                      ns_kvconfig_counts_t *c, char *err, size_t errlen)
{
    *table = NULL;
    int rc = ns_json_parse_object(text, len, root, err, errlen);
    if (rc != NS_OK)
        return rc;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(*root, "configTable");
    bool oom = false;
    const char *dup = ns_json_dup_member(*root, &oom);
    if (oom) {
        snprintf(err, errlen, "out of memory");
        rc = NS_ENOMEM;
    } else if (dup && strcmp(dup, "configTable") == 0) {
        rc = bad(err, errlen, "$", "member 'configTable' appears twice", NULL);
    } else if (t == NULL) {
        rc = bad(err, errlen, "$.configTable", "missing", NULL);
    } else if (!cJSON_IsObject(t)) {
        rc = bad(err, errlen, "$.configTable", "expected an object, found ", ns_json_type_name(t));
    } else {
        rc = ns_kvconfig_check(t, "$.configTable", true, c, err, errlen);
    }
    if (rc != NS_OK) {
        cJSON_Delete(*root);
        *root = NULL;
        return rc;
    }
    *table = t;
    return NS_OK;
}
