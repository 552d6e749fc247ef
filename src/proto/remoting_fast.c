/* remoting_fast.c - the fast paths of the header decoders: the shapes real
 * clients send, decoded straight into the ns_cmd_msg_t.
 *
 * JSON. Java, Go, C++ and ali-ons clients all send a flat object (key order
 * differs; docs/protocol.md §1.4):
 *   Java   {"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA",
 *           "opaque":42,"serializeTypeCurrentRPC":"JSON","version":479}
 *   Go     {"code":105,"language":"GO","version":317,"opaque":3,"flag":0,
 *           "remark":"","extFields":{"topic":"T"}}
 *   C++    {"code":105,"extFields":{"AccessKey":"",...,"topic":"T"},"flag":0,
 *           "language":"CPP","opaque":5,"remark":"","version":333}\n
 *   ali-ons {"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,
 *           "extFields":{"topic":"T"}}
 * Java's members come in fastjson's (sorted) order and are matched in that
 * order first, each with its comma, key and colon in one literal
 * (java_members); from the first member out of that order on, and for the
 * other clients, known keys are recognised by one literal compare each.
 * Integers are scanned in one pass, strings scanned and copied into the
 * arena eight bytes at a time. Unknown members with a plain string or
 * integer value are skipped. Anything else (escapes, control characters,
 * null, nested or numeric ext values, fractions) returns NS_EFALLBACK,
 * and the general decoder (remoting_json.c) decodes the header from
 * scratch. Whitespace between tokens is allowed (JSON's), as trailing.
 * Since no string it takes has a control byte, a header whose ext values
 * are all 1-255 bytes of ASCII without DEL is marked ext_names_ok (the name
 * check passes).
 *
 * Binary. The same fields at fixed offsets; the fast path copies strings
 * straight into the arena and declines (NS_EFALLBACK) anything the general
 * decoder (remoting_bin.c) would reject, so errors always come from the
 * general decoder.
 *
 * Both write into the arena directly, with no appends: the caller reserved
 * header length + 64 bytes, and every decoded string takes at most the
 * bytes it took in the header (quotes or a length prefix make room for the
 * NUL), so the arena never moves and entries hold pointers from the start
 * (arena offsets past NS_HDR_EXT_INDEX_MIN entries, for the shared index).
 * Duplicates: the last value wins at the first key's position, as in the
 * general decoders. tests/unit/test_remoting_fast.c and the header fuzzers
 * check that whatever a fast path accepts decodes as the general one does.
 */
#include <limits.h>
#include <string.h>

#include "ns/codes.h"
#include "ns/names.h"
#include "remoting_int.h"

typedef struct {
    const uint8_t *p, *end;
    char *out; /* next free byte of the arena */
} fast_t;

static inline void skip_ws(fast_t *s)
{
    while (s->p < s->end && ns_hdr_is_fastjson_space(*s->p))
        s->p++;
}

/* Consumes c if it is next, after any spaces (c itself is looked for first:
 * real clients send no spaces). */
static inline bool next_is(fast_t *s, uint8_t c)
{
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    if (s->p >= s->end || *s->p > ' ')
        return false;
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* Whether the n bytes at p are the literal l (n is a constant at every call:
 * the compiler turns this into a few word compares). */
static inline bool eq_lit(const uint8_t *p, const char *l, size_t n)
{
    uint64_t diff = 0, a8, b8;
    uint32_t a4, b4;
    uint16_t a2, b2;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&a8, p + i, 8);
        memcpy(&b8, l + i, 8);
        diff |= a8 ^ b8;
    }
    if (n & 4) {
        memcpy(&a4, p + i, 4);
        memcpy(&b4, l + i, 4);
        diff |= a4 ^ b4;
        i += 4;
    }
    if (n & 2) {
        memcpy(&a2, p + i, 2);
        memcpy(&b2, l + i, 2);
        diff |= (uint64_t)(a2 ^ b2);
        i += 2;
    }
    if (n & 1)
        diff |= (uint64_t)(p[i] ^ (uint8_t)l[i]);
    return diff == 0;
}

