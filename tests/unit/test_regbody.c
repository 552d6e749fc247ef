/* test_regbody.c - RegisterBrokerBody codecs (JSON and zlib forms) and
 * bodyCrc32, against real broker frames (tests/fixtures/vectors) and hostile
 * input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <cmocka.h>
#include <zlib.h>

#include "nstest.h"
#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"

#define MIB (1024u * 1024u)
#define NO_LIMIT ((size_t)64 * MIB)

/* ---- fixture helpers ------------------------------------------------------- */

/* A whole captured frame split into its parts. */
typedef struct {
    uint8_t *frame;
    size_t len;
    int version;      /* request version from the JSON header (-1 if binary) */
    int64_t body_crc; /* extFields.bodyCrc32 (-1 if absent) */
    const uint8_t *body;
    size_t body_len;
} frame_t;

static void frame_parse(frame_t *f)
{
    assert_true(f->len >= 8);
    uint32_t total = ns_be32_read(f->frame);
    uint32_t word = ns_be32_read(f->frame + 4);
    uint32_t hlen = word & 0xFFFFFFu;
    assert_int_equal(total + 4, f->len);
    assert_true(8 + (size_t)hlen <= f->len);
    f->body = f->frame + 8 + hlen;
    f->body_len = f->len - 8 - hlen;
    f->version = -1;
    f->body_crc = -1;
    if ((word >> 24) == 0) {
        cJSON *h = cJSON_ParseWithLength((const char *)f->frame + 8, hlen);
        assert_non_null(h);
        const cJSON *v = cJSON_GetObjectItem(h, "version");
        assert_true(cJSON_IsNumber(v));
        f->version = v->valueint;
        const cJSON *crc = cJSON_GetObjectItem(cJSON_GetObjectItem(h, "extFields"), "bodyCrc32");
        if (cJSON_IsString(crc))
            f->body_crc = strtoll(crc->valuestring, NULL, 10);
        cJSON_Delete(h);
    }
}

static void vector_frame(const char *name, frame_t *f)
{
    char rel[256];
    snprintf(rel, sizeof rel, "vectors/%s", name);
    f->frame = nstest_fixture(rel, &f->len);
    frame_parse(f);
}

static void scenario_frame(const char *file, int step, bool response, frame_t *f)
{
    char rel[256];
    size_t n = 0;
    snprintf(rel, sizeof rel, "vectors/scenarios/%s", file);
    uint8_t *text = nstest_fixture(rel, &n);
    char *save = NULL;
    f->frame = NULL;
    text = realloc(text, n + 1);
    assert_non_null(text);
    text[n] = 0;
    for (char *line = strtok_r((char *)text, "\n", &save); line && !f->frame;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        assert_non_null(o);
        const cJSON *s = cJSON_GetObjectItem(o, "step");
        if (cJSON_IsNumber(s) && s->valueint == step) {
            const cJSON *hex = cJSON_GetObjectItem(o, response ? "response_hex" : "request_hex");
            assert_true(cJSON_IsString(hex));
            f->frame = nstest_hex_decode(hex->valuestring, &f->len);
            assert_non_null(f->frame);
        }
        cJSON_Delete(o);
    }
    free(text);
    if (f->frame == NULL)
        fail_msg("step %d not found in %s", step, file);
    frame_parse(f);
}

static const ns_topic_config_t *find_topic(const ns_regbody_t *b, const char *name)
{
    for (size_t i = 0; i < b->n_topics; i++)
        if (strcmp(b->topics[i].topic_name, name) == 0)
            return &b->topics[i];
    return NULL;
}

static void assert_topic(const ns_regbody_t *b, const char *name, int r, int w, int perm, int flag)
{
    const ns_topic_config_t *t = find_topic(b, name);
    if (t == NULL)
        fail_msg("topic %s missing", name);
    assert_int_equal(t->read_queue_nums, r);
    assert_int_equal(t->write_queue_nums, w);
    assert_int_equal(t->perm, perm);
    assert_int_equal(t->topic_sys_flag, flag);
}

static void assert_same_body(const ns_regbody_t *a, const ns_regbody_t *b, bool sys_flags)
{
    assert_true(ns_dataversion_equal(&a->data_version, &b->data_version));
    assert_int_equal(a->n_topics, b->n_topics);
    for (size_t i = 0; i < a->n_topics; i++) {
        assert_string_equal(a->topics[i].topic_name, b->topics[i].topic_name);
        assert_int_equal(a->topics[i].read_queue_nums, b->topics[i].read_queue_nums);
        assert_int_equal(a->topics[i].write_queue_nums, b->topics[i].write_queue_nums);
        assert_int_equal(a->topics[i].perm, b->topics[i].perm);
        if (sys_flags)
            assert_int_equal(a->topics[i].topic_sys_flag, b->topics[i].topic_sys_flag);
    }
    assert_int_equal(a->n_filter_servers, b->n_filter_servers);
    for (size_t i = 0; i < a->n_filter_servers; i++)
        assert_string_equal(a->filter_servers[i], b->filter_servers[i]);
    assert_int_equal(a->n_mappings, b->n_mappings);
    for (size_t i = 0; i < a->n_mappings; i++) {
        const ns_mapping_info_t *x = &a->mappings[i], *y = &b->mappings[i];
        assert_string_equal(x->topic, y->topic);
        assert_string_equal(x->bname, y->bname);
        assert_string_equal(x->scope ? x->scope : "__global__", y->scope ? y->scope : "__global__");
        assert_int_equal(x->total_queues, y->total_queues);
        assert_int_equal(x->epoch, y->epoch);
        assert_int_equal(x->dirty, y->dirty);
        assert_int_equal(x->n_curr_id_map, y->n_curr_id_map);
        for (size_t k = 0; k < x->n_curr_id_map; k++) {
            assert_int_equal(x->curr_id_map[k].logical, y->curr_id_map[k].logical);
            assert_int_equal(x->curr_id_map[k].physical, y->curr_id_map[k].physical);
        }
    }
}

