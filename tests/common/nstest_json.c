/* nstest_json.c - order-insensitive comparison of responses (nstest_json.h). */
#include "nstest_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/remoting.h"

static void set_why(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t whylen, const char *fmt, ...)
{
    if (why == NULL || whylen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}

static const char *type_name(const cJSON *v)
{
    switch (v->type & 0xFF) {
    case cJSON_False:
    case cJSON_True:
        return "boolean";
    case cJSON_NULL:
        return "null";
    case cJSON_Number:
        return "number";
    case cJSON_String:
        return "string";
    case cJSON_Array:
        return "array";
    case cJSON_Object:
        return "object";
    default:
        return "invalid";
    }
}

/* Short text of a value for messages (caller frees). */
static char *short_text(const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    if (s && strlen(s) > 160)
        strcpy(s + 150, "...");
    return s;
}

static bool equiv(const cJSON *a, const cJSON *b, const char *path, char *why, size_t whylen);

static bool equiv_object(const cJSON *a, const cJSON *b, const char *path, char *why, size_t whylen)
{
    char sub[1024];
    int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
    for (const cJSON *m = a->child; m; m = m->next) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, m->string);
        snprintf(sub, sizeof sub, "%s.%s", path, m->string);
        if (o == NULL) {
            set_why(why, whylen, "%s: member missing in actual", sub);
            return false;
        }
        if (!equiv(m, o, sub, why, whylen))
            return false;
    }
    if (na != nb) {
        for (const cJSON *m = b->child; m; m = m->next) {
            if (cJSON_GetObjectItemCaseSensitive(a, m->string) == NULL) {
                set_why(why, whylen, "%s.%s: unexpected member in actual", path, m->string);
                return false;
            }
        }
        set_why(why, whylen, "%s: %d members expected, %d actual (duplicate keys?)", path, na, nb);
        return false;
    }
    return true;
}

/* The unused element of arr most like x (objects: most equal members), for
 * a helpful message; NULL when every element is used. */
static const cJSON *closest(const cJSON *x, const cJSON *arr, const bool *used)
{
    const cJSON *best = NULL;
    int best_score = -1, j = 0;
    for (const cJSON *y = arr->child; y; y = y->next, j++) {
        if (used[j])
            continue;
        int score = 0;
        if (cJSON_IsObject(x) && cJSON_IsObject(y)) {
            for (const cJSON *m = x->child; m; m = m->next) {
                const cJSON *o = cJSON_GetObjectItemCaseSensitive(y, m->string);
                score += o != NULL && equiv(m, o, "", NULL, 0);
            }
        }
        if (score > best_score) {
            best = y;
            best_score = score;
        }
    }
    return best;
}

static bool equiv_array(const cJSON *a, const cJSON *b, const char *path, char *why, size_t whylen)
{
    int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
    if (na != nb) {
        set_why(why, whylen, "%s: %d elements expected, %d actual", path, na, nb);
        return false;
    }
    /* fast path: same order */
    bool in_order = true;
    for (const cJSON *x = a->child, *y = b->child; x && y; x = x->next, y = y->next) {
        if (!equiv(x, y, path, NULL, 0)) {
            in_order = false;
            break;
        }
    }
    if (in_order)
        return true;
    /* multiset: equivalence is an equivalence relation, so greedy matching is
     * exact */
    bool *used = calloc((size_t)nb + 1, sizeof *used);
    bool ok = true;
    int i = 0;
    for (const cJSON *x = a->child; x && ok; x = x->next, i++) {
        int j = 0;
        bool found = false;
        for (const cJSON *y = b->child; y; y = y->next, j++) {
            if (!used[j] && equiv(x, y, path, NULL, 0)) {
                used[j] = found = true;
                break;
            }
        }
        if (!found) {
            ok = false;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            const cJSON *near = closest(x, b, used);
            char detail[512] = "";
            if (near)
                equiv(x, near, sub, detail, sizeof detail);
            char *t = short_text(x);
            set_why(why, whylen, "%s: expected element %s has no match in actual%s%s%s", sub,
                    t ? t : "?", detail[0] ? " (closest: " : "", detail, detail[0] ? ")" : "");
            free(t);
        }
    }
    free(used);
    return ok;
}