#define LIT(s, l) lit((s), (l), sizeof(l) - 1)
static inline bool lit(fast_t *s, const char *l, size_t n)
{
    if ((size_t)(s->end - s->p) < n || !eq_lit(s->p, l, n))
        return false;
    s->p += n;
    return true;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
/* High bit set in the bytes of w that are '"', '\\' or below 0x20. Only the
 * lowest marked byte is exact (a borrow may mark bytes above it), which is
 * all the scanner uses. */
static inline uint64_t special_bytes(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w)) & HIGHS;
}
#endif

/* A string without escapes or control characters whose opening quote was
 * just consumed: [*str, *str+*len) in the header; with copy, also copied to
 * s->out with a NUL and *str points there. Leaves s->p after the closing
 * quote. false when the string is not plain or not closed. */
static inline bool plain_str(fast_t *s, bool copy, const char **str, size_t *len)
{
    const uint8_t *start = s->p, *q = start;
    char *o = s->out;
#ifdef HIGHS
    while (s->end - q >= 8) {
        uint64_t w, hit;
        memcpy(&w, q, 8);
        hit = special_bytes(w);
        if (copy) /* whole words: the room argued at the top of the file */
            memcpy(o, &w, 8);
        if (hit) {
            size_t i = (size_t)__builtin_ctzll(hit) >> 3;
            if (q[i] != '"')
                return false;
            q += i;
            goto closed;
        }
        q += 8;
        o += 8;
    }
#endif
    for (; q < s->end; q++, o++) {
        if (*q == '"')
            goto closed;
        if (*q == '\\' || *q < 0x20)
            return false;
        if (copy)
            *o = (char)*q;
    }
    return false;
closed:
    *len = (size_t)(q - start);
    if (copy) {
        *str = s->out;
        s->out[*len] = 0;
        s->out += *len + 1;
    } else {
        *str = (const char *)start;
    }
    s->p = q + 1;
    return true;
}

/* ':' then a plain string (its opening quote included). */
static inline bool colon_str(fast_t *s, bool copy, const char **str, size_t *len)
{
    return next_is(s, ':') && next_is(s, '"') && plain_str(s, copy, str, len);
}

/* An integer in int32 range, not followed by a fraction or an exponent.
 * Up to 10 digits: more would not fit (leading zeros aside; those take the
 * general decoder). */
static inline bool scan_i32(fast_t *s, int32_t *out)
{
    if (s->p < s->end && *s->p <= ' ')
        skip_ws(s);
    const uint8_t *q = s->p;
    size_t left = (size_t)(s->end - q);
    bool neg = left > 0 && *q == '-';
    q += neg;
    left -= neg;
    size_t i = 0, most = left < 10 ? left : 10;
    uint64_t v = 0;
    for (unsigned d; i < most && (d = (unsigned)(q[i] - '0')) < 10; i++)
        v = v * 10 + d;
    /* what follows must be neither a digit (an 11th) nor a fraction or exponent */
    if (i == 0 ||
        (i < left && ((unsigned)(q[i] - '0') < 10 || q[i] == '.' || (q[i] | 0x20) == 'e')))
        return false;
    if (v > (uint64_t)INT32_MAX + neg)
        return false;
    *out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
    s->p = q + i;
    return true;
}

static inline bool colon_i32(fast_t *s, int32_t *out)
{
    return next_is(s, ':') && scan_i32(s, out);
}

/* From the 17th distinct key on: the entries become arena offsets and the
 * hash index is on (m->ext_index set: the sign that entries are offsets);
 * out of line, real clients never get here. */
static __attribute__((noinline)) int ext_put_indexed(ns_cmd_msg_t *m, const char *k, size_t kn,
                                                     const char *v, size_t vn)
{
    const char *base = (const char *)m->arena.data;
    if (m->ext_index == NULL) {
        ns_ext_field_t *e = m->ext_storage;
        for (size_t i = 0; i < m->cmd.n_ext; i++) {
            e[i].key = ns_hdr_off_ptr((size_t)(e[i].key - base));
            e[i].val = ns_hdr_off_ptr((size_t)(e[i].val - base));
        }
    }
    return ns_hdr_ext_add(m, (size_t)(k - base), kn, (size_t)(v - base), vn);
}

/* Adds an entry (strings already in the arena): the last value wins, at the
 * first key's position. Up to NS_HDR_EXT_INDEX_MIN entries by a walk over
 * pointers; past that the entries become arena offsets and go through the
 * shared hash index (ns_hdr_ext_add), so a header of n entries stays O(n)
 * and a big flat header never needs the general decoder's tree. */