/* zlib-inflates a whole stream; caller frees the buffer. */
static void inflate_all(const uint8_t *p, size_t n, ns_buf_t *out)
{
    uLongf cap = 1024;
    for (;;) {
        ns_buf_reset(out);
        assert_int_equal(ns_buf_reserve(out, cap), NS_OK);
        uLongf len = cap;
        int zr = uncompress(out->data, &len, p, (uLong)n);
        if (zr == Z_OK) {
            out->len = len;
            return;
        }
        assert_int_equal(zr, Z_BUF_ERROR);
        cap *= 4;
    }
}

static void deflate_all(const uint8_t *p, size_t n, ns_buf_t *out)
{
    uLongf len = compressBound((uLong)n);
    ns_buf_reset(out);
    assert_int_equal(ns_buf_reserve(out, len), NS_OK);
    assert_int_equal(compress2(out->data, &len, p, (uLong)n, 9), Z_OK);
    out->len = len;
}

static void put_i32(ns_buf_t *b, int32_t v)
{
    assert_int_equal(ns_buf_append_be32(b, (uint32_t)v), NS_OK);
}

static void put_field(ns_buf_t *b, const char *s)
{
    put_i32(b, (int32_t)strlen(s));
    ns_buf_append_str(b, s);
}

/* Decodes the zlib form of raw (built by a test). */
static int decode_raw(const ns_buf_t *raw, int version, size_t limit, ns_regbody_t *out)
{
    ns_buf_t z = NS_BUF_INIT;
    deflate_all(raw->data, raw->len, &z);
    int rc = ns_regbody_decode(z.data, z.len, version, limit, out);
    ns_buf_free(&z);
    return rc;
}

static void assert_empty_body(const ns_regbody_t *b)
{
    assert_int_equal(b->n_topics, 0);
    assert_null(b->topics);
    assert_int_equal(b->n_filter_servers, 0);
    assert_int_equal(b->n_mappings, 0);
    assert_false(b->has_filter_server_list);
    assert_int_equal(b->data_version.counter, 0);
    assert_int_equal(b->data_version.state_version, 0);
    assert_int_equal(b->data_version.timestamp, 0);
}

/* ---- bodyCrc32 ---------------------------------------------------------------- */

static void test_crc32(void **state)
{
    (void)state;
    const char *ex = "{\"filterServerList\":[]}";
    assert_int_equal(ns_body_crc32((const uint8_t *)ex, strlen(ex)), 2053024402u);
    assert_int_equal(ns_body_crc32(NULL, 0), 0);

    const char *names[] = {
        "uncompressed-REGISTER_BROKER-req-1.bin", "uncompressed-REGISTER_BROKER-req-2.bin",
        "compressed-REGISTER_BROKER-req-1.bin", "synth-compressed-true-REGISTER_BROKER-req-1.bin"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        frame_t f;
        vector_frame(names[i], &f);
        assert_true(f.body_crc > 0);
        assert_int_equal(ns_body_crc32(f.body, f.body_len), (uint32_t)f.body_crc);
        free(f.frame);
    }
    frame_t f;
    scenario_frame("register-json.jsonl", 2, false, &f);
    assert_int_equal(ns_body_crc32(f.body, f.body_len), (uint32_t)f.body_crc);
    free(f.frame);
}

/* ---- real broker bodies ------------------------------------------------------- */

/* The 14 topics broker-a registered in every run of the capture. */
static void assert_broker_a_topics(const ns_regbody_t *b)
{
    assert_int_equal(b->n_topics, 14);
    assert_int_equal(b->data_version.counter, 1);
    assert_int_equal(b->data_version.state_version, 0);
    assert_int_equal(b->data_version.timestamp, 1795975896802LL);
    assert_true(b->has_filter_server_list);
    assert_int_equal(b->n_filter_servers, 0);
    assert_int_equal(b->n_mappings, 0);
    assert_topic(b, "TopicTest", 4, 4, 6, 0);
    assert_topic(b, "BenchmarkTest", 1024, 1024, 6, 0);
    assert_topic(b, "TBW102", 8, 8, 7, 0);
    assert_topic(b, "SCHEDULE_TOPIC_XXXX", 18, 18, 6, 0);
    assert_topic(b, "DefaultCluster", 16, 16, 7, 0);
    assert_topic(b, "rmq_sys_SYNC_BROKER_MEMBER_broker-a", 1, 1, 1, 0);
    assert_topic(b, "broker-a", 1, 1, 7, 0);

    /* the topic set is what GET_ALL_TOPIC_LIST answered after registration */
    frame_t f;
    vector_frame("uncompressed-GET_ALL_TOPIC_LIST_FROM_NAMESERVER-rsp-1.bin", &f);
    cJSON *list = cJSON_ParseWithLength((const char *)f.body, f.body_len);
    const cJSON *topics = cJSON_GetObjectItem(list, "topicList"), *it = NULL;
    assert_int_equal(cJSON_GetArraySize(topics), 14);
    cJSON_ArrayForEach(it, topics)
    {
        assert_non_null(find_topic(b, it->valuestring));
    }
    cJSON_Delete(list);
    free(f.frame);
}