static bool equiv(const cJSON *a, const cJSON *b, const char *path, char *why, size_t whylen)
{
    int ta = a->type & 0xFF, tb = b->type & 0xFF;
    if (ta != tb) {
        set_why(why, whylen, "%s: %s expected, %s actual", path, type_name(a), type_name(b));
        return false;
    }
    switch (ta) {
    case cJSON_False:
    case cJSON_True:
    case cJSON_NULL:
        return true;
    case cJSON_Number:
        if (a->valuedouble != b->valuedouble) {
            set_why(why, whylen, "%s: %.17g expected, %.17g actual", path, a->valuedouble,
                    b->valuedouble);
            return false;
        }
        return true;
    case cJSON_String:
        if (strcmp(a->valuestring, b->valuestring) != 0) {
            set_why(why, whylen, "%s: \"%s\" expected, \"%s\" actual", path, a->valuestring,
                    b->valuestring);
            return false;
        }
        return true;
    case cJSON_Array:
        return equiv_array(a, b, path, why, whylen);
    case cJSON_Object:
        return equiv_object(a, b, path, why, whylen);
    default:
        set_why(why, whylen, "%s: unexpected JSON value type", path);
        return false;
    }
}

/* fastjson text -> cJSON tree, or NULL when it is not JSON. */
static cJSON *parse_fastjson(const uint8_t *p, size_t n)
{
    ns_buf_t norm = NS_BUF_INIT;
    cJSON *v = NULL;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
        i++;
    if (i == n || (p[i] != '{' && p[i] != '['))
        goto out; /* bodies we compare as JSON are objects or arrays */
    if (ns_fastjson_normalize(p, n, &norm) != NS_OK || norm.data == NULL)
        goto out;
    v = cJSON_ParseWithLengthOpts((const char *)norm.data, norm.len, NULL, false);
out:
    ns_buf_free(&norm);
    return v;
}

bool nstest_json_equiv(const char *expected, size_t ne, const char *actual, size_t na, char *why,
                       size_t whylen)
{
    cJSON *a = parse_fastjson((const uint8_t *)expected, ne);
    cJSON *b = parse_fastjson((const uint8_t *)actual, na);
    bool ok = false;
    if (a == NULL)
        set_why(why, whylen, "expected text is not JSON");
    else if (b == NULL)
        set_why(why, whylen, "actual text is not JSON");
    else
        ok = equiv(a, b, "$", why, whylen);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return ok;
}

bool nstest_body_equiv(const uint8_t *expected, size_t ne, const uint8_t *actual, size_t na,
                       char *why, size_t whylen)
{
    if (ne == 0 || na == 0) {
        if (ne == na)
            return true;
        set_why(why, whylen, "body: %zu bytes expected, %zu actual", ne, na);
        return false;
    }
    cJSON *a = parse_fastjson(expected, ne);
    if (a == NULL) { /* not JSON: bytes */
        if (ne == na && memcmp(expected, actual, ne) == 0)
            return true;
        size_t k = 0;
        while (k < ne && k < na && expected[k] == actual[k])
            k++;
        set_why(why, whylen, "body (not JSON): first difference at byte %zu", k);
        return false;
    }
    cJSON *b = parse_fastjson(actual, na);
    bool ok = false;
    if (b == NULL)
        set_why(why, whylen, "body: expected JSON, actual body does not parse as JSON");
    else
        ok = equiv(a, b, "$", why, whylen);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return ok;
}

static bool same_str(const char *a, size_t na, const char *b, size_t nb)
{
    if (a == NULL || b == NULL)
        return a == b;
    return na == nb && memcmp(a, b, na) == 0;
}