static inline int ext_put(ns_cmd_msg_t *m, const char *k, size_t kn, const char *v, size_t vn)
{
    size_t n = m->cmd.n_ext;
    ns_ext_field_t *e = m->ext_storage;
    if (m->ext_index != NULL)
        return ext_put_indexed(m, k, kn, v, vn);
    for (size_t i = 0; i < n; i++) {
        if (e[i].key_len == kn && memcmp(e[i].key, k, kn) == 0) {
            e[i].val = v;
            e[i].val_len = vn;
            return NS_OK;
        }
    }
    if (n == NS_HDR_EXT_INDEX_MIN)
        return ext_put_indexed(m, k, kn, v, vn);
    e[n] = (ns_ext_field_t){k, kn, v, vn};
    m->cmd.n_ext = n + 1;
    return NS_OK;
}

/* The entries of extFields after its '{', up to its '}'. */
static int ext_entries(fast_t *s, ns_cmd_msg_t *m)
{
    do {
        const char *k, *v;
        size_t kn, vn;
        if (!next_is(s, '"') || !plain_str(s, true, &k, &kn) || !colon_str(s, true, &v, &vn))
            return NS_EFALLBACK;
        int rc = ext_put(m, k, kn, v, vn);
        if (rc != NS_OK)
            return rc;
    } while (next_is(s, ','));
    return next_is(s, '}') ? NS_OK : NS_EFALLBACK;
}

/* extFields that hold just a topic (a lookup's), its key's literal just
 * matched: only the value is scanned. false, with s and m as they were
 * before the key, for anything else: the member loop decodes the whole
 * extFields then (json_ext is called from one place only, so that gcc keeps
 * it inline, the scanner's state in registers). */
static bool java_ext_topic(fast_t *s, ns_cmd_msg_t *m, const uint8_t *from)
{
    const char *v;
    size_t vn;
    char *k = s->out; /* "topic" took 7 bytes in the header: room for it and its NUL */
    memcpy(k, "topic", 6);
    s->out += 6;
    if (plain_str(s, true, &v, &vn) && next_is(s, '}')) {
        m->cmd.n_ext = 0;
        m->cmd.has_ext = true;
        ns_hdr_index_drop(m);
        m->ext_storage[0] = (ns_ext_field_t){k, 5, v, vn};
        m->cmd.n_ext = 1;
        return true;
    }
    s->p = from;
    s->out = k;
    return false;
}

/* The value of extFields: an object of plain strings. A second extFields
 * replaces the first, as in the general decoder. */
static int json_ext(fast_t *s, ns_cmd_msg_t *m)
{
    if (!next_is(s, ':') || !next_is(s, '{'))
        return NS_EFALLBACK;
    m->cmd.n_ext = 0;
    m->cmd.has_ext = true;
    ns_hdr_index_drop(m); /* entries are pointers again (see ext_put) */
    return next_is(s, '}') ? NS_OK : ext_entries(s, m);
}

/* One member, its key's opening quote consumed. */
static int json_member(fast_t *s, ns_cmd_msg_t *m)
{
    const char *v;
    size_t vn;
    int32_t num;
    switch (s->p < s->end ? *s->p : 0) {
    case 'c':
        if (LIT(s, "code\""))
            return colon_i32(s, &m->cmd.code) ? NS_OK : NS_EFALLBACK;
        break;
    case 'e':
        if (LIT(s, "extFields\""))
            return json_ext(s, m);
        break;
    case 'f':
        if (LIT(s, "flag\""))
            return colon_i32(s, &m->cmd.flag) ? NS_OK : NS_EFALLBACK;
        break;
    case 'l':
        if (!LIT(s, "language\""))
            break;
        if (!next_is(s, ':') || !next_is(s, '"'))
            return NS_EFALLBACK;
        if (LIT(s, "JAVA\"")) {
            m->cmd.language = NS_LANG_JAVA;
            return NS_OK;
        }
        if (!plain_str(s, false, &v, &vn))
            return NS_EFALLBACK;
        m->cmd.language = ns_language_code(v, vn);
        return NS_OK;
    case 'o':
        if (LIT(s, "opaque\""))
            return colon_i32(s, &m->cmd.opaque) ? NS_OK : NS_EFALLBACK;
        break;
    case 'r':
        if (!LIT(s, "remark\""))
            break;
        if (!colon_str(s, true, &v, &vn))
            return NS_EFALLBACK;
        m->cmd.remark = v;
        m->cmd.remark_len = vn;
        return NS_OK;
    case 's': /* Java's, ignored on receipt like any unknown key */
        if (LIT(s, "serializeTypeCurrentRPC\":\"JSON\""))
            return NS_OK;
        break;
    case 'v':
        if (LIT(s, "version\""))
            return colon_i32(s, &m->cmd.version) ? NS_OK : NS_EFALLBACK;
        break;
    default:
        break;
    }
    /* any other key (serializeTypeCurrentRPC...): skipped with a plain value */
    if (!plain_str(s, false, &v, &vn) || !next_is(s, ':'))
        return NS_EFALLBACK;
    skip_ws(s);
    if (s->p < s->end && *s->p == '"') {
        s->p++;
        return plain_str(s, false, &v, &vn) ? NS_OK : NS_EFALLBACK;
    }
    return scan_i32(s, &num) ? NS_OK : NS_EFALLBACK;
}