/* TopicTest's queue data in a route response agrees with the body. */
static void assert_route_agrees(const char *route_vector, const ns_regbody_t *b)
{
    frame_t f;
    ns_queue_data_t *q = NULL;
    size_t nq = 0;
    vector_frame(route_vector, &f);
    assert_int_equal(ns_json_queue_datas_decode(f.body, f.body_len, &q, &nq), NS_OK);
    assert_int_equal(nq, 1);
    assert_topic(b, "TopicTest", q[0].read_queue_nums, q[0].write_queue_nums, q[0].perm,
                 q[0].topic_sys_flag);
    ns_queue_datas_free(q, nq);
    free(f.frame);
}

static void test_decode_json_vector(void **state)
{
    (void)state;
    frame_t f;
    ns_regbody_t b;
    vector_frame("uncompressed-REGISTER_BROKER-req-1.bin", &f);
    assert_int_equal(f.body_len, 2845);
    assert_int_equal(f.body[0], '{');
    assert_int_equal(ns_regbody_decode(f.body, f.body_len, f.version, NO_LIMIT, &b), NS_OK);
    assert_broker_a_topics(&b);
    assert_route_agrees("uncompressed-GET_ROUTEINFO_BY_TOPIC-rsp-1.bin", &b);
    ns_regbody_free(&b);
    assert_null(b.topics);
    ns_regbody_free(&b); /* idempotent */
    free(f.frame);
}

static void test_decode_compressed_vectors(void **state)
{
    (void)state;
    const char *names[] = {"compressed-REGISTER_BROKER-req-1.bin",
                           "compressed-REGISTER_BROKER-req-2.bin",
                           "synth-compressed-true-REGISTER_BROKER-req-1.bin"};
    frame_t j;
    ns_regbody_t bj;
    vector_frame("uncompressed-REGISTER_BROKER-req-1.bin", &j);
    assert_int_equal(ns_regbody_decode(j.body, j.body_len, j.version, NO_LIMIT, &bj), NS_OK);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        frame_t f;
        ns_regbody_t b;
        vector_frame(names[i], &f);
        assert_int_equal(f.body[0], 0x78);
        assert_int_equal(f.body[1], 0xDA);
        assert_true(f.version >= 413);
        assert_int_equal(ns_regbody_decode(f.body, f.body_len, f.version, NO_LIMIT, &b), NS_OK);
        assert_broker_a_topics(&b);
        assert_route_agrees("synth-compressed-true-GET_ROUTEINFO_BY_TOPIC-rsp-1.bin", &b);
        /* same data as the JSON registration of the same broker */
        for (size_t k = 0; k < bj.n_topics; k++) {
            const ns_topic_config_t *t = &bj.topics[k];
            assert_topic(&b, t->topic_name, t->read_queue_nums, t->write_queue_nums, t->perm, 0);
        }
        /* a 4.x-style reader (version < 413) does not need the mapping count */
        ns_regbody_free(&b);
        assert_int_equal(ns_regbody_decode(f.body, f.body_len, 399, NO_LIMIT, &b), NS_OK);
        assert_int_equal(b.n_topics, 14);
        ns_regbody_free(&b);
        free(f.frame);
    }
    ns_regbody_free(&bj);
    free(j.frame);
}

static void test_decode_scenario_bodies(void **state)
{
    (void)state;
    frame_t f;
    ns_regbody_t b;

    /* JSON body with every topicSysFlag combination */
    scenario_frame("system-and-unit-topics.jsonl", 5, false, &f);
    assert_int_equal(ns_regbody_decode(f.body, f.body_len, f.version, NO_LIMIT, &b), NS_OK);
    assert_int_equal(b.n_topics, 4);
    assert_int_equal(b.data_version.timestamp, 1700000000000LL);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "TopicU%d", i);
        assert_non_null(find_topic(&b, name));
        assert_int_equal(find_topic(&b, name)->topic_sys_flag, i);
    }
    ns_regbody_free(&b);
    free(f.frame);

    /* compressed, JSON header (step 1) and ROCKETMQ binary header (step 8) */
    scenario_frame("register-compressed.jsonl", 1, false, &f);
    assert_int_equal(ns_regbody_decode(f.body, f.body_len, f.version, NO_LIMIT, &b), NS_OK);
    assert_topic(&b, "TopicZ1", 8, 8, 6, 0);
    assert_topic(&b, "TopicZ2", 4, 2, 6, 0);
    assert_topic(&b, "TopicZ3", 2, 2, 4, 0);
    ns_regbody_free(&b);
    free(f.frame);
    scenario_frame("register-compressed.jsonl", 8, false, &f);
    assert_int_equal(ns_regbody_decode(f.body, f.body_len, 479, NO_LIMIT, &b), NS_OK);
    assert_topic(&b, "TopicZ1", 4, 4, 6, 0);
    ns_regbody_free(&b);
    free(f.frame);
}

/* ---- encoders ------------------------------------------------------------------ */

static void test_encode_json_matches_java(void **state)
{
    (void)state;
    struct {
        const char *file;
        int step;
    } cases[] = {{"register-json.jsonl", 2},
                 {"master-slave.jsonl", 1},
                 {"system-and-unit-topics.jsonl", 5},
                 {"data-version.jsonl", 6}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        frame_t f;
        ns_regbody_t b;
        ns_buf_t out = NS_BUF_INIT;
        scenario_frame(cases[i].file, cases[i].step, false, &f);
        assert_int_equal(ns_regbody_decode(f.body, f.body_len, f.version, NO_LIMIT, &b), NS_OK);
        ns_buf_append_str(&out, "pre");
        assert_int_equal(ns_regbody_encode_json(&out, &b), NS_OK);
        assert_int_equal(out.len, 3 + f.body_len);
        assert_memory_equal(out.data + 3, f.body, f.body_len);
        ns_buf_free(&out);
        ns_regbody_free(&b);
        free(f.frame);
    }
}

