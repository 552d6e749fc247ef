/* remoting.c - RocketMQ remoting frame codec (include/ns/remoting.h,
 * PROTOCOL.md §1.2-§1.5).
 *
 * Decoding writes every string (remark, ext keys and values) into the
 * ns_cmd_msg_t arena, NUL-terminated. The arena may be reallocated while a
 * header is being decoded, so string positions are kept as arena offsets
 * until the end and turned into pointers once (fix_pointers). The arena and
 * the ext array are reused across decodes: a msg that decodes many frames
 * stops allocating once it has seen the largest header.
 *
 * Encoding appends to a caller-owned ns_buf_t; on any error the buffer is
 * rolled back to its previous length.
 */
#include "ns/remoting.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/hash.h"

#define HEADER_LEN_MAX 0xFFFFFFu /* 24-bit headerLength */
#define BIN_FIXED_LEN 17         /* code..remarkLength of a binary header */

/* ---- msg ---------------------------------------------------------------- */

void ns_cmd_msg_init(ns_cmd_msg_t *m)
{
    memset(&m->cmd, 0, sizeof m->cmd);
    ns_buf_init(&m->arena);
    m->ext_storage = NULL;
    m->ext_cap = 0;
    m->ext_index = NULL;
    m->ext_index_cap = 0;
}

void ns_cmd_msg_free(ns_cmd_msg_t *m)
{
    ns_buf_free(&m->arena);
    free(m->ext_storage);
    free(m->ext_index);
    ns_cmd_msg_init(m);
}

/* Copies n bytes and a NUL to *cursor; returns where they went. */
static const char *put_str(char **cursor, const char *p, size_t n)
{
    char *at = *cursor;
    if (n)
        memcpy(at, p, n);
    at[n] = 0;
    *cursor += n + 1;
    return at;
}

ns_cmd_t *ns_cmd_dup(const ns_cmd_t *src)
{
    size_t size = sizeof *src + src->n_ext * sizeof(ns_ext_field_t) + src->body_len +
                  (src->remark ? src->remark_len + 1 : 0);
    for (size_t i = 0; i < src->n_ext; i++)
        size += src->ext[i].key_len + 1 + src->ext[i].val_len + 1;
    ns_cmd_t *c = malloc(size);
    if (c == NULL)
        return NULL;
    *c = *src;
    ns_ext_field_t *ext = (ns_ext_field_t *)(c + 1);
    char *cursor = (char *)(ext + src->n_ext);
    for (size_t i = 0; i < src->n_ext; i++) {
        ext[i] = src->ext[i];
        ext[i].key = put_str(&cursor, src->ext[i].key, src->ext[i].key_len);
        ext[i].val = put_str(&cursor, src->ext[i].val, src->ext[i].val_len);
    }
    c->ext = src->n_ext ? ext : NULL;
    if (src->remark)
        c->remark = put_str(&cursor, src->remark, src->remark_len);
    if (src->body_len) {
        memcpy(cursor, src->body, src->body_len);
        c->body = (const uint8_t *)cursor;
    } else {
        c->body = NULL;
    }
    return c;
}

/* While decoding, ext_storage[i].key/.val and the remark hold arena offsets
 * (stored in the pointer fields) instead of pointers. */
static const char *off_ptr(size_t off)
{
    return (const char *)(uintptr_t)off;
}

static size_t ptr_off(const char *p)
{
    return (size_t)(uintptr_t)p;
}

/* Copies [s, s+n) plus a NUL into the arena; *off = where it starts. */
static int arena_put(ns_buf_t *a, const void *s, size_t n, size_t *off)
{
    *off = a->len;
    if (ns_buf_append(a, s, n) != NS_OK)
        return NS_ENOMEM;
    return ns_buf_append_u8(a, 0);
}

static int ext_reserve(ns_cmd_msg_t *m, size_t n)
{
    if (n <= m->ext_cap)
        return NS_OK;
    size_t cap = m->ext_cap ? m->ext_cap : 16;
    while (cap < n)
        cap *= 2;
    ns_ext_field_t *p = realloc(m->ext_storage, cap * sizeof *p);
    if (p == NULL)
        return NS_ENOMEM;
    m->ext_storage = p;
    m->ext_cap = cap;
    return NS_OK;
}

