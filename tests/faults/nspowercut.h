/* nspowercut.h - the journal the power-cut shim (nspowercut.c) writes and
 * the harness (tests/powercut) reads: fixed-size records, each followed by
 * `len` name bytes (PC_REC_NAME) or by the old bytes a write or truncate
 * replaces (PC_REC_WRITE, PC_REC_TRUNC: min(off + len, old_size) - off of
 * them, none when off >= old_size). Host byte order: both ends are one
 * machine. */
#ifndef NS_POWERCUT_JOURNAL_H
#define NS_POWERCUT_JOURNAL_H

#include <stdint.h>

#define PC_MAGIC 0x4350534eu /* "NSPC" */
#define PC_MAX_FILES 16
#define PC_NAME_MAX 64
#define PC_NO_FILE (-1)  /* not watched; 255 in a record's file */
#define PC_DIR_FILE (-2) /* the watched directory itself */

enum {
    PC_REC_NAME = 1,    /* file index `file` is the name that follows (len bytes) */
    PC_REC_WRITE = 2,   /* about to write len bytes at off; the file had old_size bytes */
    PC_REC_TRUNC = 3,   /* about to set the size to off (from old_size) */
    PC_REC_DURABLE = 4, /* the write `seq` (O_DSYNC descriptor) completed: durable */
    PC_REC_SYNC = 5,    /* a sync of `file` returned: its records <= seq are durable */
    PC_REC_SYNCALL = 6, /* sync()/syncfs(): every file's records <= seq are durable */
    PC_REC_CREATE = 7,  /* `file` was created: its name is new in the directory */
    PC_REC_DIRSYNC = 8, /* the directory was synced: creates <= seq are durable */
    PC_REC_MAP = 9,     /* `file` was mapped shared and writable (len bytes at off) */
    PC_REC_CUT = 10,    /* the shim killed the process here (NSPC_CUT_AT) */
};

typedef struct {
    uint32_t magic;
    uint8_t type;
    uint8_t file;
    uint16_t pad;
    uint64_t seq;
    uint64_t off;
    uint64_t len;
    uint64_t old_size;
} pc_rec_t;
_Static_assert(sizeof(pc_rec_t) == 40, "pc_rec_t has no hidden padding");

#endif
