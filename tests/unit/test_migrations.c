/* test_migrations.c - schema versions of the store (migrations/, store/env.c):
 * an old (v1) store written with raw LMDB is migrated to the latest schema
 * and its broker_topics index filled; stores that are newer than the binary,
 * not LMDB at all, or LMDB but not ours are refused without being touched. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <lmdb.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"
#include "migrations/migrations.h"

/* The schema a store reaches when migrated to at most v: the last step at
 * or below v (numbers may be reserved by work not merged yet). */
static uint32_t reached(uint32_t v)
{
    uint32_t got = 0;
    for (size_t i = 0; i < ns_migrations_count; i++)
        if (ns_migrations[i].version <= v)
            got = ns_migrations[i].version;
    return got;
}

/* A count that must succeed. */
static size_t count_of(int (*count)(ns_txn_t *, size_t *), ns_txn_t *t)
{
    size_t n = 0;
    assert_int_equal(count(t, &n), NS_OK);
    return n;
}

typedef struct {
    char *dir;
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    fx->dir = nstest_tmpdir("migr");
    if (fx->dir == NULL) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static int open_at(const char *dir, uint32_t target, bool read_only, ns_store_t **out, char *err,
                   size_t errlen)
{
    ns_store_opts_t o = {dir, 0, 0, NS_SYNC_NOSYNC, read_only, !read_only, target, 0};
    return ns_store_open(&o, out, err, errlen);
}

/* ---- raw LMDB, as an older binary or a stranger would have written ---- */

typedef struct {
    MDB_env *env;
    MDB_txn *txn;
} raw_t;

static void raw_begin(raw_t *r, const char *dir)
{
    assert_int_equal(mdb_env_create(&r->env), 0);
    assert_int_equal(mdb_env_set_maxdbs(r->env, 32), 0);
    assert_int_equal(mdb_env_open(r->env, dir, MDB_NOSYNC, 0644), 0);
    assert_int_equal(mdb_txn_begin(r->env, NULL, 0, &r->txn), 0);
}

static void raw_put(raw_t *r, const char *db, const void *k, size_t kl, const void *v, size_t vl,
                    unsigned flags)
{
    MDB_dbi dbi;
    assert_int_equal(mdb_dbi_open(r->txn, db, flags, &dbi), 0);
    MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
    assert_int_equal(mdb_put(r->txn, dbi, &key, &val, 0), 0);
}

static bool raw_has_db(raw_t *r, const char *db)
{
    MDB_dbi dbi;
    return mdb_dbi_open(r->txn, db, 0, &dbi) == 0;
}

static uint64_t raw_schema(raw_t *r)
{
    MDB_dbi dbi;
    MDB_val k = {14, "schema_version"}, v;
    uint64_t ver = 0;
    assert_int_equal(mdb_dbi_open(r->txn, "meta", 0, &dbi), 0);
    assert_int_equal(mdb_get(r->txn, dbi, &k, &v), 0);
    assert_int_equal(v.mv_size, 8);
    memcpy(&ver, v.mv_data, 8);
    return ver;
}

static void raw_end(raw_t *r, bool commit)
{
    if (commit)
        assert_int_equal(mdb_txn_commit(r->txn), 0);
    else
        mdb_txn_abort(r->txn);
    mdb_env_close(r->env);
    memset(r, 0, sizeof *r);
}

/* queues row: topic \0 brokerName -> 4 x int32 LE (perm, r, w, sysflag) */
static void raw_queue(raw_t *r, const char *topic, const char *broker, int32_t perm, int32_t rq,
                      int32_t wq, int32_t flag)
{
    char key[256];
    size_t tl = strlen(topic), bl = strlen(broker);
    memcpy(key, topic, tl);
    key[tl] = 0;
    memcpy(key + tl + 1, broker, bl);
    uint8_t v[16];
    int32_t f[4] = {perm, rq, wq, flag};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            v[4 * i + j] = (uint8_t)((uint32_t)f[i] >> (8 * j));
    raw_put(r, "queues", key, tl + 1 + bl, v, sizeof v, 0);
}

/* ---- helpers over the public API ---- */

typedef struct {
    ns_buf_t b;
    int n;
} names_t;

static int name_cb(const char *name, void *ctx)
{
    names_t *l = ctx;
    if (l->b.len)
        ns_buf_append_u8(&l->b, ',');
    ns_buf_append_str(&l->b, name);
    l->n++;
    return 0;
}

static void expect_broker_topics(ns_txn_t *t, const char *broker, const char *want)
{
    names_t l = {NS_BUF_INIT, 0};
    assert_int_equal(ns_queue_iter_broker(t, broker, name_cb, &l), NS_OK);
    assert_string_equal(l.b.data ? (const char *)l.b.data : "", want);
    ns_buf_free(&l.b);
}

/* Collects "seq:json;" of every admin trail record. */
static int trail_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    names_t *l = ctx;
    ns_buf_printf(&l->b, "%llu:%.*s;", (unsigned long long)seq, (int)len, json);
    l->n++;
    return 0;
}