/* Below this many entries a duplicate is looked for by a plain walk; above
 * it, through the hash index (ext_index). */
#define EXT_INDEX_MIN 16

static uint64_t key_hash(const uint8_t *k, size_t n)
{
    return ns_hash(k, n); /* keyed: a peer cannot aim keys at one slot */
}

/* Slot of the index where key [k, k+n) is, or the empty slot where it would
 * go. The index is at most half full, so the probe ends. */
static size_t index_find(const ns_cmd_msg_t *m, const uint8_t *k, size_t n)
{
    const uint8_t *base = m->arena.data;
    size_t mask = m->ext_index_cap - 1, i = (size_t)key_hash(k, n) & mask;
    for (; m->ext_index[i] != 0; i = (i + 1) & mask) {
        const ns_ext_field_t *e = &m->ext_storage[m->ext_index[i] - 1];
        if (e->key_len == n && memcmp(base + ptr_off(e->key), k, n) == 0)
            break;
    }
    return i;
}

/* Makes room for n entries in the index (at most half full), re-placing the
 * current entries; amortised O(1) per entry. */
static int index_reserve(ns_cmd_msg_t *m, size_t n)
{
    if (n * 2 <= m->ext_index_cap)
        return NS_OK;
    if (n > UINT32_MAX / 4)
        return NS_ENOMEM;
    size_t cap = m->ext_index_cap ? m->ext_index_cap : 64;
    while (cap < n * 2)
        cap *= 2;
    uint32_t *idx = calloc(cap, sizeof *idx);
    if (idx == NULL)
        return NS_ENOMEM;
    free(m->ext_index);
    m->ext_index = idx;
    m->ext_index_cap = cap;
    const uint8_t *base = m->arena.data;
    for (size_t i = 0; i < m->cmd.n_ext; i++) {
        const ns_ext_field_t *e = &m->ext_storage[i];
        idx[index_find(m, base + ptr_off(e->key), e->key_len)] = (uint32_t)(i + 1);
    }
    return NS_OK;
}

/* Drops the index at the end of a decode (big headers are rare; a msg that
 * decodes small ones keeps no large table around). */
static void index_drop(ns_cmd_msg_t *m)
{
    free(m->ext_index);
    m->ext_index = NULL;
    m->ext_index_cap = 0;
}

/* Position of an existing entry with key [koff, koff+klen), or n_ext. */
static size_t ext_find(ns_cmd_msg_t *m, size_t koff, size_t klen, size_t *slot)
{
    const uint8_t *base = m->arena.data;
    if (m->ext_index_cap != 0) {
        *slot = index_find(m, base + koff, klen);
        return m->ext_index[*slot] ? m->ext_index[*slot] - 1 : m->cmd.n_ext;
    }
    for (size_t i = 0; i < m->cmd.n_ext; i++) {
        const ns_ext_field_t *e = &m->ext_storage[i];
        if (e->key_len == klen && memcmp(base + ptr_off(e->key), base + koff, klen) == 0)
            return i;
    }
    return m->cmd.n_ext;
}

/* Adds key/value (already in the arena, at offsets) to the ext list. A key
 * that is already present gets the new value (Java decodes into a HashMap:
 * the last occurrence wins) but keeps its first position. */
static int ext_add(ns_cmd_msg_t *m, size_t koff, size_t klen, size_t voff, size_t vlen)
{
    size_t n = m->cmd.n_ext, slot = 0;
    if (n >= EXT_INDEX_MIN && index_reserve(m, n + 1) != NS_OK)
        return NS_ENOMEM;
    size_t i = ext_find(m, koff, klen, &slot);
    if (i < n) {
        m->ext_storage[i].val = off_ptr(voff);
        m->ext_storage[i].val_len = vlen;
        return NS_OK;
    }
    if (ext_reserve(m, n + 1) != NS_OK)
        return NS_ENOMEM;
    ns_ext_field_t *e = &m->ext_storage[m->cmd.n_ext++];
    e->key = off_ptr(koff);
    e->key_len = klen;
    e->val = off_ptr(voff);
    e->val_len = vlen;
    if (m->ext_index_cap != 0)
        m->ext_index[slot] = (uint32_t)(n + 1);
    return NS_OK;
}

