/* main.c - namesrvd: parse the configuration, run the server.
 *
 *   namesrvd [-c namesrv.properties] [--key=value ...] [-p] [-h] [--version]
 *
 * Exit status: 0 clean shutdown (or -p/-h), 1 bad configuration or usage,
 * 2 data directory locked by another process, 3 store schema newer than
 * this binary, 4 store corrupt or not a namesrv store, 5 other start-up
 * failure (I/O, cannot listen). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/config.h"
#include "ns/err.h"
#include "ns/log.h"
#include "daemon.h"
#include "ns/version.h"
#include "ops/service.h"

static void usage(FILE *out)
{
    ns_buf_t help = NS_BUF_INIT, java = NS_BUF_INIT;
    ns_config_help(&help);
    ns_config_java_list(&java);
    fprintf(out,
            "usage: namesrvd [-c FILE] [--key=value ...] [-p] [-h] [--version]\n"
            "  -c FILE    read settings from a Java properties file\n"
            "  -p         print the effective configuration and exit\n"
            "  -h         this help\n"
            "  --version  version, git revision, store schema and library versions\n"
            "settings (file keys; the same as --key=value):\n%s"
            "Java NameServer settings accepted with a warning and no effect:\n%s",
            help.data ? (const char *)help.data : "", java.data ? (const char *)java.data : "");
    ns_buf_free(&help);
    ns_buf_free(&java);
}

static int exit_code(int rc)
{
    switch (rc) {
    case NS_ELOCKED:
        return 2;
    case NS_ESCHEMA:
        return 3;
    case NS_ECORRUPT:
        return 4;
    default:
        return 5;
    }
}

static int print_version(void)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = ns_version_text(&text, "namesrvd", ns_service_libs());
    if (rc == NS_OK)
        fwrite(text.data, 1, text.len, stdout);
    ns_buf_free(&text);
    return rc == NS_OK ? 0 : 1;
}

/* Applies -c first, then every --key=value, so flags override the file. */
static int parse_args(int argc, char **argv, ns_config_t *cfg, bool *print)
{
    char err[512];
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0)
            return -2;
        else if (strcmp(argv[i], "-p") == 0)
            *print = true;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return -1;
        else if (strncmp(argv[i], "--", 2) != 0 || strchr(argv[i], '=') == NULL) {
            fprintf(stderr, "namesrvd: unknown argument '%s' (namesrvd -h lists them)\n", argv[i]);
            return 1;
        }
    }
    if (file && ns_config_load_file(cfg, file, err, sizeof err) != NS_OK) {
        fprintf(stderr, "namesrvd: %s\n", err);
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--", 2) != 0)
            continue;
        char *kv = strdup(argv[i] + 2);
        char *eq = kv ? strchr(kv, '=') : NULL;
        if (eq == NULL) {
            free(kv);
            return 1;
        }
        *eq = 0;
        const char *why = NULL;
        int rc = ns_config_apply(cfg, kv, eq + 1, &why, err, sizeof err);
        if (rc == NS_OK && why)
            fprintf(stderr, "namesrvd: warning: --%s has no effect here: %s\n", kv, why);
        free(kv);
        if (rc != NS_OK) {
            fprintf(stderr, "namesrvd: %s\n", err);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    ns_config_t cfg;
    ns_server_t srv;
    bool print = false;
    char err[512] = "";
    int status = 0;
    signal(SIGPIPE, SIG_IGN);
    if (ns_config_init(&cfg) != NS_OK) {
        fprintf(stderr, "namesrvd: cannot initialise the configuration\n");
        return 1;
    }
    int rc = parse_args(argc, argv, &cfg, &print);
    if (rc == -2) {
        ns_config_free(&cfg);
        return print_version();
    }
    if (rc != 0) {
        /* -h prints the help; a bad setting only the line that names it
         * (parse_args), which a Restart=on-failure loop repeats in the journal */
        if (rc < 0)
            usage(stdout);
        ns_config_free(&cfg);
        return rc < 0 ? 0 : 1;
    }
    ns_config_apply_all(&cfg);
    if (print) {
        ns_buf_t out = NS_BUF_INIT;
        ns_config_dump(&cfg, &out);
        fwrite(out.data, 1, out.len, stdout);
        ns_buf_free(&out);
        ns_config_free(&cfg);
        return 0;
    }
    if (cfg.log_file && *cfg.log_file &&
        ns_log_open_file(cfg.log_file, cfg.log_file_max_bytes, (int)cfg.log_file_keep, err,
                         sizeof err) != NS_OK) {
        fprintf(stderr, "namesrvd: %s\n", err);
        ns_config_free(&cfg);
        return 1;
    }
    if (cfg.config_file)
        NS_LOG_INFO("load config properties file OK, %s", cfg.config_file);
    if (cfg.java_warning)
        NS_LOG_WARN("%s", cfg.java_warning);
    if (cfg.trim_warning)
        NS_LOG_WARN("%s", cfg.trim_warning);
    uv_loop_t *loop = uv_default_loop();
    rc = ns_server_start(&srv, loop, &cfg, err, sizeof err);
    if (rc != NS_OK) {
        NS_LOG_ERROR("namesrvd cannot start: %s", err[0] ? err : ns_strerror(rc));
        status = exit_code(rc);
        ns_server_stop(&srv);
        uv_run(loop, UV_RUN_DEFAULT);
    } else {
        uv_run(loop, UV_RUN_DEFAULT);
        status = srv.exit_status; /* 4: verifyOnStart found damage while serving */
        NS_LOG_INFO("namesrvd stopped%s", status ? " (store damaged: exit 4)" : "");
    }
    ns_server_free(&srv);
    uv_loop_close(loop);
    ns_config_free(&cfg);
    ns_log_close_file();
    return status;
}