static void datafile(const fx_t *fx, char *path, size_t n)
{
    snprintf(path, n, "%s/data.mdb", fx->dir);
}

/* ---- tests ---- */

static void test_v1_to_latest(void **state)
{
    fx_t *fx = *state;
    char err[512] = "";
    ns_store_t *s = NULL;
    assert_true(ns_store_latest_schema() >= 2);

    /* a v1 store: the initial tables only */
    assert_int_equal(open_at(fx->dir, 1, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(s), 1);
    ns_store_close(s);

    raw_t r;
    raw_begin(&r, fx->dir);
    assert_int_equal(raw_schema(&r), 1);
    assert_true(raw_has_db(&r, "queues"));
    assert_true(raw_has_db(&r, "kv"));
    assert_false(raw_has_db(&r, "broker_topics"));
    assert_false(raw_has_db(&r, "audit"));
    raw_queue(&r, "TopicA", "broker-a", 6, 8, 8, 0);
    raw_queue(&r, "TopicA", "broker-b", 6, 4, 4, 0);
    raw_queue(&r, "TopicB", "broker-a", 2, 1, 1, 1);
    raw_queue(&r, "%RETRY%g", "broker-b", 6, 1, 1, 0);
    raw_queue(&r, "TopicC", "broker-c", 6, 2, 2, 0);
    raw_end(&r, true);

    /* opening at v1 again changes nothing */
    assert_int_equal(open_at(fx->dir, 1, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(s), 1);
    ns_store_close(s);
    /* an offline reader refuses a store that still needs migrating */
    assert_int_equal(open_at(fx->dir, 0, true, &s, err, sizeof err), NS_ESCHEMA);
    assert_null(s);
    assert_non_null(strstr(err, "older"));

    /* the latest binary migrates it */
    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(s), ns_store_latest_schema());
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    uint64_t ver = 0;
    assert_int_equal(ns_meta_get_u64(t, "schema_version", &ver), NS_OK);
    assert_true(ver == ns_store_latest_schema());
    expect_broker_topics(t, "broker-a", "TopicA,TopicB");
    expect_broker_topics(t, "broker-b", "%RETRY%g,TopicA");
    expect_broker_topics(t, "broker-c", "TopicC");
    expect_broker_topics(t, "broker", "");
    ns_queue_data_t q;
    assert_int_equal(ns_queue_get(t, "TopicB", "broker-a", &q), NS_OK);
    assert_int_equal(q.perm, 2);
    assert_int_equal(q.topic_sys_flag, 1);
    assert_int_equal(count_of(ns_topic_count, t), 4);
    ns_txn_abort(t);
    /* the tables of later steps work (v3: audit) */
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    assert_int_equal(ns_audit_append(t, "{}", 2, NULL), NS_OK);
    ns_queue_data_t qd = {"broker-c", 6, 1, 1, 0};
    assert_int_equal(ns_queue_put(t, "TopicD", &qd), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(s);

    /* reopening at the latest version is a no-op; the index persisted */
    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    ns_store_t *second = NULL;
    assert_int_equal(open_at(fx->dir, 0, false, &second, err, sizeof err), NS_ELOCKED);
    assert_null(second);
    assert_int_equal(ns_store_schema_version(s), ns_store_latest_schema());
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    expect_broker_topics(t, "broker-c", "TopicC,TopicD");
    ns_txn_abort(t);
    ns_store_close(s);
    /* and an older target never downgrades */
    assert_int_equal(open_at(fx->dir, 1, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(s), ns_store_latest_schema());
    ns_store_close(s);
}

/* One step at a time gives the same result as all at once. */
static void test_step_by_step(void **state)
{
    fx_t *fx = *state;
    char err[512];
    ns_store_t *s = NULL;
    assert_int_equal(open_at(fx->dir, 1, false, &s, err, sizeof err), NS_OK);
    ns_store_close(s);
    raw_t r;
    raw_begin(&r, fx->dir);
    raw_queue(&r, "T", "b", 6, 1, 1, 0);
    /* a malformed key (no broker part) is left to the verifier */
    raw_put(&r, "queues", "junk", 4, "0123456789abcdef", 16, 0);
    raw_end(&r, true);
    for (uint32_t v = 2; v <= ns_store_latest_schema(); v++) {
        assert_int_equal(open_at(fx->dir, v, false, &s, err, sizeof err), NS_OK);
        assert_int_equal(ns_store_schema_version(s), reached(v));
        ns_txn_t *t = NULL;
        assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
        expect_broker_topics(t, "b", "T");
        ns_txn_abort(t);
        ns_store_close(s);
    }
    raw_begin(&r, fx->dir);
    assert_int_equal(raw_schema(&r), ns_store_latest_schema());
    assert_true(raw_has_db(&r, "audit"));
    raw_end(&r, false);
}

/* 0010: a v9 store's KV entries keep their values and get version (0, 0);
 * the first versioned write of a key orders above them, and a v9 value is
 * never read as a version or the other way round. */
static void test_kv_versions_from_v9(void **state)
{
    fx_t *fx = *state;
    char err[512] = "";
    ns_store_t *s = NULL;
    ns_txn_t *t = NULL;
    assert_int_equal(open_at(fx->dir, 9, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(s), 9);
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    assert_int_equal(ns_kv_put(t, "NS", "old", "v9-value"), NS_OK);
    assert_int_equal(ns_kv_put(t, "NS", "other", "x"), NS_OK);
    /* a v9 store has no version table: a versioned write is refused, not guessed */
    assert_int_equal(ns_kv_put_local(t, "NS", "k", "v", 1000, NULL), NS_EINVAL);
    ns_txn_abort(t);
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    assert_int_equal(ns_kv_put(t, "NS", "old", "v9-value"), NS_OK);
    assert_int_equal(ns_kv_put(t, "NS", "other", "x"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(s);
    raw_t r;
    raw_begin(&r, fx->dir);
    assert_false(raw_has_db(&r, "kv_versions"));
    raw_end(&r, false);

    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    assert_true(ns_store_schema_version(s) >= 10);
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    ns_kvver_t v;
    ns_slice_t val;
    assert_int_equal(ns_kv_version_get(t, "NS", "old", &v), NS_ENOTFOUND);
    assert_int_equal(ns_kv_state_get(t, "NS", "old", &v, &val), NS_OK);
    assert_true(v.hlc == 0 && v.server == 0 && !v.deleted);
    assert_int_equal(val.len, 8);
    assert_memory_equal(val.ptr, "v9-value", 8);
    /* a local write now is above (0, 0) */
    ns_kvver_t w;
    assert_int_equal(ns_kv_put_local(t, "NS", "other", "y", 5000, &w), NS_OK);
    assert_true(ns_kvver_cmp(&w, "y", 1, &v, "x", 1) > 0);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_buf_t report = NS_BUF_INIT;
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    assert_int_equal(ns_store_verify(t, &report), 0);
    ns_txn_abort(t);
    ns_buf_free(&report);
    ns_store_close(s);

    /* a row of another format or size is corrupt, never a version */
    raw_begin(&r, fx->dir);
    raw_put(&r, "kv_versions", "NS\0old", 6, "v9-value", 8, 0);
    raw_end(&r, true);
    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    assert_int_equal(ns_kv_version_get(t, "NS", "old", &v), NS_ECORRUPT);
    ns_txn_abort(t);
    ns_store_close(s);
}

/* The stored value of seq in table db (raw LMDB): its first byte and size. */
static size_t raw_seq_value(raw_t *r, const char *db, uint64_t seq, uint8_t *first)
{
    MDB_dbi dbi;
    uint8_t kb[8];
    for (int i = 0; i < 8; i++)
        kb[i] = (uint8_t)(seq >> (56 - 8 * i));
    MDB_val k = {8, kb}, v;
    assert_int_equal(mdb_dbi_open(r->txn, db, 0, &dbi), 0);
    assert_int_equal(mdb_get(r->txn, dbi, &k, &v), 0);
    *first = v.mv_size ? *(const uint8_t *)v.mv_data : 0;
    return v.mv_size;
}

/* A history record the size of a first registration's (30 topics). */
static void big_record(ns_buf_t *b, const char *tag)
{
    ns_buf_printf(b, "{\"tag\":\"%s\",\"added\":[", tag);
    for (int i = 0; i < 30; i++)
        ns_buf_printf(b,
                      "%s{\"topic\":\"BenchTopic-%07d\",\"readQueueNums\":4,"
                      "\"writeQueueNums\":4,\"perm\":6,\"topicSysFlag\":0}",
                      i ? "," : "", i);
    ns_buf_append_str(b, "]}");
}

/* 0011: a v10 store's history and trail records of 256 bytes or more are
 * rewritten packed, shorter ones stay as they are, and all read back as the
 * JSON that was appended; later appends of that size are packed; a packed
 * value that does not inflate to its length is NS_ECORRUPT. */
static void test_packed_seqlogs_from_v10(void **state)
{
    fx_t *fx = *state;
    char err[512] = "";
    ns_store_t *s = NULL;
    ns_txn_t *t = NULL;
    ns_buf_t big = NS_BUF_INIT, want = NS_BUF_INIT;
    big_record(&big, "v10");
    const char *small = "{\"tag\":\"small\"}";
    assert_true(big.len > 2000);
    assert_int_equal(open_at(fx->dir, 10, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    assert_int_equal(ns_audit_append(t, (const char *)big.data, big.len, NULL), NS_OK);
    assert_int_equal(ns_audit_append(t, small, strlen(small), NULL), NS_OK);
    for (int i = 0; i < 3; i++) /* several on one page: the rewrite keeps each key */
        assert_int_equal(ns_admin_audit_append(t, i == 1 ? small : (const char *)big.data,
                                               i == 1 ? strlen(small) : big.len, 100, NULL),
                         NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(s);
    raw_t r;
    uint8_t first = 0;
    raw_begin(&r, fx->dir); /* a v10 store writes every record plain */
    assert_int_equal(raw_seq_value(&r, "audit", 1, &first), big.len);
    assert_int_equal(first, '{');
    raw_end(&r, false);

    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    assert_true(ns_store_schema_version(s) >= 11);
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    ns_buf_t later = NS_BUF_INIT;
    big_record(&later, "v11");
    assert_int_equal(ns_audit_append(t, (const char *)later.data, later.len, NULL), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    names_t got = {NS_BUF_INIT, 0};
    assert_int_equal(ns_audit_iter(t, trail_cb, &got), NS_OK);
    ns_buf_printf(&want, "1:%.*s;2:%s;3:%.*s;", (int)big.len, (const char *)big.data, small,
                  (int)later.len, (const char *)later.data);
    assert_int_equal(got.b.len, want.len);
    assert_memory_equal(got.b.data, want.data, want.len);
    ns_buf_reset(&got.b);
    assert_int_equal(ns_admin_audit_iter(t, 0, trail_cb, &got), NS_OK);
    ns_buf_reset(&want);
    ns_buf_printf(&want, "1:%.*s;2:%s;3:%.*s;", (int)big.len, (const char *)big.data, small,
                  (int)big.len, (const char *)big.data);
    assert_int_equal(got.b.len, want.len);
    assert_memory_equal(got.b.data, want.data, want.len);
    ns_txn_abort(t);
    ns_store_close(s);

    raw_begin(&r, fx->dir);
    size_t n1 = raw_seq_value(&r, "audit", 1, &first);
    assert_true(first == 0x01 && n1 < big.len / 4);
    assert_int_equal(raw_seq_value(&r, "audit", 2, &first), strlen(small));
    assert_int_equal(first, '{');
    size_t n3 = raw_seq_value(&r, "audit", 3, &first);
    assert_true(first == 0x01 && n3 < later.len / 4);
    assert_true(raw_seq_value(&r, "admin_audit", 1, &first) < big.len / 4 && first == 0x01);
    /* a packed value that claims one length more than it holds */
    uint8_t bad[64] = {0x01, 0xff, 0x00, 0x00, 0x00, 0x78, 0x9c};
    uint8_t kb[8] = {0, 0, 0, 0, 0, 0, 0, 2};
    raw_put(&r, "audit", kb, 8, bad, sizeof bad, 0);
    raw_end(&r, true);
    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    ns_buf_reset(&got.b);
    assert_int_equal(ns_audit_iter(t, trail_cb, &got), NS_ECORRUPT);
    ns_txn_abort(t);
    ns_store_close(s);
    ns_buf_free(&got.b);
    ns_buf_free(&big);
    ns_buf_free(&later);
    ns_buf_free(&want);
}

/* 0008: the auth_refusals of a v6 store move into admin_audit after the
 * records already there, in the trail's form, and the old table goes. */
static void test_auth_refusals_join_the_trail(void **state)
{
    fx_t *fx = *state;
    char err[512] = "";
    ns_store_t *s = NULL;
    assert_int_equal(open_at(fx->dir, 6, false, &s, err, sizeof err), NS_OK);
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    const char *first = "{\"request\":\"PUT_KV_CONFIG\"}";
    assert_int_equal(ns_admin_audit_append(t, first, strlen(first), 100, NULL), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(s);
    raw_t r;
    raw_begin(&r, fx->dir);
    static const char *const old[] = {
        "{\"time\":1700000000000,\"peer\":\"10.1.2.3:5555\",\"code\":103,\"request\":"
        "\"REGISTER_BROKER\",\"accessKey\":\"brk1\",\"reason\":\"this AccessKey is not granted "
        "broker name 'b'\",\"suppressedBefore\":2}",
        "{\"time\":1700000000001,\"peer\":\"10.1.2.4:6666\",\"code\":105,\"request\":"
        "\"GET_ROUTEINFO_BY_TOPIC\",\"accessKey\":null,\"reason\":\"GET_ROUTEINFO_BY_TOPIC needs "
        "a signed request\",\"suppressedBefore\":0}",
        "not json"};
    for (int i = 0; i < 3; i++) {
        uint8_t k[8] = {0, 0, 0, 0, 0, 0, 0, (uint8_t)(i + 1)};
        raw_put(&r, "auth_refusals", k, 8, old[i], strlen(old[i]), MDB_CREATE);
    }
    uint64_t three = 3;
    raw_put(&r, "meta", "auth_refusal_seq", 16, &three, 8, 0);
    raw_end(&r, true);

    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(s), ns_store_latest_schema());
    names_t l = {NS_BUF_INIT, 0};
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    /* the sequence goes on after the moved records */
    assert_int_equal(ns_admin_audit_append(t, "{}", 2, 100, NULL), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    assert_int_equal(ns_admin_audit_iter(t, 0, trail_cb, &l), NS_OK);
    ns_txn_abort(t);
    ns_store_close(s);
    assert_int_equal(l.n, 5);
    const char *all = (const char *)l.b.data;
    assert_non_null(strstr(all, "1:{\"request\":\"PUT_KV_CONFIG\"}"));
    assert_non_null(strstr(
        all, "2:{\"time\":1700000000000,\"peer\":\"10.1.2.3:5555\",\"code\":103,\"request\":"
             "\"REGISTER_BROKER\",\"fields\":{\"AccessKey\":\"brk1\"},\"result\":\"refused\","
             "\"responseCode\":16,\"remark\":\"this AccessKey is not granted broker name 'b'\","
             "\"detail\":{\"auth\":\"broker_name\",\"accessKey\":\"brk1\",\"unrecordedBefore\":2,"
             "\"migrated\":true}}"));
    assert_non_null(strstr(all, "3:{\"time\":1700000000001,\"peer\":\"10.1.2.4:6666\""));
    assert_non_null(strstr(all, "\"fields\":{},\"result\":\"refused\""));
    assert_non_null(strstr(all, "\"auth\":\"unsigned\",\"accessKey\":null"));
    assert_non_null(strstr(all, "4:{\"time\":0,\"result\":\"refused\",\"responseCode\":16,"
                                "\"remark\":\"not json\",\"detail\":{\"auth\":\"other\""));
    assert_non_null(strstr(all, "5:{}"));
    ns_buf_free(&l.b);
    raw_begin(&r, fx->dir);
    assert_false(raw_has_db(&r, "auth_refusals"));
    MDB_dbi meta;
    MDB_val k = {16, "auth_refusal_seq"}, v;
    assert_int_equal(mdb_dbi_open(r.txn, "meta", 0, &meta), 0);
    assert_int_equal(mdb_get(r.txn, meta, &k, &v), MDB_NOTFOUND);
    raw_end(&r, false);
}

static void test_newer_schema_refused(void **state)
{
    fx_t *fx = *state;
    char err[512] = "", want[128], path[4200];
    ns_store_t *s = NULL;
    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_OK);
    ns_store_close(s);
    raw_t r;
    raw_begin(&r, fx->dir);
    uint64_t newer = (uint64_t)ns_store_latest_schema() + 1;
    raw_put(&r, "meta", "schema_version", 14, &newer, 8, 0);
    raw_end(&r, true);

    datafile(fx, path, sizeof path);
    uint8_t *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    assert_int_equal(nstest_read_file(path, &before, &nb), 0);
    assert_int_equal(open_at(fx->dir, 0, false, &s, err, sizeof err), NS_ESCHEMA);
    assert_null(s);
    printf("# refused: %s\n", err);
    snprintf(want, sizeof want, "schema version %llu is newer than this binary supports (%u)",
             (unsigned long long)newer, ns_store_latest_schema());
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "upgrade"));
    /* read-only tools refuse it too */
    assert_int_equal(open_at(fx->dir, 0, true, &s, err, sizeof err), NS_ESCHEMA);
    assert_null(s);
    assert_int_equal(nstest_read_file(path, &after, &na), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(after, before, nb);
    /* the refused open released the directory lock */
    assert_int_equal(ns_store_lock_holder(fx->dir), 0);
    free(before);
    free(after);
}

static void expect_corrupt_untouched(fx_t *fx, bool read_only)
{
    char err[512] = "", path[4200];
    uint8_t *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    datafile(fx, path, sizeof path);
    assert_int_equal(nstest_read_file(path, &before, &nb), 0);
    ns_store_t *s = NULL;
    assert_int_equal(open_at(fx->dir, 0, read_only, &s, err, sizeof err), NS_ECORRUPT);
    assert_null(s);
    assert_true(strlen(err) > 0);
    assert_non_null(strstr(err, fx->dir));
    printf("# refused: %s\n", err);
    assert_int_equal(nstest_read_file(path, &after, &na), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(after, before, nb);
    free(before);
    free(after);
}

static void write_random(const char *path, size_t n, unsigned seed)
{
    uint8_t *p = malloc(n);
    assert_non_null(p);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(rand() >> 7);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
    free(p);
}

static void test_random_bytes_refused(void **state)
{
    fx_t *fx = *state;
    char path[4200];
    datafile(fx, path, sizeof path);
    const size_t sizes[] = {65536, 100, 4096 * 3 + 17};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        write_random(path, sizes[i], (unsigned)(1234 + i));
        expect_corrupt_untouched(fx, false);
        expect_corrupt_untouched(fx, true);
    }
}

static void test_foreign_lmdb_refused(void **state)
{
    fx_t *fx = *state;
    raw_t r;
    raw_begin(&r, fx->dir);
    raw_put(&r, "other", "k", 1, "v", 1, MDB_CREATE);
    raw_put(&r, "queues", "x", 1, "y", 1, MDB_CREATE); /* looks like ours, no meta */
    raw_end(&r, true);
    expect_corrupt_untouched(fx, false);
    expect_corrupt_untouched(fx, true);
    /* a meta table without a schema version is no better */
    raw_begin(&r, fx->dir);
    raw_put(&r, "meta", "something", 9, "1", 1, MDB_CREATE);
    raw_end(&r, true);
    expect_corrupt_untouched(fx, false);
    /* nor is a schema version of the wrong size */
    raw_begin(&r, fx->dir);
    raw_put(&r, "meta", "schema_version", 14, "3", 1, 0);
    raw_end(&r, true);
    expect_corrupt_untouched(fx, false);
}

/* Plain (unnamed) records in the main DB: LMDB, but certainly not ours. */
static void test_plain_lmdb_refused(void **state)
{
    fx_t *fx = *state;
    raw_t r;
    raw_begin(&r, fx->dir);
    MDB_dbi dbi;
    assert_int_equal(mdb_dbi_open(r.txn, NULL, 0, &dbi), 0);
    MDB_val k = {4, "meta"}, v = {5, "hello"};
    assert_int_equal(mdb_put(r.txn, dbi, &k, &v, 0), 0);
    raw_end(&r, true);
    expect_corrupt_untouched(fx, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v1_to_latest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_by_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_refusals_join_the_trail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kv_versions_from_v9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_packed_seqlogs_from_v10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_bytes_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_lmdb_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_lmdb_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