nstest_match_t nstest_frame_compare(const uint8_t *expected, size_t ne, const uint8_t *actual,
                                    size_t na, char *why, size_t whylen)
{
    if (ne == na && memcmp(expected, actual, ne) == 0)
        return NSTEST_SAME_BYTES;
    nstest_match_t res = NSTEST_DIFFERENT;
    ns_cmd_msg_t e, a;
    ns_cmd_msg_init(&e);
    ns_cmd_msg_init(&a);
    if (ns_remoting_decode(expected, ne, &e) != NS_OK) {
        set_why(why, whylen, "expected frame does not decode");
        goto out;
    }
    if (ns_remoting_decode(actual, na, &a) != NS_OK) {
        set_why(why, whylen, "actual frame does not decode");
        goto out;
    }
    const ns_cmd_t *x = &e.cmd, *y = &a.cmd;
    if (x->code != y->code) {
        set_why(why, whylen, "code: %d expected, %d actual", x->code, y->code);
        goto out;
    }
    if (x->flag != y->flag) {
        set_why(why, whylen, "flag: %d expected, %d actual", x->flag, y->flag);
        goto out;
    }
    if (x->opaque != y->opaque) {
        set_why(why, whylen, "opaque: %d expected, %d actual", x->opaque, y->opaque);
        goto out;
    }
    if (!same_str(x->remark, x->remark_len, y->remark, y->remark_len)) {
        set_why(why, whylen, "remark: \"%s\" expected, \"%s\" actual",
                x->remark ? x->remark : "(none)", y->remark ? y->remark : "(none)");
        goto out;
    }
    for (size_t i = 0; i < x->n_ext; i++) {
        const ns_ext_field_t *f = &x->ext[i];
        const char *v = ns_cmd_ext_get(y, f->key);
        if (v == NULL) {
            set_why(why, whylen, "extFields.%s: missing in actual (expected \"%s\")", f->key,
                    f->val);
            goto out;
        }
        if (!same_str(f->val, f->val_len, v, strlen(v))) {
            set_why(why, whylen, "extFields.%s: \"%s\" expected, \"%s\" actual", f->key, f->val, v);
            goto out;
        }
    }
    for (size_t i = 0; i < y->n_ext; i++) {
        if (ns_cmd_ext_get(x, y->ext[i].key) == NULL) {
            set_why(why, whylen, "extFields.%s: unexpected in actual (\"%s\")", y->ext[i].key,
                    y->ext[i].val);
            goto out;
        }
    }
    if (!nstest_body_equiv(x->body, x->body_len, y->body, y->body_len, why, whylen))
        goto out;
    res = NSTEST_EQUIVALENT;
out:
    ns_cmd_msg_free(&e);
    ns_cmd_msg_free(&a);
    return res;
}

static void print_text(const char *label, const char *what, const uint8_t *p, size_t n)
{
    const size_t max = 4000;
    printf("%s %s (%zu bytes): ", label, what, n);
    for (size_t i = 0; i < n && i < max; i++) {
        uint8_t c = p[i];
        if (c == '\n')
            printf("\\n");
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    if (n > max)
        printf("...");
    putchar('\n');
}

void nstest_frame_print(const char *label, const uint8_t *frame, size_t n)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    if (frame == NULL) {
        printf("%s (no frame)\n", label);
    } else if (ns_remoting_decode(frame, n, &m) != NS_OK) {
        print_text(label, "undecodable frame", frame, n);
    } else {
        const ns_cmd_t *c = &m.cmd;
        printf("%s header: type=%s code=%d flag=%d opaque=%d version=%d remark=%s%s%s\n", label,
               c->serialize_type == NS_SERIALIZE_JSON ? "JSON" : "ROCKETMQ", c->code, c->flag,
               c->opaque, c->version, c->remark ? "\"" : "", c->remark ? c->remark : "(none)",
               c->remark ? "\"" : "");
        printf("%s extFields:%s", label, c->has_ext ? "" : " (absent)");
        for (size_t i = 0; i < c->n_ext; i++)
            printf(" %s=%s", c->ext[i].key, c->ext[i].val);
        putchar('\n');
        print_text(label, "body", c->body, c->body_len);
    }
    ns_cmd_msg_free(&m);
}