static void test_encode_compressed_matches_java(void **state)
{
    (void)state;
    frame_t f;
    ns_regbody_t b;
    ns_buf_t out = NS_BUF_INIT, ours = NS_BUF_INIT, theirs = NS_BUF_INIT;
    vector_frame("compressed-REGISTER_BROKER-req-1.bin", &f);
    assert_int_equal(ns_regbody_decode(f.body, f.body_len, f.version, NO_LIMIT, &b), NS_OK);
    assert_int_equal(ns_regbody_encode_compressed(&out, &b, true), NS_OK);
    assert_int_equal(out.data[0], 0x78);
    assert_int_equal(out.data[1], 0xDA);
    /* the decompressed stream is identical to the Java broker's ... */
    inflate_all(out.data, out.len, &ours);
    inflate_all(f.body, f.body_len, &theirs);
    assert_int_equal(ours.len, theirs.len);
    assert_memory_equal(ours.data, theirs.data, theirs.len);
    /* ... and so is the zlib stream itself */
    assert_int_equal(out.len, f.body_len);
    assert_memory_equal(out.data, f.body, f.body_len);
    ns_buf_free(&out);
    ns_buf_free(&ours);
    ns_buf_free(&theirs);
    ns_regbody_free(&b);
    free(f.frame);
}

static void test_worked_example(void **state)
{
    (void)state;
    /* the content of the compressed form (docs/protocol.md §5.2, §5.3) worked
     * out by hand for one topic: DataVersion, one topic line, filter servers,
     * no mappings */
    static const uint8_t expected[] = {
        0x00, 0x00, 0x00, 0x38, '{',  '"', 'c', 'o',  'u',  'n',  't', 'e', 'r',  '"',  ':',  '3',
        ',',  '"',  's',  't',  'a',  't', 'e', 'V',  'e',  'r',  's', 'i', 'o',  'n',  '"',  ':',
        '0',  ',',  '"',  't',  'i',  'm', 'e', 's',  't',  'a',  'm', 'p', '"',  ':',  '1',  '7',
        '0',  '0',  '0',  '0',  '0',  '0', '0', '0',  '0',  '0',  '0', '}', 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x1d, 'T',  'o', 'p', 'i',  'c',  'T',  'e', 's', 't',  ' ',  '4',  ' ',
        '4',  ' ',  '6',  ' ',  'S',  'I', 'N', 'G',  'L',  'E',  '_', 'T', 'A',  'G',  ' ',  '{',
        '}',  0x00, 0x00, 0x00, 0x02, '[', ']', 0x00, 0x00, 0x00, 0x00};
    assert_int_equal(sizeof expected, 107);
    char name[] = "TopicTest";
    ns_topic_config_t t = {name, 4, 4, 6, 0};
    ns_regbody_t in = {{3, 0, 1700000000000LL}, &t, 1, NULL, 0, true, NULL, 0, false};
    ns_buf_t out = NS_BUF_INIT, raw = NS_BUF_INIT;
    ns_regbody_t b;

    assert_int_equal(ns_regbody_encode_compressed(&out, &in, true), NS_OK);
    assert_int_equal(out.len, 98);
    assert_int_equal(out.data[0], 0x78);
    assert_int_equal(out.data[1], 0xDA);
    inflate_all(out.data, out.len, &raw);
    assert_int_equal(raw.len, sizeof expected);
    assert_memory_equal(raw.data, expected, sizeof expected);

    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_OK);
    assert_same_body(&in, &b, true);
    assert_true(b.has_filter_server_list);
    ns_regbody_free(&b);

    /* the 4.x layout (no mapping count) */
    ns_buf_reset(&out);
    assert_int_equal(ns_regbody_encode_compressed(&out, &in, false), NS_OK);
    inflate_all(out.data, out.len, &raw);
    assert_int_equal(raw.len, sizeof expected - 4);
    assert_memory_equal(raw.data, expected, sizeof expected - 4);
    assert_int_equal(ns_regbody_decode(out.data, out.len, 399, NO_LIMIT, &b), NS_OK);
    assert_same_body(&in, &b, true);
    ns_regbody_free(&b);
    /* ... which a 5.x reader finds truncated */
    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_EINVAL);
    assert_empty_body(&b);

    /* the decoder reads the example bytes compressed by anyone */
    ns_buf_reset(&raw);
    ns_buf_append(&raw, expected, sizeof expected);
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_OK);
    assert_same_body(&in, &b, true);
    ns_regbody_free(&b);

    /* exact inflate limit passes, one byte less does not */
    assert_int_equal(decode_raw(&raw, 479, sizeof expected, &b), NS_OK);
    ns_regbody_free(&b);
    assert_int_equal(decode_raw(&raw, 479, sizeof expected - 1, &b), NS_ETOOBIG);
    assert_empty_body(&b);
    ns_buf_free(&out);
    ns_buf_free(&raw);
}