/* The members of a Java client's header in the order fastjson writes them
 * (keys sorted): code, extFields, flag, language "JAVA", opaque,
 * serializeTypeCurrentRPC "JSON", version. Each is recognised with its
 * comma, key and colon in one literal compare and decoded as json_member
 * would; at the first member that is not the expected one the member loop
 * goes on from there, so another order or shape pays only the missed
 * compare. Returns how many members were consumed (s->p after the last:
 * at ',' or '}'), or -1 with *rc set. */
static int java_members(fast_t *s, ns_cmd_msg_t *m, int *rc)
{
    *rc = NS_EFALLBACK;
    if (!LIT(s, "\"code\":"))
        return 0;
    if (!scan_i32(s, &m->cmd.code))
        return -1;
    const uint8_t *at = s->p;
    if (!LIT(s, ",\"extFields\":{\"topic\":\"") || !java_ext_topic(s, m, at))
        return 1;
    if (!LIT(s, ",\"flag\":"))
        return 2;
    if (!scan_i32(s, &m->cmd.flag))
        return -1;
    if (!LIT(s, ",\"language\":\"JAVA\",\"opaque\":"))
        return 3;
    m->cmd.language = NS_LANG_JAVA;
    if (!scan_i32(s, &m->cmd.opaque))
        return -1;
    if (!LIT(s, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":"))
        return 5;
    if (!scan_i32(s, &m->cmd.version))
        return -1;
    return 7;
}

/* What both fast paths leave behind: the arena's length and NUL, ext (as
 * pointers again if they were offsets). */
static void finish(ns_cmd_msg_t *m, const fast_t *s)
{
    m->arena.len = (size_t)(s->out - (char *)m->arena.data);
    m->arena.data[m->arena.len] = 0;
    if (m->ext_index != NULL)
        ns_hdr_fix_pointers(m, false, 0);
    else
        m->cmd.ext = m->cmd.n_ext ? m->ext_storage : NULL;
}

/* Whether [v, v+n) holds a DEL (0x7f) or a byte above it: a high bit in
 * w | (w + 0x01..), since only 0x7f and up reach 0x80 or hold it, and a
 * carry into the next byte comes only from 0xff, itself such a byte; the
 * last word overlapping the one before (as names.c reads a name). */
static inline bool has_del_or_high(const char *v, size_t n)
{
#ifdef HIGHS
    if (n >= 8) {
        uint64_t acc = 0, w;
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, v + i, 8);
            acc |= w | (w + ONES);
        }
        memcpy(&w, v + n - 8, 8);
        acc |= w | (w + ONES);
        return (acc & HIGHS) != 0;
    }
#endif
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] >= 0x7f)
            return true;
    return false;
}

/* The JSON fast path's strings have no control byte below 0x20
 * (plain_str): with every ext value 1-255 bytes of ASCII without DEL, each
 * is a valid name (and valid UTF-8), and the per-request name check
 * (dispatch) has nothing to look at. A value with a byte above 0x7f leaves
 * the UTF-8 rules to that check. */
