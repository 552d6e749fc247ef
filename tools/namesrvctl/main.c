/* main.c - namesrvctl: offline store tools and online admin commands for
 * namesrvd, one program with subcommands.
 *
 *   namesrvctl <command> [options] [arguments]      (namesrvctl help)
 *
 * Subcommands are rows of one table, like the server's request table: a
 * name, its handler, a synopsis for the usage text. Each handler gets the
 * arguments after its name and returns the exit status (ctl.h CTL_*). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/version.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis;
    bool online; /* takes the common options -n, --json, --timeout */
} ctl_command_t;

static const ctl_command_t commands[] = {
    /* offline: open the data directory directly */
    {"dump", ctl_cmd_dump,
     "--data-dir D [-o FILE] [--with-audit] [--no-timestamp] [--compact]\n"
     "      the whole store as one versioned JSON document (a consistent snapshot;\n"
     "      safe while namesrvd runs)",
     false},
    {"restore", ctl_cmd_restore,
     "--data-dir D -i FILE [--replace]\n"
     "      validate a dump document, then write it in one transaction into a store\n"
     "      no server holds; refuses a non-empty store unless --replace",
     false},
    {"audit", ctl_cmd_audit,
     "--data-dir D [--admin] [--broker NAME] [--topic T] [--since TIME] [--json]\n"
     "      history of broker data-version changes, or with --admin the trail of admin\n"
     "      requests (who changed what, from which address, with which result)\n"
     "      (TIME: ms or YYYY-MM-DD[THH:MM[:SS]], UTC)",
     false},
    {"verify", ctl_cmd_verify,
     "--data-dir D\n      read every page and record of every table, decode every value, check\n"
     "      the invariants (in a child process: damage is reported, exit 4)",
     false},
    {"backup", ctl_cmd_backup,
     "--data-dir D -o DIR [--config FILE]\n"
     "      compacted hot copy into an empty DIR, then verify the copy; the settings file\n"
     "      (FILE, else D/namesrv.properties or /etc/namesrv/namesrv.properties) is\n"
     "      copied beside it",
     false},
    {"recover", ctl_cmd_recover,
     "--data-dir D [--backup-dir B]\n      namesrvd stopped: move a damaged store aside, restore "
     "the newest backup\n      that checks good (B: default D.backups), else a new store with "
     "its KV config",
     false},
    {"stat", ctl_cmd_stat, "--data-dir D [--json]\n      schema version, table counts, map usage",
     false},
    {"import-kvconfig", ctl_cmd_import_kvconfig,
     "--data-dir D FILE\n      load a Java kvConfig.json into a stopped server's store", false},
    {"export-kvconfig", ctl_cmd_export_kvconfig,
     "--data-dir D [-o FILE]\n"
     "      the KV config as Java's kvConfig.json (to roll back to the Java NameServer)",
     false},
    {"prune-groups", ctl_cmd_prune_groups,
     "--data-dir D [--dry-run]\n"
     "      remove broker groups left with no address (and their queue data) from a\n"
     "      stopped server's store",
     false},
    {"user", ctl_cmd_user,
     "add|update|delete KEY [--role R] [--secret S|--secret-file F] [--allow LIST]\n"
     "      [--brokers LIST] [--enable|--disable] [--key-file F] | list | seal --key-file F\n"
     "      | refusals   with --data-dir D:\n"
     "      offline (a stopped server's store); without: online, for an admin (--ns,\n"
     "      --access-key, --secret-key); refusals (offline) lists the\n"
     "      authentication refusals of the admin trail (audit --admin)",
     false},
    /* online: over the wire to --ns "host:port;host:port" */
    {"route", ctl_cmd_route,
     "TOPIC\n      the topic's route (brokers, queues, perms) from each server", true},
    {"clusters", ctl_cmd_clusters,
     "\n      clusters, broker groups and addresses, with each address's last heartbeat\n"
     "      and whether it lives on the grace window after a restart",
     true},
    {"topics", ctl_cmd_topics, "[--cluster C]\n      topic names, of all or of one cluster", true},
    {"kv", ctl_cmd_kv,
     "get NS KEY | put NS KEY VALUE | delete NS KEY | list NS\n      the KV config", true},
    {"wipe-perm", ctl_cmd_wipe_perm, "BROKER\n      take write permission from a broker group",
     true},
    {"add-perm", ctl_cmd_add_perm, "BROKER\n      give write permission back", true},
    {"delete-topic", ctl_cmd_delete_topic,
     "TOPIC [--cluster C]\n      remove a topic's route (everywhere or in one cluster)", true},
    {"config", ctl_cmd_config,
     "get | set KEY VALUE\n      the server's settings (set: UPDATE_NAMESRV_CONFIG)", true},
    {"fleet", ctl_cmd_fleet,
     "diff [--max N]\n"
     "      compare the servers' digests and show what differs, and where: brokers,\n"
     "      addresses, data versions, topic queues and permissions, KV entries (exit 0\n"
     "      when all agree, 1 when they differ, 5 when a server cannot be reached)",
     true},
    {"top", ctl_cmd_top,
     "[--http HOST:PORT] [--interval MS] [--count N | --once]\n"
     "      live view of a server's /metrics (default $NAMESRV_HTTP_ADDR, else 127.0.0.1:9877)",
     false},
    {"health", ctl_cmd_health,
     "[--http HOST:PORT] [--ready] [--timeout MS]\n"
     "      /healthz (--ready: /readyz) of a server's HTTP endpoint: exit 0 on 200, 1 otherwise,\n"
     "      5 if nothing answers (the container's health check; needs no signature or TLS)",
     false},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const char OFFLINE_NOTE[] =
    "without --data-dir the readers use $NAMESRV_DATA_DIR, else /var/lib/namesrv when it\n"
    "holds a store; writers (restore, import-kvconfig, prune-groups) always need it\n";

static const char COMMON_OPTIONS[] =
    "common options (anywhere on the line, also before the command):\n"
    "  -n, --ns \"host:port;host:port\"  name servers (default $NAMESRV_ADDR, else "
    "127.0.0.1:9876)\n"
    "  --json                          JSON output (numbers as numbers), one line per server\n"
    "  --timeout MS                    per request (default 5000)\n"
    "  -h, --help                      this command's help\n"
    "reads are asked of every server and shown per server; writes go to every server\n";

static void command_help(const ctl_command_t *c)
{
    printf("usage: namesrvctl %s%s%s\n", c->name, c->synopsis[0] == '\n' ? "" : " ", c->synopsis);
    printf("\n%s", c->online ? COMMON_OPTIONS : OFFLINE_NOTE);
}

/* True if argv[0..argc) asks for help before any "--". */
static bool wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    return false;
}