static void test_roundtrip(void **state)
{
    (void)state;
    char n1[] = "TopicA", n2[] = "Topic\xc3\xbc\"q\\", n3[] = "%RETRY%g";
    ns_topic_config_t topics[] = {{n1, 8, 8, 6, 0}, {n2, 1, 2, 7, 3}, {n3, 1, 1, 2, 1}};
    char fs1[] = "10.0.0.1:1", fs2[] = "10.0.0.2:2";
    char *servers[] = {fs1, fs2};
    ns_id_pair_t ids[] = {{0, 0}, {1, 5}, {2, 3}};
    ns_mapping_info_t maps[] = {{"TopicA", "broker-a", NULL, 3, 1726731940123LL, false, ids, 3},
                                {"Topic\xc3\xbc\"q\\", "b", "s", 1, -1, true, NULL, 0}};
    ns_regbody_t in = {{5, 2, 1700000000123LL}, topics, 3, servers, 2, true, maps, 2, false};
    ns_buf_t out = NS_BUF_INIT;
    ns_regbody_t b;

    assert_int_equal(ns_regbody_encode_json(&out, &in), NS_OK);
    assert_non_null(strstr((const char *)out.data, "\"currIdMap\":{0:0,1:5,2:3}"));
    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_OK);
    assert_same_body(&in, &b, true);
    assert_true(b.has_filter_server_list);
    ns_regbody_free(&b);

    ns_buf_reset(&out);
    assert_int_equal(ns_regbody_encode_compressed(&out, &in, true), NS_OK);
    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_OK);
    for (size_t i = 0; i < 3; i++)
        topics[i].topic_sys_flag = 0; /* not carried by the compressed form */
    assert_same_body(&in, &b, true);
    ns_regbody_free(&b);

    /* empty */
    ns_regbody_t none;
    memset(&none, 0, sizeof none);
    ns_buf_reset(&out);
    assert_int_equal(ns_regbody_encode_json(&out, &none), NS_OK);
    assert_string_equal(
        (const char *)out.data,
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
        "{\"counter\":0,\"stateVersion\":0,\"timestamp\":0},\"mappingDataVersion\":"
        "{\"counter\":0,\"stateVersion\":0,\"timestamp\":0},\"topicConfigTable\":{},"
        "\"topicQueueMappingDetailMap\":{},\"topicQueueMappingInfoMap\":{}}}");
    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_OK);
    assert_int_equal(b.n_topics, 0);
    ns_regbody_free(&b);
    ns_buf_free(&out);
}

/* ---- tolerance ----------------------------------------------------------------- */

static void test_decode_empty_and_versions(void **state)
{
    (void)state;
    ns_regbody_t b;
    assert_int_equal(ns_regbody_decode(NULL, 0, 479, NO_LIMIT, &b), NS_OK);
    assert_empty_body(&b);
    ns_regbody_free(&b);
    assert_int_equal(ns_regbody_decode((const uint8_t *)" \r\n\t", 4, 479, NO_LIMIT, &b), NS_OK);
    assert_empty_body(&b);

    /* version < 37: a bare TopicConfigSerializeWrapper */
    const char *bare = "\n{\"dataVersion\":{\"counter\":2,\"timestamp\":5},\"topicConfigTable\":"
                       "{\"T\":{\"topicName\":\"T\",\"readQueueNums\":4,\"writeQueueNums\":4,"
                       "\"perm\":6}}}";
    assert_int_equal(ns_regbody_decode((const uint8_t *)bare, strlen(bare), 36, NO_LIMIT, &b),
                     NS_OK);
    assert_int_equal(b.data_version.counter, 2);
    assert_int_equal(b.data_version.timestamp, 5);
    assert_false(b.has_filter_server_list);
    assert_topic(&b, "T", 4, 4, 6, 0);
    ns_regbody_free(&b);
    /* ... which a newer version reads as a RegisterBrokerBody without data */
    assert_int_equal(ns_regbody_decode((const uint8_t *)bare, strlen(bare), 37, NO_LIMIT, &b),
                     NS_OK);
    assert_empty_body(&b);

    /* a RegisterBrokerBody without filterServerList */
    const char *nofs = "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{}}}";
    assert_int_equal(ns_regbody_decode((const uint8_t *)nofs, strlen(nofs), 479, NO_LIMIT, &b),
                     NS_OK);
    assert_false(b.has_filter_server_list);
    ns_regbody_free(&b);
    const char *fsnull = "{\"filterServerList\":null}";
    assert_int_equal(ns_regbody_decode((const uint8_t *)fsnull, strlen(fsnull), 479, NO_LIMIT, &b),
                     NS_OK);
    assert_false(b.has_filter_server_list);
    ns_regbody_free(&b);
}

