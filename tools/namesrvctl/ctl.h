/* ctl.h - what the namesrvctl subcommand files share: exit codes, option
 * parsing, messages, opening the store, files, time and progress.
 *
 * Every subcommand is one `int ctl_cmd_<name>(int argc, char **argv)` that
 * gets the arguments after its own name and returns an exit code (CTL_*).
 * Subcommands print their result on stdout and diagnostics on stderr.
 */
#ifndef NS_CTL_H
#define NS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ns/buf.h"
#include "ns/remoting.h"
#include "ns/client.h"
#include "ns/store.h"

/* Exit codes (documented in main.c usage and docs/namesrvctl.md). */
enum {
    CTL_OK = 0,      /* success */
    CTL_FAILED = 1,  /* verify found violations, or a request was refused/failed */
    CTL_USAGE = 2,   /* bad command line */
    CTL_LOCKED = 3,  /* the data directory is held by another process (namesrvd) */
    CTL_INVALID = 4, /* the input document (dump, kvConfig.json) is invalid */
    CTL_IO = 5,      /* I/O, network or store error */
};

/* The dump document (dump.c writes it, restore.c reads it). */
#define CTL_DUMP_FORMAT "namesrv-dump"
#define CTL_DUMP_FORMAT_VERSION 1
/* Integers beyond +-(2^53 - 1) are written as decimal strings (a double
 * cannot hold them); readers accept both forms. */
#define CTL_JSON_MAX_SAFE_INT 9007199254740991LL

/* ---- command line ----
 * One row per option; `--name VALUE` and `--name=VALUE` both work for
 * options with a value, flags set *flag. Short aliases ("-o") are rows of
 * their own. Options and positional arguments may be mixed; "--" ends
 * options. */
typedef struct {
    const char *name;   /* "--data-dir", "-o" */
    const char **value; /* option with a value: receives it (borrowed from argv) */
    bool *flag;         /* flag: set to true */
} ctl_opt_t;

/* Parses argv[0..argc) of subcommand cmd. Positional arguments go to pos
 * (at most max_pos, at least min_pos). Prints a message and returns
 * CTL_USAGE on an unknown option, a missing value or a wrong number of
 * positional arguments; CTL_OK otherwise. opts ends with a {NULL} row. */
int ctl_parse(const char *cmd, int argc, char **argv, const ctl_opt_t *opts, const char **pos,
              int min_pos, int max_pos, int *n_pos);

/* 2 when arg is a common option of the online commands that takes a value
 * ("--ns", "--tls-ca"), 1 when it is a flag or carries its value
 * ("--json", "--ns=X"), 0 when it is none of them. */
int ctl_common_option_arity(const char *arg);