static int print_version(void)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = ns_version_text(&text, "namesrvctl", NULL);
    if (rc == NS_OK)
        fwrite(text.data, 1, text.len, stdout);
    ns_buf_free(&text);
    return rc == NS_OK ? CTL_OK : CTL_IO;
}

/* Global options may come before the command: "namesrvctl -n X --json
 * route T". They are moved behind the command's name, where the command
 * parses them with its own. Returns the index of the command name in argv
 * (argc when there is none); *moved gets how many arguments were moved. */
static int find_command(int argc, char **argv, char **out, int *n_out)
{
    int k = 0, i = 1;
    for (; i < argc; i++) {
        int arity = ctl_common_option_arity(argv[i]);
        bool with_value = arity == 2, flag = arity == 1;
        if (with_value && i + 1 < argc) {
            out[k++] = argv[i++];
            out[k++] = argv[i];
        } else if (flag) {
            out[k++] = argv[i];
        } else {
            break;
        }
    }
    *n_out = k;
    return i;
}

/* Writes s for roff: backslashes as \e, hyphens as \-. */
static void put_roff(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            fputs("\\e", stdout);
        else if (s[i] == '-')
            fputs("\\-", stdout);
        else
            putchar(s[i]);
    }
}

/* `namesrvctl help --roff`: the commands as man(7) paragraphs, for the
 * manual built from this table (tools/dist/namesrvctl.8.in), so the two
 * cannot drift. A synopsis is "arguments\n      description[\n      ...]". */