static void test_decode_tolerant_json(void **state)
{
    (void)state;
    ns_regbody_t b;
    const char *t =
        "{\"unknown\":{\"a\":[1,{\"b\":null}]},\"filterServerList\":[\"fs:1\",null,7],"
        "\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":\"9\",\"stateVersion\":1,"
        "\"timestamp\":1700000000000,\"extra\":true},"
        "\"topicQueueMappingDetailMap\":{\"S\":{\"hostedQueues\":{0:[{\"bname\":\"x\"}]}}},"
        "\"topicConfigTable\":{"
        "\"A\":{\"attributes\":{\"k\":\"v\"},\"perm\":\"6\",\"readQueueNums\":8.0,"
        "\"writeQueueNums\":\"8\",\"topicSysFlag\":true,\"topicName\":\"A\",\"order\":\"x\"},"
        "\"NoName\":{\"readQueueNums\":1},"
        "\"Ref\":{\"$ref\":\"$.topicConfigSerializeWrapper.topicConfigTable.A\"},"
        "\"Null\":null,"
        "\"K\":{\"topicName\":\"Renamed\",\"perm\":2},"
        "\"A2\":{\"topicName\":\"A\",\"perm\":4,\"readQueueNums\":3},"
        "\"N\":{\"topicName\":12345,\"perm\":6}},"
        "\"topicQueueMappingInfoMap\":{\"S\":{\"bname\":\"broker-s\",\"currIdMap\":{0:0,1:\"1\"},"
        "\"dirty\":\"true\",\"epoch\":\"1726731940123\",\"totalQueues\":2},"
        "\"NoBname\":{\"currIdMap\":{}},\"R\":{\"$ref\":\"..\"}}}}";
    assert_int_equal(ns_regbody_decode((const uint8_t *)t, strlen(t), 479, NO_LIMIT, &b), NS_OK);
    assert_int_equal(b.data_version.counter, 9);
    assert_int_equal(b.data_version.state_version, 1);
    assert_true(b.has_filter_server_list);
    assert_int_equal(b.n_filter_servers, 2);
    assert_string_equal(b.filter_servers[0], "fs:1");
    assert_string_equal(b.filter_servers[1], "7");
    assert_int_equal(b.n_topics, 4);
    /* a later entry naming the same topic replaces the earlier one in place */
    assert_string_equal(b.topics[0].topic_name, "A");
    assert_topic(&b, "A", 3, 0, 4, 0);
    assert_string_equal(b.topics[1].topic_name, "NoName");
    assert_topic(&b, "NoName", 1, 0, 0, 0);
    assert_topic(&b, "Renamed", 0, 0, 2, 0);
    assert_null(find_topic(&b, "K"));
    assert_topic(&b, "12345", 0, 0, 6, 0);
    assert_int_equal(b.n_mappings, 1);
    assert_string_equal(b.mappings[0].topic, "S");
    assert_string_equal(b.mappings[0].bname, "broker-s");
    assert_null(b.mappings[0].scope);
    assert_true(b.mappings[0].dirty);
    assert_int_equal(b.mappings[0].epoch, 1726731940123LL);
    assert_int_equal(b.mappings[0].total_queues, 2);
    assert_int_equal(b.mappings[0].n_curr_id_map, 2);
    assert_int_equal(b.mappings[0].curr_id_map[1].logical, 1);
    assert_int_equal(b.mappings[0].curr_id_map[1].physical, 1);
    ns_regbody_free(&b);

    /* booleans coerced to numbers: topicSysFlag true -> 1 in the first A (replaced) */
    const char *t2 = "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"X\":"
                     "{\"topicSysFlag\":true}}}}";
    assert_int_equal(ns_regbody_decode((const uint8_t *)t2, strlen(t2), 479, NO_LIMIT, &b), NS_OK);
    assert_topic(&b, "X", 0, 0, 0, 1);
    ns_regbody_free(&b);
}

static void test_decode_compressed_details(void **state)
{
    (void)state;
    ns_regbody_t b;
    ns_buf_t raw = NS_BUF_INIT;

    /* 4.x lines (five fields), MULTI_TAG, broken attributes, duplicates,
     * filter servers, a mapping with bare keys, trailing bytes */
    put_field(&raw, "{\"counter\":7,\"timestamp\":1}");
    put_i32(&raw, 4);
    put_field(&raw, "T1 1 2 6 SINGLE_TAG");
    put_field(&raw, "T2 3 4 2 MULTI_TAG {not json");
    put_field(&raw, "T1 5 6 7 SINGLE_TAG {\"a\":\"b c\"}");
    put_field(&raw, " 1 1 6 SINGLE_TAG ");
    put_field(&raw, "[\"fs:1\"]");
    put_i32(&raw, 2);
    put_field(&raw, "{\"bname\":\"b\",\"currIdMap\":{0:3},\"epoch\":9,\"topic\":\"T1\","
                    "\"totalQueues\":1}");
    put_field(&raw, "{\"bname\":\"b2\",\"currIdMap\":{},\"topic\":\"T1\",\"scope\":\"x\"}");
    ns_buf_append_str(&raw, "trailing garbage");
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_OK);
    assert_int_equal(b.data_version.counter, 7);
    assert_int_equal(b.n_topics, 3);
    assert_string_equal(b.topics[0].topic_name, "T1");
    assert_topic(&b, "T1", 5, 6, 7, 0);
    assert_topic(&b, "T2", 3, 4, 2, 0);
    assert_topic(&b, "", 1, 1, 6, 0);
    assert_true(b.has_filter_server_list);
    assert_int_equal(b.n_filter_servers, 1);
    assert_int_equal(b.n_mappings, 1); /* same topic: the last one wins */
    assert_string_equal(b.mappings[0].bname, "b2");
    assert_string_equal(b.mappings[0].scope, "x");
    ns_regbody_free(&b);
    /* version < 413 stops before the mappings */
    assert_int_equal(decode_raw(&raw, 412, NO_LIMIT, &b), NS_OK);
    assert_int_equal(b.n_mappings, 0);
    ns_regbody_free(&b);

    /* an empty filter-server text means "absent" */
    ns_buf_reset(&raw);
    put_field(&raw, "{}");
    put_i32(&raw, 0);
    put_field(&raw, "");
    put_i32(&raw, 0);
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_OK);
    assert_false(b.has_filter_server_list);
    ns_regbody_free(&b);
    ns_buf_free(&raw);
}

/* ---- hostile input --------------------------------------------------------------- */