static void note_names(ns_cmd_msg_t *m)
{
    bool ok = m->ext_index == NULL;
    for (size_t i = 0; ok && i < m->cmd.n_ext; i++) {
        const ns_ext_field_t *e = &m->ext_storage[i];
        ok = e->val_len - 1 < NS_NAME_MAX_BYTES && !has_del_or_high(e->val, e->val_len);
    }
    m->cmd.ext_names_ok = ok;
}

/* The room both fast paths write into (see the top of the file). */
static int fast_room(const ns_cmd_msg_t *m, size_t n)
{
    if (m->arena.data == NULL || m->arena.len != 0 || m->arena.cap < n + 64)
        return NS_EFALLBACK;
    return NS_OK;
}

int ns_hdr_json_fast(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m)
{
    fast_t s = {hdr, hdr + n, NULL};
    if (fast_room(m, n) != NS_OK)
        return NS_EFALLBACK;
    if (ns_hdr_ext_reserve(m, NS_HDR_EXT_INDEX_MIN) != NS_OK)
        return NS_ENOMEM;
    s.out = (char *)m->arena.data;
    if (!next_is(&s, '{'))
        return NS_EFALLBACK;
    int rc, k = java_members(&s, m, &rc);
    if (k < 0)
        return rc;
    /* none: an empty object or the first member; some: after the last */
    bool more = k == 0 ? !next_is(&s, '}') : next_is(&s, ',');
    if (more) {
        do {
            if (!next_is(&s, '"'))
                return NS_EFALLBACK;
            rc = json_member(&s, m);
            if (rc != NS_OK)
                return rc;
        } while (next_is(&s, ','));
    }
    if ((more || k > 0) && !next_is(&s, '}'))
        return NS_EFALLBACK;
    skip_ws(&s);
    if (s.p != s.end)
        return NS_EFALLBACK;
    note_names(m);
    finish(m, &s);
    return NS_OK;
}

/* Copies n bytes and a NUL to *out; returns where they went. */
static const char *put(char **out, const uint8_t *p, size_t n)
{
    char *at = *out;
    memcpy(at, p, n);
    at[n] = 0;
    *out += n + 1;
    return at;
}

int ns_hdr_bin_fast(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m)
{
    if (n < NS_HDR_BIN_FIXED || fast_room(m, n) != NS_OK)
        return NS_EFALLBACK;
    if (ns_hdr_ext_reserve(m, NS_HDR_EXT_INDEX_MIN) != NS_OK)
        return NS_ENOMEM;
    fast_t s = {hdr, hdr + n, (char *)m->arena.data};
    m->cmd.code = (int16_t)ns_be16_read(hdr);
    m->cmd.language = hdr[2];
    m->cmd.version = (int16_t)ns_be16_read(hdr + 3);
    m->cmd.opaque = (int32_t)ns_be32_read(hdr + 5);
    m->cmd.flag = (int32_t)ns_be32_read(hdr + 9);
    uint32_t rlen = ns_be32_read(hdr + 13);
    const uint8_t *q = hdr + NS_HDR_BIN_FIXED, *end = hdr + n;
    if (rlen > (size_t)(end - q) || (size_t)(end - q) - rlen < 4)
        return NS_EFALLBACK; /* also a negative length */
    if (rlen > 0) {
        m->cmd.remark = put(&s.out, q, rlen);
        m->cmd.remark_len = rlen;
        q += rlen;
    }
    uint32_t elen = ns_be32_read(q);
    q += 4;
    if (elen > (size_t)(end - q))
        return NS_EFALLBACK;
    m->cmd.has_ext = elen > 0;
    end = q + elen;
    while (q < end) {
        if (end - q < 6)
            return NS_EFALLBACK;
        uint16_t kl = ns_be16_read(q);
        if (kl > INT16_MAX || kl > end - q - 6)
            return NS_EFALLBACK; /* a negative short, or past the block */
        const uint8_t *key = q + 2;
        uint32_t vl = ns_be32_read(key + kl);
        const uint8_t *val = key + kl + 4;
        if (vl > (size_t)(end - val))
            return NS_EFALLBACK;
        q = val + vl;
        if (kl == 0 || vl == 0)
            continue; /* null: Java drops the entry */
        const char *k = put(&s.out, key, kl), *v = put(&s.out, val, vl);
        int rc = ext_put(m, k, kl, v, vl);
        if (rc != NS_OK)
            return rc;
    }
    finish(m, &s);
    return NS_OK;
}