/* Turns the offsets left by decoding into pointers into the arena. */
static void fix_pointers(ns_cmd_msg_t *m, bool has_remark, size_t remark_off)
{
    const char *base = (const char *)m->arena.data;
    if (has_remark)
        m->cmd.remark = base + remark_off;
    for (size_t i = 0; i < m->cmd.n_ext; i++) {
        m->ext_storage[i].key = base + ptr_off(m->ext_storage[i].key);
        m->ext_storage[i].val = base + ptr_off(m->ext_storage[i].val);
    }
    m->cmd.ext = m->cmd.n_ext ? m->ext_storage : NULL;
}

/* ---- framing ------------------------------------------------------------ */

int ns_frame_peek(const uint8_t *p, size_t n, size_t max_frame_bytes, size_t *frame_len)
{
    if (n < 4)
        return NS_EAGAIN;
    int32_t flen = (int32_t)ns_be32_read(p);
    if (flen < 4)
        return NS_EINVAL;
    size_t total = (size_t)flen + 4;
    if (total > max_frame_bytes)
        return NS_ETOOBIG;
    if (n < total)
        return NS_EAGAIN;
    *frame_len = total;
    return NS_OK;
}

/* ---- JSON header decode ------------------------------------------------- */

static bool is_json_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\b';
}

/* JSON number/string -> int32 (fastjson converts numeric strings too);
 * null -> 0. Out of range or anything else -> NS_EINVAL. */
static int json_i32(const cJSON *v, int32_t *out)
{
    if (cJSON_IsNull(v)) {
        *out = 0;
        return NS_OK;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d > -2147483649.0 && d < 2147483648.0))
            return NS_EINVAL;
        *out = (int32_t)d;
        return NS_OK;
    }
    if (cJSON_IsString(v)) {
        int64_t x = 0;
        const char *s = v->valuestring;
        if (ns_parse_i64(s, strlen(s), &x) != NS_OK || x < INT32_MIN || x > INT32_MAX)
            return NS_EINVAL;
        *out = (int32_t)x;
        return NS_OK;
    }
    return NS_EINVAL;
}

/* Text of a JSON number as Java would print it: integers without a decimal
 * point ("5"), anything else in the shortest form that round-trips. tmp must
 * hold 32 bytes. Returns the length. */
static size_t number_text(double d, char *tmp)
{
    int n;
    if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
        n = snprintf(tmp, 32, "%lld", (long long)d);
    } else {
        n = snprintf(tmp, 32, "%.15g", d);
        if (strtod(tmp, NULL) != d)
            n = snprintf(tmp, 32, "%.17g", d);
    }
    return n > 0 ? (size_t)n : 0;
}

/* Puts the textual form of a scalar (or compact JSON of an object/array)
 * into the arena. *present = false for null. */
static int json_text(ns_buf_t *a, const cJSON *v, bool *present, size_t *off, size_t *len)
{
    char tmp[32];
    const char *s = NULL;
    char *printed = NULL;
    int rc = NS_OK;
    *present = true;
    if (cJSON_IsNull(v)) {
        *present = false;
        return NS_OK;
    } else if (cJSON_IsString(v)) {
        s = v->valuestring;
        *len = strlen(s);
    } else if (cJSON_IsNumber(v)) {
        *len = number_text(v->valuedouble, tmp);
        s = tmp;
    } else if (cJSON_IsTrue(v)) {
        s = "true";
        *len = 4;
    } else if (cJSON_IsFalse(v)) {
        s = "false";
        *len = 5;
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        printed = cJSON_PrintUnformatted(v);
        if (printed == NULL)
            return NS_ENOMEM;
        s = printed;
        *len = strlen(s);
    } else {
        return NS_EINVAL;
    }
    rc = arena_put(a, s, *len, off);
    free(printed);
    return rc;
}

static int json_ext(ns_cmd_msg_t *m, const cJSON *obj)
{
    m->cmd.n_ext = 0;
    index_drop(m);
    if (cJSON_IsNull(obj)) {
        m->cmd.has_ext = false;
        return NS_OK;
    }
    if (!cJSON_IsObject(obj))
        return NS_EINVAL;
    m->cmd.has_ext = true;
    for (const cJSON *it = obj->child; it != NULL; it = it->next) {
        size_t koff = 0, voff = 0, vlen = 0;
        bool present = false;
        int rc = json_text(&m->arena, it, &present, &voff, &vlen);
        if (rc != NS_OK)
            return rc;
        if (!present || it->string == NULL)
            continue;
        size_t klen = strlen(it->string);
        if (arena_put(&m->arena, it->string, klen, &koff) != NS_OK)
            return NS_ENOMEM;
        if (ext_add(m, koff, klen, voff, vlen) != NS_OK)
            return NS_ENOMEM;
    }
    return NS_OK;
}

