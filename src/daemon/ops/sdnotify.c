/* sdnotify.c - sd_notify without libsystemd. The protocol is systemd's
 * documented, stable interface (sd_notify(3), "Notification protocol"):
 * $NOTIFY_SOCKET is a filesystem path ("/...") or an abstract name
 * ("@..."), the message one datagram. Written here rather than linked:
 * libsystemd brings six more shared libraries (libgcrypt, libgpg-error,
 * liblz4, liblzma, libzstd, libcap) that cost namesrvd 1.0 MiB resident at
 * every start, for two calls (docs/performance.md, "Memory"). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ops/sdnotify.h"

/* $NOTIFY_SOCKET as an address: its length in *len, 0 when unset or unusable. */
static int notify_addr(struct sockaddr_un *sa, socklen_t *len)
{
    const char *path = getenv("NOTIFY_SOCKET");
    size_t n = path ? strlen(path) : 0;
    if (n < 2 || n >= sizeof sa->sun_path || (path[0] != '/' && path[0] != '@'))
        return 0;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, n);
    if (path[0] == '@')
        sa->sun_path[0] = 0; /* abstract: no NUL at the end, the length says */
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
    return 1;
}

int ns_sd_notify(const char *state)
{
    struct sockaddr_un sa;
    socklen_t len = 0;
    if (!notify_addr(&sa, &len))
        return 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
    int err = n < 0 ? -errno : 1;
    close(fd);
    return err;
}

/* $name as a positive decimal number, or 0 when unset, junk or not > 0. */
static uint64_t env_u64(const char *name)
{
    const char *s = getenv(name);
    int64_t v = 0;
    if (s == NULL || *s < '0' || *s > '9' || ns_parse_i64(s, strlen(s), &v) != NS_OK || v <= 0)
        return 0;
    return (uint64_t)v;
}

int ns_sd_watchdog_usec(uint64_t *usec)
{
    uint64_t v = env_u64("WATCHDOG_USEC");
    if (v == 0)
        return 0;
    if (getenv("WATCHDOG_PID") && env_u64("WATCHDOG_PID") != (uint64_t)getpid())
        return 0; /* meant for another process (a parent that forked us) */
    *usec = v;
    return 1;
}
