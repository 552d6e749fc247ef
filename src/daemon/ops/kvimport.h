/* kvimport.h - Java's kvConfig.json taken in at first start (kvimport.c).
 *
 * A Java NameServer keeps its KV config in the file kvConfigPath names
 * ({"configTable":{namespace:{key:value}}}). namesrvd keeps it in the
 * store, so an operator moving from Java points kvConfigPath at the old
 * file and the first start imports it: only into a store that holds no KV
 * entry and never imported before (a meta mark, kept by restore and clear),
 * so a later start never brings back what an admin deleted. The import is
 * one write transaction with its admin-trail record; the log says what was
 * taken, or why an existing file was not. */
#ifndef NS_KVIMPORT_H
#define NS_KVIMPORT_H

#include <stddef.h>

#include "ns/config.h"
#include "ns/store.h"

/* Meta key of the mark: the wall-clock ms of the import. */
#define NS_KVIMPORT_META "kv_config_imported_ms"
/* Largest kvConfig.json read (bytes). */
#define NS_KVIMPORT_MAX_BYTES (1024L * 1024 * 1024)

/* Before the writer starts (nothing else writes the store): imports
 * cfg->kv_config_path when it exists and the store qualifies. NS_OK also
 * when there is nothing to do; NS_EINVAL when the file cannot be read or is
 * not a valid kvConfig.json (err names the file and the first problem:
 * nothing was written, and namesrvd does not start on a file it would
 * silently skip); a store error otherwise. */
int ns_kvimport_at_start(ns_store_t *store, const ns_config_t *cfg, char *err, size_t errlen);

#endif