static void test_truncated_compressed(void **state)
{
    (void)state;
    frame_t f;
    ns_regbody_t b;
    vector_frame("compressed-REGISTER_BROKER-req-1.bin", &f);
    int ok = 0;
    for (size_t len = 1; len < f.body_len; len++) {
        uint8_t *copy = malloc(len); /* exact size, so ASan sees any overread */
        assert_non_null(copy);
        memcpy(copy, f.body, len);
        int rc = ns_regbody_decode(copy, len, f.version, NO_LIMIT, &b);
        if (rc == NS_OK) {
            ok++;
            assert_true(len + 6 > f.body_len);
            assert_int_equal(b.n_topics, 14);
            ns_regbody_free(&b);
        } else {
            assert_int_equal(rc, NS_EINVAL);
            assert_empty_body(&b);
        }
        free(copy);
    }
    /* only a stream cut in its last bytes (end of block, Adler-32 trailer)
     * still delivers every field; like Java's InflaterInputStream, the
     * reader does not look further */
    assert_true(ok >= 1 && ok <= 5);
    free(f.frame);

    /* every prefix of a JSON body fails cleanly too */
    vector_frame("uncompressed-REGISTER_BROKER-req-1.bin", &f);
    for (size_t len = 1; len < f.body_len; len++) {
        uint8_t *copy = malloc(len);
        assert_non_null(copy);
        memcpy(copy, f.body, len);
        int rc = ns_regbody_decode(copy, len, f.version, NO_LIMIT, &b);
        assert_int_equal(rc, NS_EINVAL);
        free(copy);
    }
    free(f.frame);
}

static void test_zlib_bomb(void **state)
{
    (void)state;
    ns_regbody_t b;
    ns_buf_t raw = NS_BUF_INIT, z = NS_BUF_INIT;
    /* a DataVersion claiming 2 GiB, followed by 64 MiB of zeros */
    put_i32(&raw, INT32_MAX);
    assert_int_equal(ns_buf_reserve(&raw, 64 * MIB), NS_OK);
    memset(raw.data + raw.len, 0, 64 * MIB);
    raw.len += 64 * MIB;
    deflate_all(raw.data, raw.len, &z);
    assert_true(z.len < 128 * 1024);
    ns_buf_free(&raw);

    clock_t t0 = clock();
    assert_int_equal(ns_regbody_decode(z.data, z.len, 479, 1 * MIB, &b), NS_ETOOBIG);
    assert_empty_body(&b);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_true(secs < 2.0);
    /* without the limit the claimed length is simply not there */
    assert_int_equal(ns_regbody_decode(z.data, z.len, 479, (size_t)128 * MIB, &b), NS_EINVAL);

    /* plain zeros: dvLen 0 is not a DataVersion, rejected at once */
    ns_buf_reset(&raw);
    assert_int_equal(ns_buf_reserve(&raw, 64 * MIB), NS_OK);
    memset(raw.data, 0, 64 * MIB);
    raw.len = 64 * MIB;
    assert_int_equal(decode_raw(&raw, 479, 1 * MIB, &b), NS_EINVAL);
    ns_buf_free(&raw);

    /* many small topic entries run into the limit too */
    put_field(&raw, "{}");
    put_i32(&raw, INT32_MAX);
    for (int i = 0; i < 100000; i++)
        put_field(&raw, "T 1 1 6 SINGLE_TAG");
    assert_int_equal(decode_raw(&raw, 479, 1 * MIB, &b), NS_ETOOBIG);
    assert_empty_body(&b);
    ns_buf_free(&raw);
    ns_buf_free(&z);
}

static void test_bad_lengths(void **state)
{
    (void)state;
    ns_regbody_t b;
    ns_buf_t raw = NS_BUF_INIT;
    const char *dv = "{\"counter\":1}";

    /* negative dvLen */
    put_i32(&raw, -1);
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);
    assert_empty_body(&b);

    /* negative topicCount */
    ns_buf_reset(&raw);
    put_field(&raw, dv);
    put_i32(&raw, -5);
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);

    /* negative entry length */
    ns_buf_reset(&raw);
    put_field(&raw, dv);
    put_i32(&raw, 1);
    put_i32(&raw, INT32_MIN);
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);

    /* entry length beyond the data */
    ns_buf_reset(&raw);
    put_field(&raw, dv);
    put_i32(&raw, 1);
    put_i32(&raw, 1000);
    ns_buf_append_str(&raw, "T 1 1 6 SINGLE_TAG");
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);

    /* huge topicCount with one entry */
    ns_buf_reset(&raw);
    put_field(&raw, dv);
    put_i32(&raw, INT32_MAX);
    put_field(&raw, "T 1 1 6 SINGLE_TAG");
    assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);
    assert_empty_body(&b);

    /* negative fsLen, negative mapCount, negative mapping length */
    int32_t tails[][3] = {{-1, 0, 0}, {2, -1, 0}, {2, 1, -7}};
    for (size_t i = 0; i < 3; i++) {
        ns_buf_reset(&raw);
        put_field(&raw, dv);
        put_i32(&raw, 0);
        put_i32(&raw, tails[i][0]);
        if (tails[i][0] == 2)
            ns_buf_append_str(&raw, "[]");
        if (i > 0)
            put_i32(&raw, tails[i][1]);
        if (i > 1)
            put_i32(&raw, tails[i][2]);
        assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);
        assert_empty_body(&b);
    }
    ns_buf_free(&raw);
}

