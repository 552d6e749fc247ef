/* main.c - nsbench options (nsbench.h). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsbench.h"

static void usage(FILE *out)
{
    fputs(
        "usage: nsbench [--ns HOST:PORT] [--mode route|mixed|heartbeat|register|setup] [options]\n"
        "       nsbench --echo-server [--bind ADDR] --port P --response-bytes N [--port-file F]\n"
        "       nsbench --restart-probe --ns HOST:PORT --setup-brokers B --probe-topic I\n"
        "               [--exec-cpu N] [--pid-file F] [--probe-timeout-ms MS] -- CMD ARGS...\n"
        "\n"
        "load (bounded by --duration and/or --count; loopback only):\n"
        "  --ns HOST:PORT            target NameServer (127.0.0.1:9876)\n"
        "  --mode M                  route: GET_ROUTEINFO_BY_TOPIC lookups (default)\n"
        "                            mixed: lookups while --reg-brokers re-register every\n"
        "                                   --reg-interval-ms with --reg-topics topics\n"
        "                            heartbeat: the setup brokers send BROKER_HEARTBEAT (or,\n"
        "                                   --hb-kind reregister, unchanged REGISTER_BROKER)\n"
        "                            register: --reg-brokers register --reg-topics topics back\n"
        "                                   to back, each with a new DataVersion\n"
        "                            setup: register the topology, report, then --hold\n"
        "  --conns N                 reader connections (16)\n"
        "  --depth D[,D...]          requests in flight per connection; a list runs one\n"
        "                            measurement per depth on the same topology (1)\n"
        "  --duration S              measured seconds per depth (10 unless --count)\n"
        "  --count N                 measured requests per depth\n"
        "  --rate R                  at most R load requests per second in all (token\n"
        "                            bucket, 1 ms ticks); default: as fast as answered\n"
        "  --warmup S                unmeasured seconds before each measurement (1)\n"
        "  --seed N                  seed of the topic choice (1)\n"
        "  --dist uniform|zipf       topic distribution (uniform); --zipf-s X (0.99)\n"
        "  --setup-brokers B         brokers registered before measuring (10)\n"
        "  --setup-topics T          topics spread over them, 1-2 brokers each (100)\n"
        "  --topics T                topics read (default: --setup-topics)\n"
        "  --no-setup                register nothing (names only: echo server, pre-built)\n"
        "  --reg-brokers N           mixed/register: brokers re-registering (1)\n"
        "  --reg-topics T            topics per such broker (10000)\n"
        "  --reg-interval-ms N       mixed: period of each one's registration (1000)\n"
        "  --reg-change-fraction F   mixed: share of registrations with a new DataVersion (0.5)\n"
        "  --reg-mutate 0|1          a new DataVersion also flips queue counts 4<->8 (1)\n"
        "  --reg-versions N          DataVersions prepared per registering broker; they\n"
        "                            grow, and wrap around after N (auto: register: count+1\n"
        "                            up to 64, else 32; mixed: 16)\n"
        "  --hb-kind heartbeat|reregister\n"
        "  --no-verify               do not count routes missing the expected broker\n"
        "  --json                    one JSON object on stdout\n"
        "  --server-pid PID          sample the server's CPU, RSS and I/O from /proc\n"
        "  --data-dir DIR            watch DIR/data.mdb (size, mtime)\n"
        "  --hold S                  after reporting, keep the connections (brokers) open\n"
        "                            up to S seconds or until the server goes away\n"
        "  --ready-file F            created when the report is out (with --hold)\n"
        "  --label TEXT              copied to the output\n"
        "  --plain-bodies            REGISTER_BROKER bodies as JSON, not compressed (a\n"
        "                            Java broker's default; for servers without the zlib form)\n"
        "  --access-key K --secret-key S  sign every request (RocketMQ AccessKey/Signature,\n"
        "                            as AclClientRPCHook does), for servers with authMode on\n"
        "  --server-cpu N, --client-cpu N  cores to watch: the share of each used by other\n"
        "                            processes during a measurement is reported\n"
        "  --tls                     speak TLS (the server is verified only with --tls-ca)\n"
        "  --tls-ca FILE, --tls-cert FILE --tls-key FILE  CA to verify with; client cert\n"
        "  --handshakes              instead of load: one connection at a time (connect,\n"
        "                            TLS handshake with --tls, one lookup, close) for\n"
        "                            --duration S or --count N; reports connections/s\n"
        "  --drain-timeout-ms N (10000)  --setup-timeout-ms N (300000)  --connect-parallel N "
        "(64)\n",
        out);
}

static int parse_depths(const char *s, nsb_opts_t *o)
{
    o->n_depths = 0;
    const char *p = s;
    while (*p && o->n_depths < MAX_DEPTHS) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > 1024)
            return -1;
        o->depths[o->n_depths++] = (uint32_t)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return o->n_depths ? 0 : -1;
}

static int parse_hostport(const char *s, nsb_opts_t *o)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s)
        return -1;
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof o->host)
        return -1;
    memcpy(o->host, s, hl);
    o->host[hl] = 0;
    o->port = atoi(colon + 1);
    return o->port > 0 && o->port < 65536 ? 0 : -1;
}

enum {
    O_NS = 256,
    O_RATE,
    O_MODE,
    O_CONNS,
    O_DEPTH,
    O_DURATION,
    O_COUNT,
    O_WARMUP,
    O_SEED,
    O_DIST,
    O_ZIPF_S,
    O_SETUP_BROKERS,
    O_SETUP_TOPICS,
    O_TOPICS,
    O_NO_SETUP,
    O_REG_BROKERS,
    O_REG_TOPICS,
    O_REG_INTERVAL,
    O_REG_FRACTION,
    O_REG_MUTATE,
    O_REG_VERSIONS,
    O_HB_KIND,
    O_NO_VERIFY,
    O_JSON,
    O_PLAIN_BODIES,
    O_SERVER_PID,
    O_DATA_DIR,
    O_HOLD,
    O_READY_FILE,
    O_LABEL,
    O_DRAIN_TIMEOUT,
    O_SETUP_TIMEOUT,
    O_CONNECT_PAR,
    O_ECHO,
    O_PORT,
    O_RESPONSE_BYTES,
    O_BIND,
    O_PORT_FILE,
    O_PROBE,
    O_PROBE_TOPIC,
    O_PROBE_TIMEOUT,
    O_PID_FILE,
    O_EXEC_CPU,
    O_SERVER_CPU,
    O_CLIENT_CPU,
    O_HELP,
    O_TLS,
    O_TLS_CA,
    O_TLS_CERT,
    O_TLS_KEY,
    O_HANDSHAKES,
    O_ACCESS_KEY,
    O_SECRET_KEY
};

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"ns", required_argument, NULL, O_NS},
        {"mode", required_argument, NULL, O_MODE},
        {"rate", required_argument, NULL, O_RATE},
        {"conns", required_argument, NULL, O_CONNS},
        {"depth", required_argument, NULL, O_DEPTH},
        {"duration", required_argument, NULL, O_DURATION},
        {"count", required_argument, NULL, O_COUNT},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"seed", required_argument, NULL, O_SEED},
        {"dist", required_argument, NULL, O_DIST},
        {"zipf-s", required_argument, NULL, O_ZIPF_S},
        {"setup-brokers", required_argument, NULL, O_SETUP_BROKERS},
        {"setup-topics", required_argument, NULL, O_SETUP_TOPICS},
        {"topics", required_argument, NULL, O_TOPICS},
        {"no-setup", no_argument, NULL, O_NO_SETUP},
        {"reg-brokers", required_argument, NULL, O_REG_BROKERS},
        {"reg-topics", required_argument, NULL, O_REG_TOPICS},
        {"reg-interval-ms", required_argument, NULL, O_REG_INTERVAL},
        {"reg-change-fraction", required_argument, NULL, O_REG_FRACTION},
        {"reg-mutate", required_argument, NULL, O_REG_MUTATE},
        {"reg-versions", required_argument, NULL, O_REG_VERSIONS},
        {"hb-kind", required_argument, NULL, O_HB_KIND},
        {"no-verify", no_argument, NULL, O_NO_VERIFY},
        {"json", no_argument, NULL, O_JSON},
        {"plain-bodies", no_argument, NULL, O_PLAIN_BODIES},
        {"server-pid", required_argument, NULL, O_SERVER_PID},
        {"data-dir", required_argument, NULL, O_DATA_DIR},
        {"hold", required_argument, NULL, O_HOLD},
        {"ready-file", required_argument, NULL, O_READY_FILE},
        {"label", required_argument, NULL, O_LABEL},
        {"drain-timeout-ms", required_argument, NULL, O_DRAIN_TIMEOUT},
        {"setup-timeout-ms", required_argument, NULL, O_SETUP_TIMEOUT},
        {"connect-parallel", required_argument, NULL, O_CONNECT_PAR},
        {"echo-server", no_argument, NULL, O_ECHO},
        {"port", required_argument, NULL, O_PORT},
        {"response-bytes", required_argument, NULL, O_RESPONSE_BYTES},
        {"bind", required_argument, NULL, O_BIND},
        {"port-file", required_argument, NULL, O_PORT_FILE},
        {"restart-probe", no_argument, NULL, O_PROBE},
        {"probe-topic", required_argument, NULL, O_PROBE_TOPIC},
        {"probe-timeout-ms", required_argument, NULL, O_PROBE_TIMEOUT},
        {"pid-file", required_argument, NULL, O_PID_FILE},
        {"exec-cpu", required_argument, NULL, O_EXEC_CPU},
        {"server-cpu", required_argument, NULL, O_SERVER_CPU},
        {"client-cpu", required_argument, NULL, O_CLIENT_CPU},
        {"access-key", required_argument, NULL, O_ACCESS_KEY},
        {"secret-key", required_argument, NULL, O_SECRET_KEY},
        {"help", no_argument, NULL, O_HELP},
        {"tls", no_argument, NULL, O_TLS},
        {"tls-ca", required_argument, NULL, O_TLS_CA},
        {"tls-cert", required_argument, NULL, O_TLS_CERT},
        {"tls-key", required_argument, NULL, O_TLS_KEY},
        {"handshakes", no_argument, NULL, O_HANDSHAKES},
        {NULL, 0, NULL, 0},
    };
    nsb_opts_t o;
    memset(&o, 0, sizeof o);
    strcpy(o.host, "127.0.0.1");
    o.port = 9876;
    o.mode = MODE_ROUTE;
    o.conns = 16;
    o.depths[0] = 1;
    o.n_depths = 1;
    o.warmup_s = 1;
    o.seed = 1;
    o.zipf_s = 0.99;
    o.setup_brokers = 10;
    o.setup_topics = 100;
    o.reg_brokers = 1;
    o.reg_topics = 10000;
    o.reg_interval_ms = 1000;
    o.reg_change_fraction = 0.5;
    o.reg_mutate = true;
    o.verify = true;
    o.drain_timeout_ms = 10000;
    o.setup_timeout_ms = 300000;
    o.connect_parallel = 64;
    o.probe_timeout_ms = 30000;
    o.exec_cpu = -1;
    o.server_cpu = -1;
    o.client_cpu = -1;
    bool echo = false, probe = false;
    const char *access_key = NULL, *secret_key = NULL;
    const char *bind_addr = "127.0.0.1", *port_file = NULL;
    int echo_port = 0;
    long long response_bytes = 400;
    int c;
    /* '+': stop at the first non-option, so the probe's command keeps its own flags */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case O_NS:
            if (parse_hostport(optarg, &o) != 0) {
                fprintf(stderr, "nsbench: bad --ns '%s' (want HOST:PORT)\n", optarg);
                return 1;
            }
            break;
        case O_MODE:
            if (strcmp(optarg, "route") == 0)
                o.mode = MODE_ROUTE;
            else if (strcmp(optarg, "mixed") == 0)
                o.mode = MODE_MIXED;
            else if (strcmp(optarg, "heartbeat") == 0)
                o.mode = MODE_HEARTBEAT;
            else if (strcmp(optarg, "register") == 0)
                o.mode = MODE_REGISTER;
            else if (strcmp(optarg, "setup") == 0)
                o.mode = MODE_SETUP;
            else {
                fprintf(stderr, "nsbench: unknown mode '%s'\n", optarg);
                return 1;
            }
            break;
        case O_RATE:
            o.rate = atof(optarg);
            break;
        case O_CONNS:
            o.conns = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_DEPTH:
            if (parse_depths(optarg, &o) != 0) {
                fprintf(stderr, "nsbench: bad --depth '%s'\n", optarg);
                return 1;
            }
            break;
        case O_DURATION:
            o.duration_s = atof(optarg);
            break;
        case O_COUNT:
            o.count = strtoull(optarg, NULL, 10);
            break;
        case O_WARMUP:
            o.warmup_s = atof(optarg);
            break;
        case O_SEED:
            o.seed = strtoull(optarg, NULL, 10);
            break;
        case O_DIST:
            if (strcmp(optarg, "zipf") == 0)
                o.zipf = true;
            else if (strcmp(optarg, "uniform") == 0)
                o.zipf = false;
            else {
                fprintf(stderr, "nsbench: unknown distribution '%s'\n", optarg);
                return 1;
            }
            break;
        case O_ZIPF_S:
            o.zipf_s = atof(optarg);
            break;
        case O_SETUP_BROKERS:
            o.setup_brokers = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_SETUP_TOPICS:
            o.setup_topics = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_TOPICS:
            o.topics = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_NO_SETUP:
            o.no_setup = true;
            break;
        case O_REG_BROKERS:
            o.reg_brokers = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_REG_TOPICS:
            o.reg_topics = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_REG_INTERVAL:
            o.reg_interval_ms = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_REG_FRACTION:
            o.reg_change_fraction = atof(optarg);
            break;
        case O_REG_MUTATE:
            o.reg_mutate = atoi(optarg) != 0;
            break;
        case O_REG_VERSIONS:
            o.reg_versions = (uint32_t)strtoul(optarg, NULL, 10);
            if (o.reg_versions > 4096)
                o.reg_versions = 4096;
            break;
        case O_HB_KIND:
            if (strcmp(optarg, "heartbeat") == 0)
                o.hb_kind = HB_HEARTBEAT;
            else if (strcmp(optarg, "reregister") == 0)
                o.hb_kind = HB_REREGISTER;
            else {
                fprintf(stderr, "nsbench: unknown --hb-kind '%s'\n", optarg);
                return 1;
            }
            break;
        case O_NO_VERIFY:
            o.verify = false;
            break;
        case O_JSON:
            o.json = true;
            break;
        case O_PLAIN_BODIES:
            topo_set_plain_bodies(true);
            break;
        case O_SERVER_PID:
            o.server_pid = atoi(optarg);
            break;
        case O_DATA_DIR:
            o.data_dir = optarg;
            break;
        case O_HOLD:
            o.hold_s = atof(optarg);
            break;
        case O_READY_FILE:
            o.ready_file = optarg;
            break;
        case O_LABEL:
            o.label = optarg;
            break;
        case O_DRAIN_TIMEOUT:
            o.drain_timeout_ms = atoi(optarg);
            break;
        case O_SETUP_TIMEOUT:
            o.setup_timeout_ms = atoi(optarg);
            break;
        case O_CONNECT_PAR:
            o.connect_parallel = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_ECHO:
            echo = true;
            break;
        case O_PORT:
            echo_port = atoi(optarg);
            break;
        case O_RESPONSE_BYTES:
            response_bytes = atoll(optarg);
            break;
        case O_BIND:
            bind_addr = optarg;
            break;
        case O_PORT_FILE:
            port_file = optarg;
            break;
        case O_PROBE:
            probe = true;
            break;
        case O_PROBE_TOPIC:
            o.probe_topic = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case O_PROBE_TIMEOUT:
            o.probe_timeout_ms = atoi(optarg);
            break;
        case O_PID_FILE:
            o.pid_file = optarg;
            break;
        case O_EXEC_CPU:
            o.exec_cpu = atoi(optarg);
            break;
        case O_SERVER_CPU:
            o.server_cpu = atoi(optarg);
            break;
        case O_CLIENT_CPU:
            o.client_cpu = atoi(optarg);
            break;
        case O_TLS:
            o.tls = true;
            break;
        case O_TLS_CA:
            o.tls = true;
            o.tls_ca = optarg;
            break;
        case O_TLS_CERT:
            o.tls = true;
            o.tls_cert = optarg;
            break;
        case O_TLS_KEY:
            o.tls = true;
            o.tls_key = optarg;
            break;
        case O_HANDSHAKES:
            o.handshakes = true;
            break;
        case O_ACCESS_KEY:
            access_key = optarg;
            break;
        case O_SECRET_KEY:
            secret_key = optarg;
            break;
        case 'h':
        case O_HELP:
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 1;
        }
    }
    if (access_key && secret_key == NULL) {
        fprintf(stderr, "nsbench: --access-key needs --secret-key\n");
        return 1;
    }
    topo_set_credentials(access_key, secret_key);
    signal(SIGPIPE, SIG_IGN);
    if (echo) {
        if (response_bytes < 0 || response_bytes > (16ll << 20)) {
            fprintf(stderr, "nsbench: --response-bytes out of range\n");
            return 1;
        }
        return echo_run(bind_addr, echo_port, (size_t)response_bytes, port_file);
    }
    if (probe)
        return probe_run(&o, argv + optind);
    if (optind < argc) {
        fprintf(stderr, "nsbench: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }
    if (o.duration_s <= 0 && o.count == 0)
        o.duration_s = 10;
    if (o.reg_change_fraction < 0 || o.reg_change_fraction > 1) {
        fprintf(stderr, "nsbench: --reg-change-fraction must be within 0..1\n");
        return 1;
    }
    if (o.handshakes)
        return handshake_run(&o);
    return load_run(&o);
}