static int json_language(const cJSON *v, int32_t *out)
{
    if (cJSON_IsString(v)) {
        *out = ns_language_code(v->valuestring, strlen(v->valuestring));
    } else if (cJSON_IsNumber(v)) { /* fastjson accepts an enum ordinal */
        double d = v->valuedouble;
        *out =
            (d >= 0 && d <= 255 && ns_language_name((int)d) != NULL) ? (int32_t)d : NS_LANG_OTHER;
    } else if (cJSON_IsNull(v)) {
        *out = NS_LANG_JAVA;
    } else {
        return NS_EINVAL;
    }
    return NS_OK;
}

static bool has_nul_escape(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 6 <= n; i++)
        if (p[i] == '\\' && memcmp(p + i + 1, "u0000", 5) == 0)
            return true;
    return false;
}

static int decode_json(const uint8_t *hdr, size_t hdr_len, ns_cmd_msg_t *m)
{
    int rc = NS_EINVAL;
    cJSON *root = NULL;
    uint8_t *copy = NULL;
    const char *end = NULL;
    bool has_remark = false;
    size_t remark_off = 0;

    if (has_nul_escape(hdr, hdr_len)) {
        /* a NUL would end the C string early: decode it as U+0001 */
        if ((copy = malloc(hdr_len)) == NULL) {
            rc = NS_ENOMEM;
            goto cleanup;
        }
        memcpy(copy, hdr, hdr_len);
        ns_json_nul_to_soh(copy, hdr_len);
        hdr = copy;
    }
    root = cJSON_ParseWithLengthOpts((const char *)hdr, hdr_len, &end, false);
    if (root == NULL || !cJSON_IsObject(root))
        goto cleanup;
    for (const uint8_t *q = (const uint8_t *)end; q < hdr + hdr_len; q++)
        if (!is_json_space(*q))
            goto cleanup;

    for (const cJSON *it = root->child; it != NULL; it = it->next) {
        const char *k = it->string;
        int r = NS_OK;
        if (k == NULL)
            continue;
        if (strcmp(k, "code") == 0) {
            r = json_i32(it, &m->cmd.code);
        } else if (strcmp(k, "flag") == 0) {
            r = json_i32(it, &m->cmd.flag);
        } else if (strcmp(k, "opaque") == 0) {
            r = json_i32(it, &m->cmd.opaque);
        } else if (strcmp(k, "version") == 0) {
            r = json_i32(it, &m->cmd.version);
        } else if (strcmp(k, "language") == 0) {
            r = json_language(it, &m->cmd.language);
        } else if (strcmp(k, "remark") == 0) {
            r = json_text(&m->arena, it, &has_remark, &remark_off, &m->cmd.remark_len);
            if (!has_remark)
                m->cmd.remark_len = 0;
        } else if (strcmp(k, "extFields") == 0) {
            r = json_ext(m, it);
        }
        if (r != NS_OK) {
            rc = r;
            goto cleanup;
        }
    }
    fix_pointers(m, has_remark, remark_off);
    rc = NS_OK;

cleanup:
    cJSON_Delete(root);
    free(copy);
    return rc;
}

/* ---- JSON header: fast path -------------------------------------------- */

/* The headers real clients send are flat: numbers for code/flag/opaque/
 * version, plain strings elsewhere, an extFields object of plain strings.
 * This scanner decodes exactly that shape without building a cJSON tree;
 * anything else (escapes, nulls, nested values, numeric ext values, odd
 * spacing it does not expect) makes it give up with NS_EFALLBACK, and the
 * general cJSON decoder below handles the header from scratch. */
typedef struct {
    const uint8_t *p, *end;
} scan_t;

static void skip_ws(scan_t *s)
{
    while (s->p < s->end && is_json_space(*s->p))
        s->p++;
}