static void test_bad_content(void **state)
{
    (void)state;
    ns_regbody_t b;
    ns_buf_t raw = NS_BUF_INIT;

    /* topic lines Java rejects */
    const char *lines[] = {"T 1 1 6",
                           "T 1 1 6 ",
                           "T 1 1 6 SINGLE_TAG_X",
                           "T x 1 6 SINGLE_TAG",
                           "T 1  1 6 SINGLE_TAG",
                           "T 1 1 99999999999 SINGLE_TAG",
                           "",
                           "T 1 1 6  SINGLE_TAG"};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        ns_buf_reset(&raw);
        put_field(&raw, "{}");
        put_i32(&raw, 1);
        put_field(&raw, lines[i]);
        put_field(&raw, "[]");
        put_i32(&raw, 0);
        assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);
        assert_empty_body(&b);
    }

    /* a DataVersion, filter list or mapping that is not what it should be */
    const char *parts[][3] = {{"[]", "[]", NULL},
                              {"{", "[]", NULL},
                              {"{}", "{}", NULL},
                              {"{}", "[{}]", NULL},
                              {"{}", "[]", "[]"},
                              {"{}", "[]", "{\"bname\":\"b\"}"},
                              {"{}", "[]", "{\"topic\":\"T\",\"currIdMap\":{\"x\":1}}"}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        ns_buf_reset(&raw);
        put_field(&raw, parts[i][0]);
        put_i32(&raw, 0);
        put_field(&raw, parts[i][1]);
        put_i32(&raw, parts[i][2] ? 1 : 0);
        if (parts[i][2])
            put_field(&raw, parts[i][2]);
        assert_int_equal(decode_raw(&raw, 479, NO_LIMIT, &b), NS_EINVAL);
        assert_empty_body(&b);
    }
    ns_buf_free(&raw);

    /* invalid and non-object JSON, not-zlib bytes */
    const char *bad[] = {
        "{",
        "{\"filterServerList\":[],",
        "{\"topicConfigSerializeWrapper\":[]}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":[]}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"T\":5}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"T\":{\"perm\":\"rw\"}}}}",
        "{\"topicConfigSerializeWrapper\":{\"dataVersion\":7}}",
        "{\"filterServerList\":\"x\"}",
        "{\"filterServerList\":[[1]]}",
        "{\"a\":\"unterminated}",
        "[]",
        "null",
        "not json at all",
        "\x78\xda garbage",
        "\x1f\x8b\x08\x00",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(
            ns_regbody_decode((const uint8_t *)bad[i], strlen(bad[i]), 479, NO_LIMIT, &b),
            NS_EINVAL);
        assert_empty_body(&b);
    }

    /* a gzip stream of a valid body is not a zlib stream */
    uint8_t gz[512];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    ns_buf_t r2 = NS_BUF_INIT;
    put_field(&r2, "{}");
    put_i32(&r2, 0);
    put_field(&r2, "[]");
    put_i32(&r2, 0);
    zs.next_in = r2.data;
    zs.avail_in = (uInt)r2.len;
    zs.next_out = gz;
    zs.avail_out = sizeof gz;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t gzlen = sizeof gz - zs.avail_out;
    deflateEnd(&zs);
    assert_int_equal(ns_regbody_decode(gz, gzlen, 479, NO_LIMIT, &b), NS_EINVAL);
    assert_int_equal(decode_raw(&r2, 479, NO_LIMIT, &b), NS_OK);
    ns_regbody_free(&b);
    ns_buf_free(&r2);
}

/* ---- scale -------------------------------------------------------------------- */

static void test_large_bodies(void **state)
{
    (void)state;
    enum { N = 100000 };
    ns_topic_config_t *topics = calloc(N, sizeof *topics);
    assert_non_null(topics);
    for (int i = 0; i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "rmq_sys_some_fairly_long_topic_name_%06d", i);
        topics[i].topic_name = strdup(name);
        topics[i].read_queue_nums = 1 + i % 16;
        topics[i].write_queue_nums = 1 + i % 8;
        topics[i].perm = 6;
    }
    ns_regbody_t in = {{100, 0, 1700000000000LL}, topics, N, NULL, 0, true, NULL, 0, false};
    ns_buf_t out = NS_BUF_INIT;
    ns_regbody_t b;

    assert_int_equal(ns_regbody_encode_json(&out, &in), NS_OK);
    assert_true(out.len > 10 * MIB);
    clock_t t0 = clock();
    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_OK);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    print_message("    JSON body %zu bytes, %d topics: %.2f s\n", out.len, N, secs);
    assert_same_body(&in, &b, true);
    ns_regbody_free(&b);

    ns_buf_reset(&out);
    assert_int_equal(ns_regbody_encode_compressed(&out, &in, true), NS_OK);
    t0 = clock();
    assert_int_equal(ns_regbody_decode(out.data, out.len, 479, NO_LIMIT, &b), NS_OK);
    secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    print_message("    compressed body %zu bytes, %d topics: %.2f s\n", out.len, N, secs);
    assert_same_body(&in, &b, true);
    ns_regbody_free(&b);

    ns_buf_free(&out);
    for (int i = 0; i < N; i++)
        free(topics[i].topic_name);
    free(topics);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_decode_json_vector),
        cmocka_unit_test(test_decode_compressed_vectors),
        cmocka_unit_test(test_decode_scenario_bodies),
        cmocka_unit_test(test_encode_json_matches_java),
        cmocka_unit_test(test_encode_compressed_matches_java),
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_decode_empty_and_versions),
        cmocka_unit_test(test_decode_tolerant_json),
        cmocka_unit_test(test_decode_compressed_details),
        cmocka_unit_test(test_truncated_compressed),
        cmocka_unit_test(test_zlib_bomb),
        cmocka_unit_test(test_bad_lengths),
        cmocka_unit_test(test_bad_content),
        cmocka_unit_test(test_large_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