/* "namesrvctl: <message>" on stderr, escaped as ctl_txt_json escapes (a
 * server's remark may quote a peer's text). */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- text output ----
 * Every stored string a text-mode command prints goes through one of these
 * (ns/utf8.h), so that a stored newline, ESC, C1 control or bidi override
 * can neither forge a line nor drive or reorder the operator's terminal;
 * --json output stays exact (JSON's own escapes).
 * ctl_txt: s escaped, '\\' too, so that what is shown reads back
 * unambiguously ("\\x1b" is the four characters, "\x1b" the ESC).
 * ctl_txt_json: JSON text shown in a text line, its backslashes left as
 * they are (they are JSON's escapes).
 * Both return a string that stays valid for CTL_TXT_SLOTS further calls (a
 * ring of buffers, so that one printf can show several); NULL shows as "". */
#define CTL_TXT_SLOTS 16
const char *ctl_txt(const char *s);
const char *ctl_txt_json(const char *s);
/* Writes the n bytes of text (lines of a report, a properties file) to f
 * line by line, each escaped as ctl_txt_json escapes, each ended by a
 * newline. */
void ctl_print_lines(FILE *f, const char *text, size_t n);
/* Prints "namesrvctl <cmd>: missing --<opt>" and returns CTL_USAGE. */
int ctl_missing(const char *cmd, const char *opt);

/* ---- the store ----
 * Offline readers (dump, audit, verify, backup, stat) open read-only and
 * without the directory lock: safe while namesrvd runs, and every read
 * transaction is a consistent snapshot. They refuse a directory that holds
 * no store (no data.mdb) rather than create one. Writers (restore, import-kvconfig)
 * take the lock, so they refuse while a server holds the directory.
 * Both print the reason on failure and return a CTL_* code. */
int ctl_store_open_ro(const char *dir, ns_store_t **out);
/* The data directory readers use when --data-dir is not given:
 * $NAMESRV_DATA_DIR if set, else /var/lib/namesrv (the package's) when it
 * holds a store; NULL otherwise (the command then asks for --data-dir).
 * Writers always need an explicit --data-dir. Static or environment string. */
const char *ctl_default_data_dir(void);
int ctl_store_open_rw(const char *dir, size_t map_size_bytes, ns_store_t **out);
/* Records an offline write in the admin trail (peer "namesrvctl@local",
 * with the user), in write transaction t: command name and a detail JSON
 * object text. The trail keeps its newest CTL_TRAIL_RETENTION records. */
#define CTL_TRAIL_RETENTION 100000
int ctl_trail_record(ns_txn_t *t, const char *cmd, const char *detail);
/* Exit code for an NS_* error of a store operation (NS_ECORRUPT: 4, as
 * verify's verdict on a damaged store). */
int ctl_exit_for(int ns_err);
/* The two lines verify prints for a damaged store (label "store" or
 * "backup"), which every command that finds damage prints the same way. */
void ctl_report_damage(const char *label, const char *dir, const char *table, const char *detail);

/* ---- files ---- */
/* Reads a whole file ("-" = stdin) into a NUL-terminated heap buffer. */
int ctl_read_file(const char *path, char **out, size_t *len);
/* Writes data to path atomically (path.tmp + fsync + rename); NULL or "-"
 * = stdout. Returns CTL_OK or CTL_IO (message printed). */
int ctl_write_file(const char *path, const void *data, size_t len);

/* ---- time ---- */
int64_t ctl_now_ms(void);  /* wall clock, ms since the epoch */
int64_t ctl_mono_ms(void); /* monotonic clock, ms */
/* "2025-09-19T07:45:40.123Z" (UTC) into buf (at least 32 bytes). */
void ctl_format_time(int64_t ms, char *buf, size_t n);
/* Parses ms since the epoch (digits) or an ISO-8601 date/time in UTC:
 * YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z]. NS_OK or NS_EINVAL. */
int ctl_parse_time(const char *s, int64_t *ms);

/* ---- progress on stderr, only when stderr is a terminal ---- */
typedef struct {
    bool on;
    const char *what;
    size_t total, done;
    int64_t last_ms;
} ctl_progress_t;

void ctl_progress_init(ctl_progress_t *p, const char *what, size_t total);
void ctl_progress_step(ctl_progress_t *p, size_t n);
void ctl_progress_done(ctl_progress_t *p);

/* ---- online sessions (session.c) ----
 * The common options of every online command: --ns/-n, --json, --timeout,
 * --access-key/--secret-key (requests are then signed, include/ns/sign.h). */
#define MAX_SERVERS 16
#define MAX_EXT 8
typedef struct {
    const char *cmd;
    char *list; /* copy of --ns, cut into addrs */
    const char *addrs[MAX_SERVERS];
    size_t n_addrs;
    bool json;
    int timeout_ms;
    const char *access_key, *secret_key; /* sign requests when access_key is set */
    bool use_tls;                        /* --tls and the --tls-* options (include/ns/tls.h) */
    ns_client_tls_t tls;
} session_t;

typedef struct {
    int code;
    const char *kv[2 * MAX_EXT + 1]; /* "k","v",...,NULL */
    const uint8_t *body;
    size_t body_len;
} request_t;

/* Called with each SUCCESS response; returns a CTL_* code. */
typedef int (*reply_fn)(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx);

/* Parses the common options plus extra (a {NULL}-ended list) and the
 * positional arguments; free with ctl_session_free. CTL_* code. */
int ctl_session_init(session_t *s, const char *cmd, int argc, char **argv, const ctl_opt_t *extra,
                     const char **pos, int min_pos, int max_pos, int *n_pos);
void ctl_session_free(session_t *s);
/* Connects to addr with the session's TLS settings and, when keys are
 * set, signing. NS_OK with *c (ns_client_close), or the client's error
 * (*why: the TLS failure, or NULL). */
int ctl_connect(session_t *s, const char *addr, ns_client_t **c, const char **why);
/* Both ask every server in turn. fn gets each SUCCESS reply; error answers
 * and unreachable servers are printed. ctl_ask_one is for reads: with more
 * than one server (and no --json) a "== host:port" line precedes each
 * answer, and "no name server could be reached" when none was. ctl_ask_all
 * is for writes. CTL_* code (the worst one). */
int ctl_ask_one(session_t *s, const request_t *r, reply_fn fn, void *ctx);
int ctl_ask_all(session_t *s, const request_t *r, reply_fn fn, void *ctx);
/* Prints one server's JSON result: as it is with one server, else wrapped
 * as {"server":addr,"result":json} so every line says whose it is. */
void ctl_print_json_result(session_t *s, const char *addr, const char *json, size_t len);

/* ---- subcommands ---- */
int ctl_cmd_dump(int argc, char **argv);            /* dump.c */
int ctl_cmd_restore(int argc, char **argv);         /* restore.c */
int ctl_cmd_import_kvconfig(int argc, char **argv); /* restore.c */
int ctl_cmd_audit(int argc, char **argv);           /* audit.c */
int ctl_cmd_verify(int argc, char **argv);          /* offline.c */
int ctl_cmd_backup(int argc, char **argv);          /* offline.c */
int ctl_cmd_stat(int argc, char **argv);            /* offline.c */
int ctl_cmd_recover(int argc, char **argv);         /* recover.c */
int ctl_cmd_route(int argc, char **argv);           /* online.c */
int ctl_cmd_clusters(int argc, char **argv);
int ctl_cmd_topics(int argc, char **argv);
int ctl_cmd_kv(int argc, char **argv);
int ctl_cmd_wipe_perm(int argc, char **argv);
int ctl_cmd_add_perm(int argc, char **argv);
int ctl_cmd_delete_topic(int argc, char **argv);
int ctl_cmd_config(int argc, char **argv);
int ctl_cmd_export_kvconfig(int argc, char **argv); /* maint.c */
int ctl_cmd_prune_groups(int argc, char **argv);    /* maint.c */
int ctl_cmd_user(int argc, char **argv);            /* users.c: offline (--data-dir) or online */
int ctl_cmd_fleet(int argc, char **argv);           /* fleet.c: fleet diff */
/* top.c: the live view of a server's /metrics */
int ctl_cmd_top(int argc, char **argv);
int ctl_cmd_health(int argc, char **argv);

#endif
