/* seqlog.c - sequence logs (internal.h): tables of JSON records under
 * 8-byte big-endian sequence numbers, with the last number handed out kept
 * under a meta key. The audit history (audit.c) and the admin trail
 * (admin_audit.c) are sequence logs.
 * Numbers are dense: each append takes the next one, so the newest N
 * records are those above last - N.
 *
 * A record of NS_SEQLOG_PACK_MIN bytes or more is stored packed (schema
 * 11): [0x01][u32 little-endian length of the JSON][zlib stream of it];
 * a shorter one (and every record written before) is the JSON itself,
 * which starts with '{', never 0x01. A first registration's history record
 * lists its topics (3 KB for 30 topics): plain, each took an overflow page
 * of its own (4 KiB, 1,000 of them at 1,000 brokers); packed, ~400 bytes
 * that share leaf pages. */
#include <string.h>
#include <zlib.h>

#include "internal.h"

#define PACKED 0x01 /* ns_seqlog_is_packed */
#define PACK_HEAD 5
/* What a packed record may claim to inflate to: a history record is at
 * most ~120 KB (AUDIT_MAX_LISTED topics per list), a trail record less. */
#define PACK_MAX_RAW (16u << 20)

/* A 4 KiB window and a small hash table: records are a few KB, and
 * compress2's defaults (32 KiB window, 256 KiB of state, allocated and
 * freed by mmap at every call) took 63 us per 3 KB record against 5.7 us,
 * for the same 207 bytes out. */
#define PACK_WINDOW_BITS 12
#define PACK_MEM_LEVEL 4

int ns_seqlog_pack(ns_buf_t *out, const char *json, size_t len)
{
    if (len > PACK_MAX_RAW)
        return NS_EINVAL; /* unpack would refuse it */
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, PACK_WINDOW_BITS, PACK_MEM_LEVEL,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return NS_ENOMEM;
    uLong bound = deflateBound(&z, (uLong)len);
    int rc = ns_buf_reserve(out, PACK_HEAD + bound);
    if (rc != NS_OK)
        goto out;
    uint8_t *p = out->data + out->len;
    p[0] = PACKED;
    for (int i = 0; i < 4; i++)
        p[1 + i] = (uint8_t)(len >> (8 * i));
    z.next_in = (Bytef *)json;
    z.avail_in = (uInt)len;
    z.next_out = p + PACK_HEAD;
    z.avail_out = (uInt)bound;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
        rc = NS_ENOMEM; /* with a bound-sized buffer, only memory fails */
        goto out;
    }
    out->len += PACK_HEAD + z.total_out;
out:
    deflateEnd(&z);
    return rc;
}

int ns_seqlog_unpack(ns_buf_t *out, const uint8_t *v, size_t n)
{
    if (!ns_seqlog_is_packed(v, n)) {
        int rc = ns_buf_append(out, n ? v : (const uint8_t *)"", n);
        return rc ? rc : ns_buf_append_u8(out, 0);
    }
    if (n < PACK_HEAD)
        return NS_ECORRUPT;
    uint32_t raw =
        (uint32_t)v[1] | (uint32_t)v[2] << 8 | (uint32_t)v[3] << 16 | (uint32_t)v[4] << 24;
    if (raw > PACK_MAX_RAW)
        return NS_ECORRUPT;
    int rc = ns_buf_reserve(out, (size_t)raw + 1);
    if (rc != NS_OK)
        return rc;
    uLongf got = raw;
    if (uncompress(out->data + out->len, &got, v + PACK_HEAD, (uLong)(n - PACK_HEAD)) != Z_OK ||
        got != raw)
        return NS_ECORRUPT;
    out->len += raw;
    return ns_buf_append_u8(out, 0);
}

static void seq_key(uint8_t b[8], uint64_t seq)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(seq >> (56 - 8 * i));
}

static uint64_t seq_of(const uint8_t *b)
{
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++)
        seq = seq << 8 | b[i];
    return seq;
}

int ns_seqlog_append(ns_txn_t *t, int db, const char *seq_meta, const char *json, size_t len,
                     uint64_t *seq_out)
{
    uint64_t seq = 0;
    uint8_t kb[8];
    MDB_dbi dbi;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    rc = ns_meta_get_u64(t, seq_meta, &seq);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    seq++;
    if ((rc = ns_meta_put_u64(t, seq_meta, seq)) != NS_OK)
        return rc;
    seq_key(kb, seq);
    ns_buf_t packed = NS_BUF_INIT;
    MDB_val k = ns_val(kb, 8), v = ns_val(len ? json : "", len);
    if (len >= NS_SEQLOG_PACK_MIN && t->s->schema >= NS_SEQLOG_PACK_SCHEMA) {
        rc = ns_seqlog_pack(&packed, json, len);
        if (rc != NS_OK && rc != NS_EINVAL) /* EINVAL: too long to pack, stored plain */
            goto out;
        if (rc == NS_OK && packed.len < len)
            v = ns_val(packed.data, packed.len);
        rc = NS_OK;
    }
    ns_txn_wrote(t, 8 + v.mv_size);
    if ((rc = mdb_put(t->txn, dbi, &k, &v, 0)) != 0) {
        rc = ns_lmdb_error(rc);
        goto out;
    }
    if (seq_out)
        *seq_out = seq;
out:
    ns_buf_free(&packed);
    return rc;
}

int ns_seqlog_iter(ns_txn_t *t, int db, uint64_t from_seq, ns_audit_cb cb, void *ctx)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    uint8_t kb[8];
    ns_buf_t tmp = NS_BUF_INIT;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    if ((rc = mdb_cursor_open(t->txn, dbi, &cur)) != 0)
        return ns_lmdb_error(rc);
    seq_key(kb, from_seq);
    MDB_val k = ns_val(kb, 8), v;
    /* from the first key, even one too short to be a sequence number */
    for (rc = mdb_cursor_get(cur, &k, &v, from_seq ? MDB_SET_RANGE : MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = NS_ECORRUPT;
            goto out;
        }
        /* a NUL-terminated copy: the callback may parse it as a C string */
        ns_buf_reset(&tmp);
        if ((rc = ns_seqlog_unpack(&tmp, v.mv_data, v.mv_size)) != NS_OK)
            goto out;
        rc = cb(seq_of(k.mv_data), (const char *)tmp.data, tmp.len - 1, ctx);
        if (rc != 0)
            goto out;
    }
    rc = rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
out:
    mdb_cursor_close(cur);
    ns_buf_free(&tmp);
    return rc;
}

int ns_seqlog_del(ns_txn_t *t, int db, uint64_t seq)
{
    MDB_dbi dbi;
    uint8_t kb[8];
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    seq_key(kb, seq);
    MDB_val k = ns_val(kb, 8);
    rc = mdb_del(t->txn, dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
}

int ns_seqlog_trim(ns_txn_t *t, int db, uint64_t keep_from)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    if ((rc = mdb_cursor_open(t->txn, dbi, &cur)) != 0)
        return ns_lmdb_error(rc);
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
        if (k.mv_size != 8 || seq_of(k.mv_data) >= keep_from)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != 0)
            break;
    }
    mdb_cursor_close(cur);
    return rc == 0 || rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
}