static bool scan_char(scan_t *s, uint8_t c)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string without escapes or control characters: [*str, *str+*len). */
static bool scan_plain_str(scan_t *s, const uint8_t **str, size_t *len)
{
    if (!scan_char(s, '"'))
        return false;
    const uint8_t *q = s->p;
    while (q < s->end && *q != '"') {
        if (*q == '\\' || *q < 0x20)
            return false;
        q++;
    }
    if (q >= s->end)
        return false;
    *str = s->p;
    *len = (size_t)(q - s->p);
    s->p = q + 1;
    return true;
}

static bool scan_i32(scan_t *s, int32_t *out)
{
    skip_ws(s);
    const uint8_t *q = s->p;
    bool neg = q < s->end && *q == '-';
    if (neg)
        q++;
    int64_t v = 0;
    const uint8_t *digits = q;
    while (q < s->end && *q >= '0' && *q <= '9' && q - digits < 11)
        v = v * 10 + (*q++ - '0');
    if (q == digits || (q < s->end && (*q == '.' || *q == 'e' || *q == 'E' || isdigit(*q))))
        return false;
    v = neg ? -v : v;
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    s->p = q;
    return true;
}

static bool key_is(const uint8_t *k, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(k, lit, n) == 0;
}

static int scan_ext(scan_t *s, ns_cmd_msg_t *m)
{
    if (!scan_char(s, '{'))
        return NS_EFALLBACK;
    m->cmd.has_ext = true;
    if (scan_char(s, '}'))
        return NS_OK;
    do {
        const uint8_t *k, *v;
        size_t kn, vn, koff, voff;
        if (!scan_plain_str(s, &k, &kn) || !scan_char(s, ':') || !scan_plain_str(s, &v, &vn))
            return NS_EFALLBACK;
        if (arena_put(&m->arena, k, kn, &koff) != NS_OK ||
            arena_put(&m->arena, v, vn, &voff) != NS_OK || ext_add(m, koff, kn, voff, vn) != NS_OK)
            return NS_ENOMEM;
    } while (scan_char(s, ','));
    return scan_char(s, '}') ? NS_OK : NS_EFALLBACK;
}

static int decode_json_fast(const uint8_t *hdr, size_t hdr_len, ns_cmd_msg_t *m)
{
    scan_t s = {hdr, hdr + hdr_len};
    bool has_remark = false;
    size_t remark_off = 0;
    if (!scan_char(&s, '{'))
        return NS_EFALLBACK;
    if (!scan_char(&s, '}')) {
        do {
            const uint8_t *k, *v;
            size_t kn, vn;
            int32_t num;
            if (!scan_plain_str(&s, &k, &kn) || !scan_char(&s, ':'))
                return NS_EFALLBACK;
            if (key_is(k, kn, "code") || key_is(k, kn, "flag") || key_is(k, kn, "opaque") ||
                key_is(k, kn, "version")) {
                if (!scan_i32(&s, &num))
                    return NS_EFALLBACK;
                int32_t *f = k[0] == 'c'   ? &m->cmd.code
                             : k[0] == 'f' ? &m->cmd.flag
                             : k[0] == 'o' ? &m->cmd.opaque
                                           : &m->cmd.version;
                *f = num;
            } else if (key_is(k, kn, "extFields")) {
                int rc = scan_ext(&s, m);
                if (rc != NS_OK)
                    return rc;
            } else if (key_is(k, kn, "language")) {
                if (!scan_plain_str(&s, &v, &vn))
                    return NS_EFALLBACK;
                m->cmd.language = ns_language_code((const char *)v, vn);
            } else if (key_is(k, kn, "remark")) {
                if (!scan_plain_str(&s, &v, &vn))
                    return NS_EFALLBACK;
                if (arena_put(&m->arena, v, vn, &remark_off) != NS_OK)
                    return NS_ENOMEM;
                has_remark = true;
                m->cmd.remark_len = vn;
            } else if (!scan_plain_str(&s, &v, &vn) && !scan_i32(&s, &num)) {
                return NS_EFALLBACK; /* an unknown member that is not a plain value */
            }
        } while (scan_char(&s, ','));
        if (!scan_char(&s, '}'))
            return NS_EFALLBACK;
    }
    skip_ws(&s);
    if (s.p != s.end)
        return NS_EFALLBACK;
    fix_pointers(m, has_remark, remark_off);
    return NS_OK;
}

