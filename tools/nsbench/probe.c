/* probe.c - restart-to-first-correct-route (nsbench.h).
 *
 *   nsbench --restart-probe --ns HOST:PORT --setup-brokers B --probe-topic I
 *           [--exec-cpu N] [--pid-file F] [--probe-timeout-ms MS] -- CMD ARGS...
 *
 * Takes the time, forks and execs CMD (the server, on the same data
 * directory as before), then polls: connect (every 200 us while refused),
 * send GET_ROUTEINFO_BY_TOPIC for topic I, until a reply has code 0 and a
 * body naming the topic's primary broker. Reports the time from just before
 * the exec to the first connect and to that reply. The server is left
 * running; its pid goes to --pid-file (the caller stops it). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsbench.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

int probe_run(const nsb_opts_t *o, char **argv)
{
    if (argv == NULL || argv[0] == NULL) {
        fprintf(stderr, "nsbench: --restart-probe needs the server command after --\n");
        return 1;
    }
    if (o->setup_brokers == 0) {
        fprintf(stderr, "nsbench: --restart-probe needs --setup-brokers (to know the broker)\n");
        return 1;
    }
    if (strncmp(o->host, "127.", 4) != 0 && strcmp(o->host, "::1") != 0 &&
        strcmp(o->host, "localhost") != 0) {
        fprintf(stderr, "nsbench: the restart probe targets a loopback address only\n");
        return 1;
    }
    char topic[32], broker[48], pattern[80];
    topo_topic_name(topic, sizeof topic, o->probe_topic);
    topo_broker_name(broker, sizeof broker, topo_primary(o->probe_topic, o->setup_brokers), false);
    snprintf(pattern, sizeof pattern, "\"brokerName\":\"%s\"", broker);

    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        perror("nsbench: fork");
        return 1;
    }
    if (pid == 0) {
        if (o->exec_cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(o->exec_cpu, &set);
            sched_setaffinity(0, sizeof set, &set);
        }
        execvp(argv[0], argv);
        perror("nsbench: exec");
        _exit(127);
    }
    if (o->pid_file) {
        FILE *f = fopen(o->pid_file, "w");
        if (f) {
            fprintf(f, "%d\n", (int)pid);
            fclose(f);
        }
    }
    double t_conn = -1, t_route = -1;
    unsigned attempts = 0, connects = 0, not_found = 0;
    int last_code = -1;
    ns_client_t *c = NULL;
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    const char *failure = NULL;
    while (t_route < 0) {
        if (now_ms() - t0 > o->probe_timeout_ms) {
            failure = "timed out";
            break;
        }
        int wst;
        if (waitpid(pid, &wst, WNOHANG) == pid) {
            failure = "the server exited";
            pid = -1;
            break;
        }
        if (c == NULL) {
            connects++;
            if (ns_client_connect(o->host, o->port, 100, &c) != NS_OK) {
                c = NULL;
                pause_us(200);
                continue;
            }
            if (t_conn < 0)
                t_conn = now_ms() - t0;
        }
        ns_ext_field_t ext = ns_ext_field("topic", topic);
        ns_cmd_t req;
        ns_cmd_request_init(&req, NS_REQ_GET_ROUTEINFO_BY_TOPIC, &ext, 1);
        attempts++;
        int rc = ns_client_call(c, &req, 2000, &rsp);
        if (rc != NS_OK) {
            ns_client_close(c);
            c = NULL;
            pause_us(200);
            continue;
        }
        last_code = rsp.cmd.code;
        if (rsp.cmd.code == NS_RSP_SUCCESS && rsp.cmd.body &&
            memmem(rsp.cmd.body, rsp.cmd.body_len, pattern, strlen(pattern)) != NULL) {
            t_route = now_ms() - t0;
            break;
        }
        not_found++;
        pause_us(200);
    }
    if (c)
        ns_client_close(c);
    ns_cmd_msg_free(&rsp);
    if (o->json) {
        printf("{\"ok\":%s,\"pid\":%d,\"connect_ms\":%.3f,\"first_route_ms\":%.3f,"
               "\"attempts\":%u,\"connects\":%u,\"not_ready_replies\":%u,\"last_code\":%d%s%s%s}\n",
               failure ? "false" : "true", (int)pid, t_conn, t_route, attempts, connects, not_found,
               last_code, failure ? ",\"error\":\"" : "", failure ? failure : "",
               failure ? "\"" : "");
    } else {
        printf("restart probe: server pid %d; first connect after %.3f ms; first correct route "
               "for %s (broker %s) after %.3f ms (%u request(s), %u connect attempt(s))%s%s\n",
               (int)pid, t_conn, topic, broker, t_route, attempts, connects,
               failure ? " FAILED: " : "", failure ? failure : "");
    }
    fflush(stdout);
    return failure ? 1 : 0;
}
