/* test_vectors.c - decodes every captured frame in tests/fixtures/vectors
 * (every .bin file and every request/response in the scenarios .jsonl files) and
 * checks that encoding the decoded command reproduces the frame byte for
 * byte. The Java peers write JSON headers with the same key order and
 * escaping as our encoder, extFields in their HashMap order (which the
 * decoder preserves), and binary headers in the same layout, so every
 * captured frame round-trips exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nstest.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/remoting.h"

#define VECTORS_DIR NS_FIXTURES_DIR "/vectors"

typedef struct {
    size_t frames;
    size_t json;
    size_t binary;
    size_t with_body;
    size_t with_ext;
} counts_t;

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names of the files in dir ending with suffix; caller frees each
 * name and the array. */
static char **list_files(const char *dir, const char *suffix, size_t *n)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        fail_msg("cannot open %s", dir);
    char **names = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, suffix))
            continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[cnt] = strdup(e->d_name);
        assert_non_null(names[cnt]);
        cnt++;
    }
    closedir(d);
    if (cnt)
        qsort(names, cnt, sizeof *names, cmp_str);
    *n = cnt;
    return names;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Decodes one whole frame, checks it is consistent and re-encodes exactly. */
static void check_frame(const char *what, const uint8_t *frame, size_t len, ns_cmd_msg_t *m,
                        counts_t *cnt)
{
    size_t flen = 0;
    int rc = ns_frame_peek(frame, len, NS_DEFAULT_MAX_FRAME_BYTES, &flen);
    if (rc != NS_OK || flen != len)
        fail_msg("%s: ns_frame_peek rc=%d frame_len=%zu file=%zu", what, rc, flen, len);
    rc = ns_remoting_decode(frame, len, m);
    if (rc != NS_OK)
        fail_msg("%s: decode failed rc=%d", what, rc);

    const ns_cmd_t *c = &m->cmd;
    size_t hdr_len = ns_be32_read(frame + 4) & 0xFFFFFF;
    assert_int_equal(c->serialize_type, frame[4]);
    assert_int_equal(c->body_len, len - 8 - hdr_len);
    if (c->body_len)
        assert_ptr_equal(c->body, frame + 8 + hdr_len);
    else
        assert_null(c->body);
    for (size_t i = 0; i < c->n_ext; i++) {
        assert_int_equal(strlen(c->ext[i].key), c->ext[i].key_len);
        assert_ptr_equal(ns_cmd_ext_get(c, c->ext[i].key), c->ext[i].val);
    }
    if (c->flag & NS_FLAG_RESPONSE)
        assert_int_equal(c->language, 0); /* every response came from the Java server */

    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_remoting_encode(&b, c), NS_OK);
    if (b.len != len || memcmp(b.data, frame, len) != 0) {
        size_t at = 0;
        while (at < b.len && at < len && b.data[at] == frame[at])
            at++;
        fail_msg(
            "%s: re-encoded frame differs at byte %zu (len %zu vs %zu)\n  got:  %.*s\n  want: %.*s",
            what, at, b.len, len, (int)(b.len > 8 ? b.len - 8 : 0), (const char *)b.data + 8,
            (int)(len - 8), (const char *)frame + 8);
    }
    /* the header-only form is the same prefix */
    ns_buf_reset(&b);
    assert_int_equal(ns_remoting_encode_header(&b, c), NS_OK);
    assert_int_equal(b.len, 8 + hdr_len);
    assert_memory_equal(b.data, frame, b.len);
    ns_buf_free(&b);

    cnt->frames++;
    if (c->serialize_type == NS_SERIALIZE_JSON)
        cnt->json++;
    else
        cnt->binary++;
    if (c->body_len)
        cnt->with_body++;
    if (c->has_ext)
        cnt->with_ext++;
}

static void test_bin_vectors(void **state)
{
    (void)state;
    size_t n = 0;
    char **names = list_files(VECTORS_DIR, ".bin", &n);
    counts_t cnt = {0};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    /* the README lists 45 captured frames */
    assert_true(n >= 45);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "vectors/%s", names[i]);
        size_t len = 0;
        uint8_t *frame = nstest_fixture(rel, &len);
        check_frame(names[i], frame, len, &m, &cnt);
        /* spot checks against the README table */
        if (strstr(names[i], "-req-") != NULL)
            assert_int_equal(m.cmd.flag & NS_FLAG_RESPONSE, 0);
        else
            assert_int_equal(m.cmd.flag & NS_FLAG_RESPONSE, NS_FLAG_RESPONSE);
        if (strcmp(names[i], "uncompressed-REGISTER_BROKER-req-1.bin") == 0) {
            assert_int_equal(m.cmd.code, 103);
            assert_int_equal(m.cmd.body_len, 2845);
            assert_string_equal(ns_cmd_ext_get(&m.cmd, "brokerName"), "broker-a");
            assert_string_equal(ns_cmd_ext_get(&m.cmd, "bodyCrc32"), "521652184");
            assert_string_equal(m.cmd.ext[0].key, "brokerId");
        } else if (strcmp(names[i], "compressed-GET_ROUTEINFO_BY_TOPIC-rsp-1.bin") == 0) {
            assert_int_equal(m.cmd.code, 17);
            assert_non_null(m.cmd.remark);
            assert_non_null(strstr(m.cmd.remark, "TopicTest\nSee https://"));
            assert_false(m.cmd.has_ext);
        } else if (strcmp(names[i], "synth-compressed-true-REGISTER_BROKER-rsp-1.bin") == 0) {
            assert_true(m.cmd.has_ext);
            assert_int_equal(m.cmd.n_ext, 0);
            assert_int_equal(m.cmd.opaque, 4242);
        }
        free(frame);
    }
    assert_int_equal(cnt.frames, n);
    assert_true(cnt.with_body > 0);
    assert_true(cnt.with_ext > 0);
    print_message("%zu .bin frames round-tripped (%zu JSON, %zu binary)\n", cnt.frames, cnt.json,
                  cnt.binary);
    ns_cmd_msg_free(&m);
    free_names(names, n);
}