/* Tries the fast path, then the general decoder from a clean state. */
static int decode_json_header(const uint8_t *hdr, size_t hdr_len, ns_cmd_msg_t *m)
{
    int rc = decode_json_fast(hdr, hdr_len, m);
    if (rc != NS_EFALLBACK)
        return rc;
    uint8_t type = m->cmd.serialize_type;
    memset(&m->cmd, 0, sizeof m->cmd);
    m->cmd.serialize_type = type;
    ns_buf_reset(&m->arena);
    index_drop(m);
    return decode_json(hdr, hdr_len, m);
}

/* ---- binary header decode ----------------------------------------------- */

static int decode_binary(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m)
{
    bool has_remark = false;
    size_t remark_off = 0;
    size_t pos = BIN_FIXED_LEN;

    if (n < BIN_FIXED_LEN)
        return NS_EINVAL;
    m->cmd.code = (int16_t)ns_be16_read(hdr);
    m->cmd.language = hdr[2];
    m->cmd.version = (int16_t)ns_be16_read(hdr + 3);
    m->cmd.opaque = (int32_t)ns_be32_read(hdr + 5);
    m->cmd.flag = (int32_t)ns_be32_read(hdr + 9);

    int32_t rlen = (int32_t)ns_be32_read(hdr + 13);
    if (rlen < 0 || (size_t)rlen > n - pos)
        return NS_EINVAL;
    if (rlen > 0) {
        if (arena_put(&m->arena, hdr + pos, (size_t)rlen, &remark_off) != NS_OK)
            return NS_ENOMEM;
        has_remark = true;
        m->cmd.remark_len = (size_t)rlen;
        pos += (size_t)rlen;
    }

    if (n - pos < 4)
        return NS_EINVAL;
    int32_t elen = (int32_t)ns_be32_read(hdr + pos);
    pos += 4;
    if (elen < 0 || (size_t)elen > n - pos)
        return NS_EINVAL;
    m->cmd.has_ext = elen > 0;
    /* Bytes after the ext block are ignored, as Java does. */
    const uint8_t *q = hdr + pos, *end = hdr + pos + (size_t)elen;
    while (q < end) {
        if (end - q < 2)
            return NS_EINVAL;
        int16_t kl = (int16_t)ns_be16_read(q);
        q += 2;
        if (kl < 0 || kl > end - q)
            return NS_EINVAL;
        const uint8_t *key = q;
        q += kl;
        if (end - q < 4)
            return NS_EINVAL;
        int32_t vl = (int32_t)ns_be32_read(q);
        q += 4;
        if (vl < 0 || vl > end - q)
            return NS_EINVAL;
        const uint8_t *val = q;
        q += vl;
        if (kl == 0 || vl == 0)
            continue; /* a zero length string is null: Java drops the entry */
        size_t koff = 0, voff = 0;
        if (arena_put(&m->arena, key, (size_t)kl, &koff) != NS_OK ||
            arena_put(&m->arena, val, (size_t)vl, &voff) != NS_OK ||
            ext_add(m, koff, (size_t)kl, voff, (size_t)vl) != NS_OK)
            return NS_ENOMEM;
    }
    fix_pointers(m, has_remark, remark_off);
    return NS_OK;
}

/* ---- decode ------------------------------------------------------------- */

int ns_remoting_decode(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out)
{
    int rc = NS_EINVAL;
    ns_cmd_t *c = &out->cmd;

    memset(c, 0, sizeof *c);
    ns_buf_reset(&out->arena);
    index_drop(out);
    if (frame_len < 8 || (size_t)ns_be32_read(frame) != frame_len - 4)
        goto cleanup;
    uint32_t word = ns_be32_read(frame + 4);
    uint8_t type = (uint8_t)(word >> 24);
    size_t hdr_len = word & HEADER_LEN_MAX;
    if (hdr_len > frame_len - 8 || (type != NS_SERIALIZE_JSON && type != NS_SERIALIZE_ROCKETMQ))
        goto cleanup;
    /* Decoded strings never need much more room than the header itself. */
    if (ns_buf_reserve(&out->arena, hdr_len + 64) != NS_OK) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    c->serialize_type = type;
    if (type == NS_SERIALIZE_JSON)
        rc = decode_json_header(frame + 8, hdr_len, out);
    else
        rc = decode_binary(frame + 8, hdr_len, out);
    if (rc != NS_OK)
        goto cleanup;
    c->body_len = frame_len - 8 - hdr_len;
    c->body = c->body_len ? frame + 8 + hdr_len : NULL;

cleanup:
    index_drop(out);
    if (rc != NS_OK) {
        memset(c, 0, sizeof *c);
        ns_buf_reset(&out->arena);
    }
    return rc;
}