static void commands_roff(void)
{
    for (int online = 0; online < 2; online++) {
        printf(".SS %s\n", online ? "Online commands" : "Offline commands");
        for (size_t i = 0; i < N_COMMANDS; i++) {
            const ctl_command_t *c = &commands[i];
            if (c->online != (online == 1))
                continue;
            const char *nl = strchr(c->synopsis, '\n');
            size_t args = nl ? (size_t)(nl - c->synopsis) : strlen(c->synopsis);
            printf(".TP\n.B %s\n", c->name);
            if (args) {
                fputs(".I ", stdout);
                put_roff(c->synopsis, args);
                putchar('\n');
            }
            fputs(".br\n", stdout);
            for (const char *p = nl; p && *p;) {
                while (*p == '\n' || *p == ' ')
                    p++;
                const char *end = strchr(p, '\n');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                put_roff(p, len);
                putchar('\n');
                p = end;
            }
        }
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: namesrvctl <command> [options] [arguments]\n\n"
            "offline commands (read the data directory directly; %s):\n",
            "readers default to $NAMESRV_DATA_DIR, else /var/lib/namesrv");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, "route") == 0)
            fprintf(out,
                    "\nonline commands (common options: --ns/-n \"host:port;host:port\" "
                    "(default $NAMESRV_ADDR,\n"
                    "  else 127.0.0.1:9876), --json, --timeout MS, --access-key K --secret-key S\n"
                    "  ($NAMESRV_ACCESS_KEY/$NAMESRV_SECRET_KEY: sign requests), TLS: --tls,\n"
                    "  --tls-ca FILE (verify the server), --tls-cert FILE --tls-key FILE (client "
                    "certificate),\n"
                    "  --tls-name NAME, anywhere on the line; reads ask every server and show "
                    "each answer,\n"
                    "  writes go to every server):\n");
        fprintf(out, "  %s%s%s\n", commands[i].name, commands[i].synopsis[0] == '\n' ? "" : " ",
                commands[i].synopsis);
    }
    fprintf(out, "\nexit status:\n"
                 "  0  success\n"
                 "  1  verify found violations, or a request was refused/failed\n"
                 "  2  usage error\n"
                 "  3  the data directory is locked by a running server\n"
                 "  4  the input document is invalid (nothing was written), or verify found\n"
                 "     the store damaged\n"
                 "  5  I/O, network or store error\n"
                 "\nnamesrvctl <command> -h explains one command; namesrvctl --version.\n");
}

int main(int argc, char **argv)
{
    ns_log_set_level(NS_LOG_LEVEL_WARN); /* the store's info lines are noise here */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n_globals = 0, rc = CTL_USAGE;
    if (args == NULL)
        return CTL_IO;
    int at = find_command(argc, argv, args, &n_globals);
    const char *name = at < argc ? argv[at] : NULL;
    if (name == NULL) {
        usage(stderr);
    } else if (strcmp(name, "help") == 0 || strcmp(name, "-h") == 0 ||
               strcmp(name, "--help") == 0) {
        const ctl_command_t *c = NULL;
        for (size_t i = 0; at + 1 < argc && i < N_COMMANDS; i++)
            if (strcmp(argv[at + 1], commands[i].name) == 0)
                c = &commands[i];
        if (at + 1 < argc && strcmp(argv[at + 1], "--roff") == 0)
            commands_roff();
        else
            c ? command_help(c) : usage(stdout);
        rc = CTL_OK;
    } else if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        rc = print_version();
    } else {
        const ctl_command_t *c = NULL;
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (strcmp(name, commands[i].name) == 0)
                c = &commands[i];
        if (c == NULL) {
            fprintf(stderr, "namesrvctl: unknown command '%s'\n\n", name);
            usage(stderr);
        } else if (wants_help(argc - at - 1, argv + at + 1)) {
            command_help(c);
            rc = CTL_OK;
        } else {
            /* the command's own arguments, then the global options given before it */
            int n = 0;
            char **cargs = calloc((size_t)argc + 1, sizeof *cargs);
            if (cargs == NULL) {
                free(args);
                return CTL_IO;
            }
            for (int i = at + 1; i < argc; i++)
                cargs[n++] = argv[i];
            /* before a "--" of the command's, so they stay options */
            int dd = 0;
            while (dd < n && strcmp(cargs[dd], "--") != 0)
                dd++;
            memmove(cargs + dd + n_globals, cargs + dd, (size_t)(n - dd) * sizeof *cargs);
            memcpy(cargs + dd, args, (size_t)n_globals * sizeof *cargs);
            rc = c->run(n + n_globals, cargs);
            free(cargs);
        }
    }
    free(args);
    return rc;
}
