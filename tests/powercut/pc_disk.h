/* pc_disk.h - the disk a power cut leaves: reads the journal the power-cut
 * shim (tests/faults/nspowercut.c) wrote while a process ran on a
 * directory, and turns the directory's files into one of the states a disk
 * could hold after the power went at the moment the process died.
 *
 * The model, per file, from the journal's records:
 *   - records before the file's last completed sync (or sync()) are on the
 *     disk; so is each write made through an O_DSYNC descriptor;
 *   - every other write (and truncate) may or may not have reached the disk,
 *     independently per 512-byte sector (a sector is written whole or not at
 *     all), in any order: each sector ends as one of the versions it had
 *     since the last durable one - torn writes and reordered writes both;
 *   - the file's size ends as one of the sizes it had since the last
 *     durable one (bytes of a sector that never reached the disk inside
 *     that size read as zeros);
 *   - a file created since the directory was last synced may be gone;
 *   - a file mapped shared and writable (lock.mdb, or name-lock) may hold
 *     what the process left, zeros, or nothing at all; any other mapped file
 *     cannot be simulated (its writes bypass the shim) and is an error;
 *   - renames are not modelled (a rename not yet made durable by a sync of
 *     the directory is kept).
 * The seed picks the state: a strategy (all lost, all kept, per write, per
 * sector, a prefix in time) and then the choices it leaves. */
#ifndef NS_PC_DISK_H
#define NS_PC_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PC_SECTOR 512

typedef enum {
    PC_LOSE_ALL,  /* nothing since the last sync reached the disk */
    PC_KEEP_ALL,  /* everything did (what kill -9 leaves) */
    PC_BY_WRITE,  /* each write whole or not at all, at random */
    PC_BY_SECTOR, /* each sector any of its versions: torn writes */
    PC_PREFIX,    /* the writes before a random moment, the others not */
    PC_STRATEGIES
} pc_strategy_t;

/* What one application did, for the cut's report line. */
typedef struct {
    pc_strategy_t strategy;
    unsigned pending;   /* writes and truncates not known durable */
    unsigned durable;   /* the others since the last sync (O_DSYNC writes) */
    unsigned sectors;   /* sectors some pending write touched */
    unsigned reverted;  /* sectors set back to an older version */
    unsigned resized;   /* files whose size went back */
    unsigned removed;   /* files whose directory entry was lost */
    unsigned lock_mode; /* mapped files: 0 as left, 1 zeros, 2 empty, 3 gone */
    bool cut_by_shim;   /* the shim killed the process (NSPC_CUT_AT) */
} pc_stats_t;

const char *pc_strategy_name(pc_strategy_t s);

/* Reads the journal at journal_path and changes the files of dir (the
 * directory the shim watched) into the disk state the seed picks; then
 * fsyncs them and dir, so that the next run starts from that state as its
 * durable one. Returns 0, or -1 with a message in err (an unreadable or
 * torn journal, a file that cannot be simulated, an I/O error). */
int pc_power_cut(const char *journal_path, const char *dir, uint64_t seed, pc_stats_t *st,
                 char *err, size_t errlen);

/* splitmix64: the harness's random numbers (one stream per seed). */
uint64_t pc_rand(uint64_t *state);

#endif
