/* kvver.h - the version of a KV entry and the merge rule of kvSync (base
 * floor: pure code, no store, no I/O).
 *
 * A version is (hlc, server). hlc is a hybrid logical clock: the wall clock
 * in ms in its high 48 bits and a counter in its low 16, so it orders like
 * the wall clock while the clocks agree and stays monotonic when they do
 * not (a local write takes max(wall << 16, last + 1): a clock that steps
 * back only makes the counter run). server is the 64-bit id the store made
 * once (meta "kv_server_id"); it breaks ties between servers. An entry
 * written before versions existed (or by an import or restore) has version
 * (0, 0).
 *
 * The order of two states of one entry, the same on every server, is a
 * total order on what they hold, so any two servers that merge in either
 * direction end with the same state:
 *   1. the greater hlc;
 *   2. then the greater server id;
 *   3. then a tombstone over a value (a delete is never undone by a tie);
 *   4. then the greater value bytes (memcmp, then the longer): two servers
 *      with the same id (copied from one backup) and the same hlc still
 *      pick the same side.
 * Absent (no value, no tombstone) is below every state. */
#ifndef NS_KVVER_H
#define NS_KVVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_KVVER_LOGICAL_BITS 16

typedef struct {
    uint64_t hlc;
    uint64_t server;
    bool deleted; /* a tombstone: the entry was deleted at this version */
} ns_kvver_t;

/* The wall-clock ms of an hlc. */
static inline int64_t ns_kvver_wall_ms(uint64_t hlc)
{
    return (int64_t)(hlc >> NS_KVVER_LOGICAL_BITS);
}

/* The hlc of a local write after last (the greatest hlc issued or seen),
 * at wall clock wall_ms: max(wall_ms << 16, last + 1). */
uint64_t ns_kvver_next(uint64_t last, int64_t wall_ms);

/* -1, 0, 1 as state a (version av, value [ap, ap+an) when not deleted)
 * orders below, equal to or above state b, by the rule above. */
int ns_kvver_cmp(const ns_kvver_t *av, const void *ap, size_t an, const ns_kvver_t *bv,
                 const void *bp, size_t bn);

/* True when hlc's wall part lies more than skew_ms after now_ms: a version
 * from the future, which kvSync refuses (a peer with a clock far ahead, or
 * one that lies, would otherwise win every later write for that long). */
bool ns_kvver_too_new(uint64_t hlc, int64_t now_ms, int64_t skew_ms);

/* "hlc.server" as 16 + 1 + 16 hex digits into out (34 bytes), and back:
 * the form of a version in bodies and logs. Parse: true when s is exactly
 * that form. */
void ns_kvver_format(const ns_kvver_t *v, char out[34]);
bool ns_kvver_parse(const char *s, ns_kvver_t *v);

#endif
