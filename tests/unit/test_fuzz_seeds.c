/* test_fuzz_seeds.c - replays the seed corpora of the libFuzzer targets
 * (tests/fuzz/corpus/) through the targets themselves, so that every build
 * runs their checks on the PROXY parser, the TLS detection path and the
 * header decoders (fast path against general) even without clang's
 * libFuzzer (the targets abort on a broken invariant). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nstest.h"

#define LLVMFuzzerTestOneInput fuzz_proxy_one
#include "tests/fuzz/fuzz_proxy.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_wire_one
#define LLVMFuzzerInitialize fuzz_wire_init
#include "tests/fuzz/fuzz_tls_detect.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_header_json_one
#include "tests/fuzz/fuzz_header_json.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_header_binary_one
#include "tests/fuzz/fuzz_header_binary.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_seed_page_one
#include "tests/fuzz/fuzz_seed_page.c"
#undef LLVMFuzzerTestOneInput

#define CORPUS NS_FIXTURES_DIR "/../fuzz/corpus"

/* Runs fn on every file of CORPUS/sub, whole and cut at every length (past
 * 256 bytes, at every 17th: the register bodies are kilobytes); the number
 * of files run. */
static int replay(const char *sub, int (*fn)(const uint8_t *, size_t))
{
    char dir[1024], path[2048];
    snprintf(dir, sizeof dir, "%s/%s", CORPUS, sub);
    DIR *d = opendir(dir);
    int files = 0;
    if (d == NULL)
        fail_msg("no corpus at %s", dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        uint8_t *data = NULL;
        size_t len = 0;
        if (nstest_read_file(path, &data, &len) != 0)
            continue;
        for (size_t n = 0; n < len; n += n < 256 ? 1 : 17)
            fn(data, n);
        fn(data, len);
        free(data);
        files++;
    }
    closedir(d);
    return files;
}

static void proxy_seeds(void **state)
{
    (void)state;
    assert_true(replay("proxy", fuzz_proxy_one) >= 5);
}

static void tls_detect_seeds(void **state)
{
    (void)state;
    assert_int_equal(fuzz_wire_init(NULL, NULL), 0);
    assert_true(replay("tls_detect", fuzz_wire_one) >= 4);
    /* and every seed under every mode and read size */
    char path[1024];
    snprintf(path, sizeof path, "%s/tls_detect/hello_permissive", CORPUS);
    uint8_t *data = NULL;
    size_t len = 0;
    assert_int_equal(nstest_read_file(path, &data, &len), 0);
    for (int mode = 0; mode < 0x20; mode++)
        for (int chunk = 0; chunk < 256; chunk += 37) {
            data[0] = (uint8_t)mode;
            data[1] = (uint8_t)chunk;
            fuzz_wire_one(data, len);
        }
    free(data);
}

/* Every seed, whole and cut at every length, decoded by the fast path and
 * by the general decoder: the target aborts if they disagree. */
static void header_json_seeds(void **state)
{
    (void)state;
    assert_true(replay("header_json", fuzz_header_json_one) >= 40);
}

static void header_binary_seeds(void **state)
{
    (void)state;
    assert_true(replay("header_binary", fuzz_header_binary_one) >= 40);
}

/* The NS_SEED_PAGE pages and requests, whole and cut at every length. */
static void seed_page_seeds(void **state)
{
    (void)state;
    assert_true(replay("seed_page", fuzz_seed_page_one) >= 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_page_seeds),     cmocka_unit_test(proxy_seeds),
        cmocka_unit_test(tls_detect_seeds),    cmocka_unit_test(header_json_seeds),
        cmocka_unit_test(header_binary_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
