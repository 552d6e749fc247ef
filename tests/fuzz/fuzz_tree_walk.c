/* fuzz_tree_walk.c - the descent of an LMDB B-tree read from memory
 * (store/tree_walk.h) on pages it did not see LMDB write: byte 0 is the
 * depth, byte 1 the root's page, byte 2 the key's length, then the key, then
 * 256-byte pages (at most 64). Every read must stay inside those pages
 * (ASan), and a value found must lie inside them too; the same for the
 * route index's check of one node (ns_tree_leaf_at) and the warming of
 * those nodes (ns_tree_warm, which reads the headers of those whose lines
 * it is not told in full). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "store/lmdb_page.h"
#include "store/tree_walk.h"

#define PSIZE 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size < 3u + data[2])
        return 0;
    size_t klen = data[2], pages = (size - 3 - klen) / PSIZE;
    if (pages == 0 || pages > 64)
        return 0;
    uint8_t *map = malloc(pages * PSIZE); /* exactly the pages: ASan sees their end */
    if (map == NULL)
        return 0;
    memcpy(map, data + 3 + klen, pages * PSIZE);
    ns_tree_t t = {map, PSIZE, pages, data[1], (unsigned)(data[0] % 8)};
    const void *val;
    size_t vlen;
    int rc = ns_tree_get(&t, data + 3, klen, &val, &vlen);
    if (rc == NS_OK) {
        const uint8_t *v = val;
        if (v < map || vlen > pages * PSIZE || (size_t)(v - map) > pages * PSIZE - vlen)
            abort();
    } else if (rc != NS_ENOTFOUND && rc != NS_EFALLBACK) {
        abort();
    }
    /* each node of the root's page as the route index would name it (its
     * offset from the page's pointers), and offsets anywhere
     * (ns_tree_leaf_at): the same bounds */
    ns_tree_spot_t spots[16];
    for (unsigned i = 0; i < 16; i++) {
        unsigned off = (unsigned)data[0] * (i - 7);
        size_t at = (size_t)data[1] * PSIZE + NS_LMDB_PAGE_HDR + 2 * i;
        if (i < 8 && at + 2 <= pages * PSIZE)
            off = ns_lmdb_rd16(map + at);
        spots[i] = (ns_tree_spot_t){data[1] + (i & 1), off, (data[0] + i) & NS_TREE_LINES_MORE};
        rc = ns_tree_leaf_at(&t, data[1], off, data + 3, klen, &val, &vlen);
        const uint8_t *v = val;
        if (rc == NS_OK &&
            (v < map || vlen > pages * PSIZE || (size_t)(v - map) > pages * PSIZE - vlen))
            abort();
        if (rc != NS_OK && rc != NS_ENOTFOUND && rc != NS_EFALLBACK)
            abort();
    }
    ns_tree_warm(&t, spots, 16);
    ns_tree_t r; /* the first page's bytes as a table record too */
    (void)ns_tree_from_record(&r, map, NS_LMDB_DB_RECORD);
    free(map);
    return 0;
}
