/* remoting_ext.c - the extFields list of a decoded header (remoting_int.h).
 *
 * Entries live in m->ext_storage, their strings in m->arena. Duplicate keys
 * are merged as Java's HashMap does (the last value wins, at the first
 * key's position). Up to NS_HDR_EXT_INDEX_MIN entries a duplicate is found
 * by a walk; beyond that, through an open-addressing hash index over the
 * keys (slot = entry index + 1, 0 = empty), built only for such headers and
 * dropped when the decode ends, so a header with n entries decodes in O(n).
 */
#include <stdlib.h>
#include <string.h>

#include "ns/hash.h"
#include "remoting_int.h"

int ns_hdr_ext_grow(ns_cmd_msg_t *m, size_t n)
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
        if (e->key_len == n && memcmp(base + ns_hdr_ptr_off(e->key), k, n) == 0)
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
        idx[index_find(m, base + ns_hdr_ptr_off(e->key), e->key_len)] = (uint32_t)(i + 1);
    }
    return NS_OK;
}

void ns_hdr_index_free(ns_cmd_msg_t *m)
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
        if (e->key_len == klen && memcmp(base + ns_hdr_ptr_off(e->key), base + koff, klen) == 0)
            return i;
    }
    return m->cmd.n_ext;
}

int ns_hdr_ext_add(ns_cmd_msg_t *m, size_t koff, size_t klen, size_t voff, size_t vlen)
{
    size_t n = m->cmd.n_ext, slot = 0;
    if (n >= NS_HDR_EXT_INDEX_MIN && index_reserve(m, n + 1) != NS_OK)
        return NS_ENOMEM;
    size_t i = ext_find(m, koff, klen, &slot);
    if (i < n) {
        m->ext_storage[i].val = ns_hdr_off_ptr(voff);
        m->ext_storage[i].val_len = vlen;
        return NS_OK;
    }
    if (ns_hdr_ext_reserve(m, n + 1) != NS_OK)
        return NS_ENOMEM;
    ns_ext_field_t *e = &m->ext_storage[m->cmd.n_ext++];
    e->key = ns_hdr_off_ptr(koff);
    e->key_len = klen;
    e->val = ns_hdr_off_ptr(voff);
    e->val_len = vlen;
    if (m->ext_index_cap != 0)
        m->ext_index[slot] = (uint32_t)(n + 1);
    return NS_OK;
}

void ns_hdr_fix_pointers(ns_cmd_msg_t *m, bool has_remark, size_t remark_off)
{
    const char *base = (const char *)m->arena.data;
    if (has_remark)
        m->cmd.remark = base + remark_off;
    for (size_t i = 0; i < m->cmd.n_ext; i++) {
        m->ext_storage[i].key = base + ns_hdr_ptr_off(m->ext_storage[i].key);
        m->ext_storage[i].val = base + ns_hdr_ptr_off(m->ext_storage[i].val);
    }
    m->cmd.ext = m->cmd.n_ext ? m->ext_storage : NULL;
}
