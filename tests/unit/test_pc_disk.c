/* test_pc_disk.c - the disk states the power-cut harness makes
 * (tests/powercut/pc_disk.c) from a journal written here by hand: what a
 * sync or an O_DSYNC write made durable is never taken back, what is
 * pending may be, whole or per 512-byte sector and in any order, the size
 * goes back with it, an unsynced new name may vanish, a journal cut inside
 * its last record is read, and a file mapped writable that is not lock.mdb
 * is refused.
 *
 * The file "f" of every case: 2048 bytes of 'A'; write 1 (then synced)
 * puts 1024 'B' at 0; write 2 puts 1024 'C' at 512; write 3 appends 512
 * 'D' (size 2560). Sector 0 is B for good; sector 1 is B or C; sector 2 is
 * A or C; sector 3 is A; sector 4 exists only with the size 2560, zeros or
 * D. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nspowercut.h"
#include "nstest.h"
#include "pc_disk.h"

typedef struct {
    char *dir;
    char file[4200], journal[4200];
    int jfd;
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL || (fx->dir = nstest_tmpdir("pcdisk")) == NULL) {
        free(fx);
        return -1;
    }
    snprintf(fx->file, sizeof fx->file, "%s/f", fx->dir);
    snprintf(fx->journal, sizeof fx->journal, "%s.journal", fx->dir);
    fx->jfd = -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    if (fx->jfd >= 0)
        close(fx->jfd);
    unlink(fx->journal);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static void put(fx_t *fx, const void *p, size_t n)
{
    assert_int_equal(write(fx->jfd, p, n), (ssize_t)n);
}

static void rec(fx_t *fx, uint8_t type, uint64_t seq, uint64_t off, uint64_t len, uint64_t old_size,
                const void *old, size_t old_len)
{
    pc_rec_t r = {PC_MAGIC, type, 0, 0, seq, off, len, old_size};
    put(fx, &r, sizeof r);
    if (old_len)
        put(fx, old, old_len);
}

/* The file after the three writes, and the journal that tells them;
 * extra(fx) may add records (NULL: none). */
static void make_case(fx_t *fx, bool create, bool dirsync, bool durable2, void (*extra)(fx_t *fx))
{
    char a[2048], b[1024], c[1024], d[512];
    memset(a, 'A', sizeof a);
    memset(b, 'B', sizeof b);
    memset(c, 'C', sizeof c);
    memset(d, 'D', sizeof d);
    char now[2560];
    memcpy(now, b, 512);
    memcpy(now + 512, c, 1024);
    memcpy(now + 1536, a, 512);
    memcpy(now + 2048, d, 512);
    int fd = open(fx->file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, now, sizeof now), (ssize_t)sizeof now);
    close(fd);
    fx->jfd = open(fx->journal, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fx->jfd >= 0);
    pc_rec_t name = {PC_MAGIC, PC_REC_NAME, 0, 0, 0, 0, 1, 0};
    put(fx, &name, sizeof name);
    put(fx, "f", 1);
    if (create)
        rec(fx, PC_REC_CREATE, 1, 0, 0, 0, NULL, 0);
    if (dirsync)
        rec(fx, PC_REC_DIRSYNC, 1, 0, 0, 0, NULL, 0);
    rec(fx, PC_REC_WRITE, 2, 0, 1024, 2048, a, 1024);
    rec(fx, PC_REC_SYNC, 2, 0, 0, 0, NULL, 0);
    char old2[1024]; /* what write 2 replaced: B then A */
    memcpy(old2, b, 512);
    memcpy(old2 + 512, a, 512);
    rec(fx, PC_REC_WRITE, 3, 512, 1024, 2048, old2, 1024);
    if (durable2)
        rec(fx, PC_REC_DURABLE, 3, 0, 0, 0, NULL, 0);
    rec(fx, PC_REC_WRITE, 4, 2048, 512, 2048, NULL, 0);
    if (extra)
        extra(fx);
    close(fx->jfd);
    fx->jfd = -1;
}

/* The file's sectors as letters ('0' zeros, '?' mixed, '-' beyond the
 * end): "BCCA-" and so on. Fails the test when the file is not there. */
static void sectors(fx_t *fx, char out[6])
{
    uint8_t *p = NULL;
    size_t n = 0;
    assert_int_equal(nstest_read_file(fx->file, &p, &n), 0);
    for (size_t s = 0; s < 5; s++) {
        char c = '-';
        if ((s + 1) * 512 <= n) {
            c = p[s * 512] ? (char)p[s * 512] : '0';
            for (size_t i = 0; i < 512; i++)
                if (p[s * 512 + i] != p[s * 512])
                    c = '?';
        } else if (s * 512 < n) {
            c = '?';
        }
        out[s] = c;
    }
    out[5] = 0;
    free(p);
}

