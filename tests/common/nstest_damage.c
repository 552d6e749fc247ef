/* nstest_damage.c - damaging one table of an LMDB store file for the
 * damage and recovery tests (nstest.h). The root page is found the way LMDB
 * finds it: the newer meta page names the main directory's root, whose leaf
 * nodes hold each table's MDB_db record (md_root at byte 40 of its 48).
 * Layout (lmdb 0.9, 64-bit): page header 16 bytes (pgno 8, pad 2, flags 2,
 * lower 2, upper 2); meta: magic 4, version 4, address 8, mapsize 8, dbs[2]
 * of 48, last_pg 8, txnid 8; leaf node: lo 2, hi 2, flags 2, ksize 2, key,
 * data. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nstest.h"

#define PAGE 4096

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint64_t table_root(const uint8_t *f, size_t n, const char *name)
{
    if (n < 2 * PAGE)
        return 0;
    const uint8_t *m0 = f + 16, *m1 = f + PAGE + 16;
    const uint8_t *m = le64(m1 + 24 + 96 + 8) > le64(m0 + 24 + 96 + 8) ? m1 : m0;
    uint64_t main_root = le64(m + 24 + 48 + 40);
    if ((main_root + 1) * PAGE > n)
        return 0;
    const uint8_t *pg = f + main_root * PAGE;
    uint16_t flags = le16(pg + 10), lower = le16(pg + 12);
    if (!(flags & 0x02)) /* P_LEAF: a handful of tables fit one page */
        return 0;
    for (size_t i = 0; i < ((size_t)lower - 16) / 2; i++) {
        const uint8_t *node = pg + le16(pg + 16 + 2 * i);
        uint16_t ksize = le16(node + 6);
        if (ksize == strlen(name) && memcmp(node + 8, name, ksize) == 0)
            return le64(node + 8 + ksize + 40);
    }
    return 0;
}

/* Overwrites page pgno of file, after its 8-byte page number, with
 * garbage (byte i: seed ^ i * mul) that still claims to be a branch page of
 * many children. 0 or -1. */
static int write_junk(const char *file, uint64_t pgno, uint8_t seed, int mul)
{
    uint8_t junk[PAGE];
    for (int i = 0; i < PAGE; i++)
        junk[i] = (uint8_t)(seed ^ (i * mul));
    junk[10] = 0x01; /* P_BRANCH */
    junk[11] = 0;
    int fd = open(file, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t w = pwrite(fd, junk + 8, PAGE - 8, (off_t)(pgno * PAGE + 8));
    close(fd);
    return w == PAGE - 8 ? 0 : -1;
}

int nstest_damage_table(const char *file, const char *table)
{
    uint8_t *f = NULL;
    size_t n = 0;
    if (nstest_read_file(file, &f, &n) != 0)
        return -1;
    uint64_t root = table_root(f, n, table);
    free(f);
    if (root == 0 || root == UINT64_MAX)
        return -1;
    return write_junk(file, root, 0xA5, 31);
}

int nstest_damage_inner_page(const char *file, const char *table)
{
    uint8_t *f = NULL;
    size_t n = 0;
    if (nstest_read_file(file, &f, &n) != 0)
        return -1;
    uint64_t root = table_root(f, n, table), child = 0;
    if (root != 0 && root != UINT64_MAX && (root + 1) * PAGE <= n) {
        const uint8_t *pg = f + root * PAGE;
        uint16_t flags = le16(pg + 10), lower = le16(pg + 12);
        size_t keys = ((size_t)lower - 16) / 2;
        if ((flags & 0x01) && keys >= 3) { /* P_BRANCH: node lo, hi, flags = the child */
            const uint8_t *node = pg + le16(pg + 16 + 2 * (keys / 2));
            child = (uint64_t)le16(node) | (uint64_t)le16(node + 2) << 16 |
                    (uint64_t)le16(node + 4) << 32;
        }
    }
    free(f);
    if (child == 0 || (child + 1) * PAGE > n)
        return -1;
    return write_junk(file, child, 0x5A, 29);
}