static void test_scenario_vectors(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/scenarios", VECTORS_DIR);
    size_t n = 0;
    char **names = list_files(dir, ".jsonl", &n);
    counts_t cnt = {0};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_true(n >= 9);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "vectors/scenarios/%s", names[i]);
        size_t len = 0;
        uint8_t *text = nstest_fixture(rel, &len);
        size_t steps = 0;
        char *line = (char *)text;
        char *end = (char *)text + len;
        while (line < end) {
            char *nl = memchr(line, '\n', (size_t)(end - line));
            size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);
            if (ll > 0) {
                cJSON *o = cJSON_ParseWithLength(line, ll);
                if (o == NULL)
                    fail_msg("%s: bad JSON line %zu", names[i], steps + 1);
                steps++;
                const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "step");
                int step = cJSON_IsNumber(st) ? st->valueint : -1;
                static const char *const keys[] = {"request_hex", "response_hex"};
                for (size_t k = 0; k < 2; k++) {
                    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
                    if (cJSON_IsNull(h))
                        continue; /* one-way or scrubbed (variable) response */
                    assert_true(cJSON_IsString(h));
                    size_t flen = 0;
                    uint8_t *frame = nstest_hex_decode(h->valuestring, &flen);
                    assert_non_null(frame);
                    char what[600];
                    snprintf(what, sizeof what, "%s step %d %s", names[i], step, keys[k]);
                    check_frame(what, frame, flen, &m, &cnt);
                    assert_int_equal(m.cmd.flag & NS_FLAG_RESPONSE, k == 1 ? NS_FLAG_RESPONSE : 0);
                    free(frame);
                }
                cJSON_Delete(o);
            }
            line += ll + 1;
        }
        assert_true(steps > 0);
        free(text);
    }
    assert_true(cnt.frames >= 300);
    assert_true(cnt.binary >= 5); /* the "ROCKETMQ request header" steps */
    print_message("%zu scenario frames round-tripped (%zu JSON, %zu binary)\n", cnt.frames,
                  cnt.json, cnt.binary);
    ns_cmd_msg_free(&m);
    free_names(names, n);
}

/* One binary-header request from the corpus, field by field. */
static void test_scenario_binary_fields(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *text = nstest_fixture("vectors/scenarios/kv.jsonl", &len);
    char *line = (char *)text;
    bool found = false;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    while (line < (char *)text + len && !found) {
        char *nl = memchr(line, '\n', (size_t)((char *)text + len - line));
        size_t ll = nl ? (size_t)(nl - line) : (size_t)((char *)text + len - line);
        cJSON *o = cJSON_ParseWithLength(line, ll);
        assert_non_null(o);
        if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "step")) == 11) {
            size_t flen = 0;
            uint8_t *f = nstest_hex_decode(
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "request_hex")), &flen);
            assert_non_null(f);
            assert_int_equal(ns_remoting_decode(f, flen, &m), NS_OK);
            assert_int_equal(m.cmd.serialize_type, NS_SERIALIZE_ROCKETMQ);
            assert_int_equal(m.cmd.code, 100);
            assert_int_equal(m.cmd.language, 0);
            assert_int_equal(m.cmd.version, 479);
            assert_int_equal(m.cmd.opaque, 11);
            assert_int_equal(m.cmd.flag, 0);
            assert_null(m.cmd.remark);
            assert_int_equal(m.cmd.n_ext, 3);
            assert_string_equal(m.cmd.ext[0].key, "namespace");
            assert_string_equal(ns_cmd_ext_get(&m.cmd, "namespace"), "CORPUS_KV");
            assert_string_equal(ns_cmd_ext_get(&m.cmd, "key"), "k1");
            assert_string_equal(ns_cmd_ext_get(&m.cmd, "value"), "v1b");
            free(f);
            found = true;
        }
        cJSON_Delete(o);
        line += ll + 1;
    }
    assert_true(found);
    ns_cmd_msg_free(&m);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bin_vectors),
        cmocka_unit_test(test_scenario_vectors),
        cmocka_unit_test(test_scenario_binary_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