/* ---- encode ------------------------------------------------------------- */

#define PUT_LIT(b, s) ns_buf_append((b), (s), sizeof(s) - 1)

static int put_i32(ns_buf_t *b, int32_t v)
{
    char tmp[12];
    char *p = tmp + sizeof tmp;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return ns_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

/* A JSON string literal. Printable ASCII without '"' and '\\' (nearly every
 * header value) is copied in one go; anything else goes through the
 * fastjson-style escaper in buf.c, which owns the escaping rules. */
static int put_json_str(ns_buf_t *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++)
        if (u[i] < 0x20 || u[i] >= 0x7F || u[i] == '"' || u[i] == '\\')
            return ns_buf_append_json_str(b, s, n, false);
    if (ns_buf_reserve(b, n + 2) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = b->data + b->len;
    p[0] = '"';
    if (n)
        memcpy(p + 1, s, n);
    p[n + 1] = '"';
    p[n + 2] = 0;
    b->len += n + 2;
    return NS_OK;
}

static int encode_json(ns_buf_t *b, const ns_cmd_t *c)
{
    size_t est = 112 + c->remark_len;
    for (size_t i = 0; i < c->n_ext; i++)
        est += c->ext[i].key_len + c->ext[i].val_len + 6;
    const char *lang = ns_language_name(c->language);
    if (ns_buf_reserve(b, est) != NS_OK)
        return NS_ENOMEM;

    if (PUT_LIT(b, "{\"code\":") || put_i32(b, c->code))
        return NS_ENOMEM;
    if (c->has_ext) {
        bool first = true;
        if (PUT_LIT(b, ",\"extFields\":{"))
            return NS_ENOMEM;
        for (size_t i = 0; i < c->n_ext; i++) {
            const ns_ext_field_t *e = &c->ext[i];
            if (e->key == NULL || e->val == NULL)
                continue;
            if ((!first && PUT_LIT(b, ",")) || put_json_str(b, e->key, e->key_len) ||
                PUT_LIT(b, ":") || put_json_str(b, e->val, e->val_len))
                return NS_ENOMEM;
            first = false;
        }
        if (PUT_LIT(b, "}"))
            return NS_ENOMEM;
    }
    if (PUT_LIT(b, ",\"flag\":") || put_i32(b, c->flag) || PUT_LIT(b, ",\"language\":\"") ||
        ns_buf_append_str(b, lang ? lang : "OTHER") || PUT_LIT(b, "\",\"opaque\":") ||
        put_i32(b, c->opaque))
        return NS_ENOMEM;
    if (c->remark != NULL &&
        (PUT_LIT(b, ",\"remark\":") || put_json_str(b, c->remark, c->remark_len)))
        return NS_ENOMEM;
    if (PUT_LIT(b, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":") ||
        put_i32(b, c->version) || PUT_LIT(b, "}"))
        return NS_ENOMEM;
    return NS_OK;
}

static int encode_binary(ns_buf_t *b, const ns_cmd_t *c)
{
    size_t rlen = c->remark != NULL ? c->remark_len : 0;
    size_t elen = 0;
    if (rlen > INT32_MAX)
        return NS_ETOOBIG;
    if (c->has_ext) {
        for (size_t i = 0; i < c->n_ext; i++) {
            const ns_ext_field_t *e = &c->ext[i];
            if (e->key == NULL || e->val == NULL)
                continue;
            if (e->key_len > INT16_MAX || e->val_len > INT32_MAX)
                return NS_ETOOBIG;
            elen += 6 + e->key_len + e->val_len;
            if (elen > HEADER_LEN_MAX)
                return NS_ETOOBIG;
        }
    }
    if (ns_buf_reserve(b, BIN_FIXED_LEN + 4 + rlen + elen) != NS_OK)
        return NS_ENOMEM;
    if (ns_buf_append_be16(b, (uint16_t)c->code) || ns_buf_append_u8(b, (uint8_t)c->language) ||
        ns_buf_append_be16(b, (uint16_t)c->version) || ns_buf_append_be32(b, (uint32_t)c->opaque) ||
        ns_buf_append_be32(b, (uint32_t)c->flag) || ns_buf_append_be32(b, (uint32_t)rlen) ||
        ns_buf_append(b, c->remark, rlen) || ns_buf_append_be32(b, (uint32_t)elen))
        return NS_ENOMEM;
    for (size_t i = 0; elen && i < c->n_ext; i++) {
        const ns_ext_field_t *e = &c->ext[i];
        if (e->key == NULL || e->val == NULL)
            continue;
        if (ns_buf_append_be16(b, (uint16_t)e->key_len) || ns_buf_append(b, e->key, e->key_len) ||
            ns_buf_append_be32(b, (uint32_t)e->val_len) || ns_buf_append(b, e->val, e->val_len))
            return NS_ENOMEM;
    }
    return NS_OK;
}

/* Appends the length prefix, header word and header; the prefix counts
 * body_len. On error out is restored to its previous length. */
static int encode_head(ns_buf_t *out, const ns_cmd_t *c)
{
    int rc = NS_OK;
    size_t start = out->len;
    uint8_t zero[8] = {0};

    if (c->serialize_type != NS_SERIALIZE_JSON && c->serialize_type != NS_SERIALIZE_ROCKETMQ) {
        rc = NS_EINVAL;
        goto cleanup;
    }
    if (ns_buf_append(out, zero, sizeof zero) != NS_OK) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    rc = c->serialize_type == NS_SERIALIZE_JSON ? encode_json(out, c) : encode_binary(out, c);
    if (rc != NS_OK)
        goto cleanup;
    size_t hdr_len = out->len - start - 8;
    size_t body_len = c->body != NULL ? c->body_len : 0;
    if (hdr_len > HEADER_LEN_MAX || body_len > (size_t)INT32_MAX - 4 - hdr_len) {
        rc = NS_ETOOBIG;
        goto cleanup;
    }
    ns_be32_write(out->data + start, (uint32_t)(4 + hdr_len + body_len));
    ns_be32_write(out->data + start + 4, (uint32_t)c->serialize_type << 24 | (uint32_t)hdr_len);

cleanup:
    if (rc != NS_OK) {
        out->len = start;
        if (out->data != NULL)
            out->data[start] = 0;
    }
    return rc;
}

int ns_remoting_encode_header(ns_buf_t *out, const ns_cmd_t *cmd)
{
    return encode_head(out, cmd);
}

int ns_remoting_encode(ns_buf_t *out, const ns_cmd_t *cmd)
{
    size_t start = out->len;
    int rc = encode_head(out, cmd);
    if (rc != NS_OK || cmd->body == NULL || cmd->body_len == 0)
        return rc;
    if (ns_buf_append(out, cmd->body, cmd->body_len) != NS_OK) {
        out->len = start;
        out->data[start] = 0;
        return NS_ENOMEM;
    }
    return NS_OK;
}

/* ---- lookup ------------------------------------------------------------- */

void ns_cmd_request_init(ns_cmd_t *cmd, int32_t code, const ns_ext_field_t *ext, size_t n_ext)
{
    memset(cmd, 0, sizeof *cmd);
    cmd->code = code;
    cmd->language = NS_LANG_JAVA;
    cmd->version = NS_VERSION_V5_3_3;
    cmd->serialize_type = NS_SERIALIZE_JSON;
    cmd->has_ext = ext != NULL;
    cmd->ext = ext;
    cmd->n_ext = n_ext;
}

ns_ext_field_t ns_ext_field(const char *key, const char *val)
{
    return (ns_ext_field_t){key, strlen(key), val, strlen(val)};
}

const char *ns_cmd_ext_get(const ns_cmd_t *cmd, const char *key)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const ns_ext_field_t *e = &cmd->ext[i];
        if (e->key != NULL && e->key_len == klen && memcmp(e->key, key, klen) == 0)
            return e->val;
    }
    return NULL;
}