/* The first seed from `from` whose strategy is want. */
static uint64_t seed_for(pc_strategy_t want, uint64_t from)
{
    for (uint64_t s = from;; s++) {
        uint64_t r = s;
        if ((pc_strategy_t)(pc_rand(&r) % PC_STRATEGIES) == want)
            return s;
    }
}

static void cut(fx_t *fx, uint64_t seed, pc_stats_t *st)
{
    char err[256];
    if (pc_power_cut(fx->journal, fx->dir, seed, st, err, sizeof err) != 0)
        fail_msg("pc_power_cut: %s", err);
}

static void test_lose_all_and_keep_all(void **state)
{
    fx_t *fx = *state;
    pc_stats_t st;
    char got[6];
    make_case(fx, false, false, false, NULL);
    cut(fx, seed_for(PC_LOSE_ALL, 1), &st);
    assert_int_equal(st.strategy, PC_LOSE_ALL);
    sectors(fx, got);
    assert_string_equal(got, "BBAA-"); /* the synced state, at its size */
    assert_int_equal(st.pending, 2);
    make_case(fx, false, false, false, NULL);
    cut(fx, seed_for(PC_KEEP_ALL, 1), &st);
    sectors(fx, got);
    assert_string_equal(got, "BCCAD"); /* what the process left */
}

/* Every sector ends as one of its versions; over many seeds, every
 * combination shows up, the torn ones (half of write 2) included. */
static void test_every_state_and_only_those(void **state)
{
    fx_t *fx = *state;
    const char *const allowed[] = {"BBAA-", "BCAA-", "BBCA-", "BCCA-", "BBAA0", "BCAA0", "BBCA0",
                                   "BCCA0", "BBAAD", "BCAAD", "BBCAD", "BCCAD", NULL};
    int seen[12] = {0};
    for (uint64_t seed = 1; seed <= 400; seed++) {
        pc_stats_t st;
        char got[6];
        make_case(fx, false, false, false, NULL);
        cut(fx, seed, &st);
        sectors(fx, got);
        int i = 0;
        while (allowed[i] && strcmp(allowed[i], got) != 0)
            i++;
        if (allowed[i] == NULL)
            fail_msg("seed %llu (%s): a state no disk could hold: %s", (unsigned long long)seed,
                     pc_strategy_name(st.strategy), got);
        seen[i]++;
    }
    for (int i = 0; allowed[i]; i++)
        if (seen[i] == 0)
            fail_msg("state %s never made in 400 seeds", allowed[i]);
}

/* A write through an O_DSYNC descriptor is on the disk once it returned. */
static void test_durable_write_stays(void **state)
{
    fx_t *fx = *state;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        pc_stats_t st;
        char got[6];
        make_case(fx, false, false, true, NULL);
        cut(fx, seed, &st);
        sectors(fx, got);
        if (strncmp(got, "BCCA", 4) != 0)
            fail_msg("seed %llu (%s): the durable write was undone: %s", (unsigned long long)seed,
                     pc_strategy_name(st.strategy), got);
        assert_int_equal(st.durable, 1);
    }
}

/* A new name is durable only once the directory was synced. */
static void test_new_name_may_vanish(void **state)
{
    fx_t *fx = *state;
    pc_stats_t st;
    make_case(fx, true, false, false, NULL);
    cut(fx, seed_for(PC_LOSE_ALL, 1), &st);
    assert_int_equal(st.removed, 1);
    assert_int_not_equal(access(fx->file, F_OK), 0);
    for (uint64_t seed = 1; seed <= 50; seed++) {
        make_case(fx, true, true, false, NULL);
        cut(fx, seed, &st);
        assert_int_equal(st.removed, 0);
        assert_int_equal(access(fx->file, F_OK), 0);
    }
}

static void torn_tail(fx_t *fx)
{
    pc_rec_t r = {PC_MAGIC, PC_REC_WRITE, 0, 0, 5, 0, 512, 2560};
    put(fx, &r, sizeof r);
    put(fx, "xx", 2); /* killed while writing the old bytes: never written */
}

static void mapped(fx_t *fx)
{
    rec(fx, PC_REC_MAP, 5, 0, 4096, 0, NULL, 0);
}

static void test_torn_journal_tail_and_mapped_file(void **state)
{
    fx_t *fx = *state;
    pc_stats_t st;
    char got[6], err[256];
    make_case(fx, false, false, false, torn_tail);
    cut(fx, seed_for(PC_LOSE_ALL, 1), &st);
    sectors(fx, got);
    assert_string_equal(got, "BBAA-");
    make_case(fx, false, false, false, mapped);
    assert_int_equal(pc_power_cut(fx->journal, fx->dir, 1, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "mapped shared and writable"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lose_all_and_keep_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_state_and_only_those, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable_write_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_name_may_vanish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_journal_tail_and_mapped_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
