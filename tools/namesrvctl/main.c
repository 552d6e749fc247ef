/* main.c - namesrvctl: offline store tools and online admin commands for
 * namesrvd, one program with subcommands.
 *
 *   namesrvctl <command> [options] [arguments]      (namesrvctl help)
 *
 * Subcommands are rows of one table, like the server's request table: a
 * name, its handler, a synopsis for the usage text. Each handler gets the
 * arguments after its name and returns the exit status (ctl.h CTL_*). */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ns/log.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis;
} ctl_command_t;

static const ctl_command_t commands[] = {
    /* offline: open the data directory directly */
    {"dump", ctl_cmd_dump,
     "--data-dir D [-o FILE] [--with-audit] [--no-timestamp] [--compact]\n"
     "      the whole store as one versioned JSON document (a consistent snapshot;\n"
     "      safe while namesrvd runs)"},
    {"restore", ctl_cmd_restore,
     "--data-dir D -i FILE [--replace]\n"
     "      validate a dump document, then write it in one transaction into a store\n"
     "      no server holds; refuses a non-empty store unless --replace"},
    {"audit", ctl_cmd_audit,
     "--data-dir D [--broker NAME] [--topic T] [--since TIME] [--json]\n"
     "      history of broker data-version changes (TIME: ms or YYYY-MM-DD[THH:MM[:SS]], UTC)"},
    {"verify", ctl_cmd_verify, "--data-dir D\n      check the store's invariants"},
    {"backup", ctl_cmd_backup,
     "--data-dir D -o DIR\n      compacted hot copy into an empty DIR, then verify the copy"},
    {"stat", ctl_cmd_stat, "--data-dir D [--json]\n      schema version, table counts, map usage"},
    {"import-kvconfig", ctl_cmd_import_kvconfig,
     "--data-dir D FILE\n      load a Java kvConfig.json into a stopped server's store"},
    {"user", ctl_cmd_user,
     "add|update|delete KEY [--role R] [--secret S|--secret-file F] [--allow LIST]\n"
     "      [--brokers LIST] [--enable|--disable] [--key-file F] | list | seal --key-file F\n"
     "      | refusals   with --data-dir D:\n"
     "      offline (a stopped server's store); without: online, for an admin (--ns,\n"
     "      --access-key, --secret-key); refusals (offline) lists refused requests"},
    /* online: over the wire to --ns "host:port;host:port" */
    {"route", ctl_cmd_route, "TOPIC"},
    {"clusters", ctl_cmd_clusters, ""},
    {"topics", ctl_cmd_topics, "[--cluster C]"},
    {"kv", ctl_cmd_kv, "get NS KEY | put NS KEY VALUE | delete NS KEY | list NS"},
    {"wipe-perm", ctl_cmd_wipe_perm, "BROKER"},
    {"add-perm", ctl_cmd_add_perm, "BROKER"},
    {"delete-topic", ctl_cmd_delete_topic, "TOPIC [--cluster C]"},
    {"config", ctl_cmd_config, "get | set KEY VALUE"},
    {"top", ctl_cmd_top,
     "[--http HOST:PORT] [--interval MS] [--count N | --once]\n"
     "      live view of a server's /metrics (default $NAMESRV_HTTP_ADDR, else 127.0.0.1:9877)"},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: namesrvctl <command> [options] [arguments]\n\n"
                 "offline commands (read the data directory directly):\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, "route") == 0)
            fprintf(out,
                    "\nonline commands (common options: --ns/-n \"host:port;host:port\" "
                    "(default $NAMESRV_ADDR,\n"
                    "  else 127.0.0.1:9876), --json, --timeout MS, --access-key K --secret-key S\n"
                    "  (or $NAMESRV_ACCESS_KEY/$NAMESRV_SECRET_KEY: sign requests); reads ask the "
                    "first "
                    "reachable server,\n"
                    "  writes go to every server):\n");
        fprintf(out, "  %s %s\n", commands[i].name, commands[i].synopsis);
    }
    fprintf(out, "\nexit status:\n"
                 "  0  success\n"
                 "  1  verify found violations, or a request was refused/failed\n"
                 "  2  usage error\n"
                 "  3  the data directory is locked by a running server\n"
                 "  4  the input document is invalid (nothing was written)\n"
                 "  5  I/O, network or store error\n");
}

int main(int argc, char **argv)
{
    ns_log_set_level(NS_LOG_LEVEL_WARN); /* the store's info lines are noise here */
    if (argc < 2) {
        usage(stderr);
        return CTL_USAGE;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return CTL_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "namesrvctl: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CTL_USAGE;
}
