/* config_table.h - the row type of the declarative settings table
 * (config_table.c) and the table itself, walked by config.c. Private to the
 * daemon floor; the rest of the daemon reads settings through
 * include/ns/config.h only.
 */
#ifndef NS_CONFIG_TABLE_H
#define NS_CONFIG_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ns/config.h"

typedef enum { NS_CFG_INT64, NS_CFG_BOOL, NS_CFG_STRING, NS_CFG_ENUM } ns_cfg_type_t;

#define NS_CFG_MUTABLE 0x1u /* may change while running (UPDATE_NAMESRV_CONFIG) */
#define NS_CFG_OURS 0x2u    /* our setting; RocketMQ has no such key */
#define NS_CFG_SECRET 0x4u  /* left out of GET_NAMESRV_CONFIG and -p */

typedef struct {
    const char *key;
    ns_cfg_type_t type;
    size_t offset;             /* of the field in ns_config_t */
    const char *def;           /* default as text; ${VAR} expanded at init */
    int64_t min, max;          /* NS_CFG_INT64 only */
    const char *const *values; /* NS_CFG_ENUM only: NULL-terminated */
    unsigned flags;
    const char *help;
    /* Makes a new value take effect beyond the field (NULL: reading the
     * field is enough); run by ns_config_update and ns_config_apply_all. */
    void (*apply)(const ns_config_t *cfg);
    /* NS_CFG_MUTABLE integers: the bounds a change while running must keep
     * (ns_config_check_runtime), tighter than [min, max] where a value set
     * by anyone who can send UPDATE_NAMESRV_CONFIG would disable liveness or
     * the audit history; 0/0 = [min, max]. */
    int64_t rt_min, rt_max;
} ns_cfg_entry_t;

/* Every setting, one row each (config_table.c), in no particular order; at
 * most NS_CONFIG_MAX_ENTRIES rows (checked when config_table.c compiles), so
 * that config.c can sort them in an array on the stack. */
#define NS_CONFIG_MAX_ENTRIES 128
extern const ns_cfg_entry_t ns_config_table[];
extern const size_t ns_config_n_entries;

/* Appends e's enum values as "a|b|c" (config.c; the help text of
 * config_help.c uses it too). NS_ENOMEM. */
int ns_cfg_append_enum_values(ns_buf_t *out, const ns_cfg_entry_t *e);

#endif
