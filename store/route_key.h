/* route_key.h - where a topic's route lives in the routes table (schema
 * v12, issue 31).
 *
 * A lookup's descent of the routes tree compares its key with ~16 node keys
 * at 100k topics and ~19 at a million; with topic names as keys each of
 * those compares is a byte-string compare (~55 instructions with the
 * bytes the keys share skipped, tree_walk.c). So the table is keyed by a
 * fixed 8-byte hash of the name instead, which compares as one integer:
 *
 *   key    XXH3-64 of the name, big-endian (byte order = number order)
 *   value  [u16 name length, host order][name][route, as store/keys.h says]
 *
 * The name in the value tells a topic from another with the same hash. The
 * first topic of a hash takes the 8-byte key; any other topic of that hash
 * is stored under the hash followed by its name (a longer key, so it sorts
 * right after the 8-byte one). A lookup descends once for the 8-byte key
 * and once more only when the name there is another topic's. When the
 * 8-byte key's topic goes, the first longer key of its hash moves up into
 * it, so a topic is only ever under the long key while another holds the
 * short one. XXH3 is unkeyed: names crafted to share a hash (a peer that
 * can register topics) cost those topics a second descent, the cost every
 * lookup had with names as keys, and nothing else. XXH3's output is fixed
 * since xxHash 0.8.0; a store's keys do not depend on the library's version.
 *
 * Raw LMDB: used by store/route.c and by the migration that rekeys a v11
 * table (migrations/0012_hashed_route_keys.c). */
#ifndef NS_STORE_ROUTE_KEY_H
#define NS_STORE_ROUTE_KEY_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_ROUTE_HASH_BYTES 8
#define NS_ROUTE_NAME_MAX (511 - NS_ROUTE_HASH_BYTES) /* LMDB's longest key, less the hash */

/* Tests narrow the hash with this to make topics collide (all ones
 * otherwise). The keys of a store depend on it: never changed in a binary
 * that opens stores it did not create. */
extern uint64_t ns_route_hash_mask;

/* The key of name (n bytes, 1..NS_ROUTE_NAME_MAX) into key, which has room
 * for NS_ROUTE_HASH_BYTES + n bytes: its 8-byte hash, then (long) the name. */
size_t ns_route_key(const char *name, size_t n, bool long_key, uint8_t *key);

/* Splits an entry's value into the name it is of and the route after it;
 * false when v is too short for the name it says it holds. */
bool ns_route_entry_split(const MDB_val *v, const char **name, size_t *n, MDB_val *route);

/* Reserves room for name's route of len bytes in the table dbi of txn,
 * under the 8-byte key or the long one as above, replacing what name had;
 * writes the name header and sets *route to the len bytes to fill. LMDB's
 * error code, or 0. */
int ns_route_entry_reserve(MDB_txn *txn, MDB_dbi dbi, const char *name, size_t n, size_t len,
                           uint8_t **route);

/* Deletes name's entry from dbi, moving another topic of its hash up into
 * the 8-byte key when name held it. 0 also when name has none. */
int ns_route_entry_del(MDB_txn *txn, MDB_dbi dbi, const char *name, size_t n);

#endif
