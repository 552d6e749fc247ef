/* backup.h - periodic hot backups of the store, so that a damaged store can
 * be recovered (namesrvctl recover) without a cold start.
 *
 * Every backupIntervalSeconds a thread of its own writes a compacted copy of
 * the live store (mdb_env_copy2 with MDB_CP_COMPACT: a consistent snapshot,
 * taken while namesrvd serves and writes) with its BACKUP-INFO (sequence,
 * txnid: include/ns/store.h "backups") into backupDir/backup-<seq>.tmp,
 * copies the settings file (configStorePath) beside it as
 * namesrv.properties, fsyncs it all, reads and checks all of it (ns_store_check_dir, in a child
 * process), and only then renames it to backupDir/backup-<seq>-t<txnid> and
 * fsyncs the directory: a name without ".tmp" is a complete, verified,
 * durable backup. The sequence is one more than the largest in backupDir;
 * the oldest by sequence beyond backupKeep are removed (never by name or
 * wall time). A copy that fails its check is removed and logged. Each
 * attempt is counted (namesrv_backups_total{result},
 * namesrv_backup_last_success_timestamp_seconds); a backupDir that cannot
 * be written is logged at start. `namesrvctl recover` restores the newest
 * one that still checks good. */
#ifndef NS_BACKUP_H
#define NS_BACKUP_H

#include <stddef.h>

#include "ns/config.h"
#include "ns/store.h"

typedef struct ns_backup ns_backup_t;
typedef struct ns_server ns_server_t;

/* backupDir, or <dataDir>.backups when it is empty, into buf. */
void ns_backup_dir(const ns_config_t *cfg, char *buf, size_t n);
/* Starts the timer on srv's loop (nothing when backupIntervalSeconds = 0). */
int ns_backup_start(ns_server_t *srv);
/* Stops the timer, waits for a backup in progress. Loop thread. */
void ns_backup_stop(ns_server_t *srv);
/* Writes, checks and keeps one backup now, on the calling thread, with a
 * copy of the settings file (NULL or missing: none); NS_OK or the error
 * (logged). */
int ns_backup_run(ns_store_t *store, const char *backup_dir, int64_t keep, const char *settings);

#endif
