/* ioloop.c - what every event loop has: its clock and its mailbox (its
 * read transaction is inline in ioloop.h). Calls nothing above it. */
#include "net/ioloop.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns/clock.h"
#include "ns/err.h"
#include "ns/log.h"

struct ns_mailbox {
    pthread_mutex_t mu;
    ns_mail_t *head, *tail;
    uv_async_t wake;
    void (*cb)(void *data);
    void *data;
    bool stop;   /* end once the mail before it is handled */
    bool closed; /* the loop has ended: no more mail */
    bool handle_closed;
};

_Thread_local ns_loop_t *ns_loop_running;

void ns_loop_set_current(ns_loop_t *loop)
{
    ns_loop_running = loop;
}

/* The kernel's struct sched_attr (linux/sched/types.h, its first version):
 * glibc before 2.41 has no wrapper, so the syscall is made directly. */
typedef struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
} sched_attr_v0_t;
#define SCHED_FLAG_RESET_ON_FORK_ 0x01

void ns_loop_thread_prefer_latency(void)
{
#ifdef SYS_sched_setattr
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (sched_getscheduler(0) != SCHED_OTHER)
        return; /* an operator's chrt: theirs */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tid);
    if (errno != 0)
        return;
    sched_attr_v0_t a = {.size = sizeof a,
                         .policy = SCHED_OTHER,
                         .flags = SCHED_FLAG_RESET_ON_FORK_,
                         .nice = nice,
                         .runtime = NS_LOOP_SLICE_NS};
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
        NS_LOG_DEBUG("loop thread: no short time slice (sched_setattr: %s)", strerror(errno));
#endif
}

void ns_loop_msgs_free(ns_loop_t *loop)
{
    for (size_t i = 0; i < NS_CONN_READ_AHEAD; i++)
        ns_cmd_msg_free(&loop->ahead.msgs[i]);
}

uint64_t ns_now_ms(ns_loop_t *loop)
{
    return uv_now(loop->uv);
}

int64_t ns_wall_ms(void)
{
    return ns_clock_wall_ms();
}

/* ---- mailboxes ---- */

static void wake_cb(uv_async_t *a)
{
    ns_mailbox_t *mb = a->data;
    mb->cb(mb->data);
}

ns_mailbox_t *ns_mailbox_new(uv_loop_t *loop, void (*cb)(void *data), void *data)
{
    ns_mailbox_t *mb = calloc(1, sizeof *mb);
    if (mb == NULL)
        return NULL;
    if (uv_async_init(loop, &mb->wake, wake_cb) != 0) {
        free(mb);
        return NULL;
    }
    pthread_mutex_init(&mb->mu, NULL);
    mb->wake.data = mb;
    mb->cb = cb;
    mb->data = data;
    return mb;
}

void ns_mailbox_free(ns_mailbox_t *mb)
{
    if (mb == NULL)
        return;
    pthread_mutex_destroy(&mb->mu);
    free(mb);
}

ns_mail_t *ns_mailbox_take(ns_mailbox_t *mb, bool *stop)
{
    pthread_mutex_lock(&mb->mu);
    ns_mail_t *m = mb->head;
    mb->head = mb->tail = NULL;
    if (stop)
        *stop = mb->stop;
    pthread_mutex_unlock(&mb->mu);
    return m;
}

void ns_mailbox_stop(ns_mailbox_t *mb)
{
    pthread_mutex_lock(&mb->mu);
    mb->stop = true;
    bool wake = !mb->closed;
    pthread_mutex_unlock(&mb->mu);
    if (wake)
        uv_async_send(&mb->wake);
}

void ns_mailbox_close(ns_mailbox_t *mb)
{
    pthread_mutex_lock(&mb->mu);
    mb->closed = true;
    pthread_mutex_unlock(&mb->mu);
}

void ns_mailbox_close_handle(ns_mailbox_t *mb)
{
    if (!mb->handle_closed && !uv_is_closing((uv_handle_t *)&mb->wake))
        uv_close((uv_handle_t *)&mb->wake, NULL);
    mb->handle_closed = true;
}

bool ns_loop_post(ns_loop_t *loop, ns_mail_t *m)
{
    ns_mailbox_t *mb = loop->inbox;
    if (mb == NULL)
        return false;
    m->next = NULL;
    pthread_mutex_lock(&mb->mu);
    bool open = !mb->closed;
    if (open) {
        if (mb->tail)
            mb->tail->next = m;
        else
            mb->head = m;
        mb->tail = m;
        /* under the lock: the receiver cannot close the handle meanwhile */
        uv_async_send(&mb->wake);
    }
    pthread_mutex_unlock(&mb->mu);
    return open;
}

void ns_loop_wake(ns_loop_t *loop)
{
    ns_mailbox_t *mb = loop->inbox;
    pthread_mutex_lock(&mb->mu);
    if (!mb->closed)
        uv_async_send(&mb->wake);
    pthread_mutex_unlock(&mb->mu);
}

ns_mail_t *ns_mail_new(ns_mail_kind_t kind, ns_conn_t *conn)
{
    ns_mail_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        NS_LOG_ERROR("ioThreads: out of memory for a message between loops");
        return NULL;
    }
    m->kind = kind;
    m->fd = -1;
    m->conn = conn;
    return m;
}

void ns_mail_free(ns_mail_t *m)
{
    ns_buf_free(&m->bytes);
    free(m->cmd);
    m->cmd = NULL;
    m->conn = NULL;
    if (!m->embedded)
        free(m);
}
