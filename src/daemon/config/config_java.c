/* config_java.c - the Java NameServer 5.3 settings namesrvd accepts without
 * effect, each with the reason (include/ns/config.h, ns_config_java_ignored).
 *
 * The Java NameServer loads its -c file into NamesrvConfig,
 * NettyServerConfig and NettyClientConfig (NamesrvStartup, 5.3.3); a key is
 * a setter's name. Keys of those classes that namesrvd implements are rows
 * of the main table (src/daemon/config/config_table.c); the rest are listed here so that
 * a namesrv.conf written for Java starts namesrvd with one WARN line instead
 * of failing. A key in neither list is still an error. */
#include <stdbool.h>
#include <string.h>

#include "ns/config.h"

typedef struct {
    const char *key;
    const char *why;
} java_key_t;

static const char THREADS[] =
    "thread pools: namesrvd serves requests on its event loop(s) (ioThreads) and writes on one "
    "writer thread";
static const char NETTY[] = "Netty buffers, allocators and selectors: namesrvd runs on libuv";
static const char CLIENT[] = "NettyClientConfig: namesrvd opens no outbound connections";
static const char TLS_CLIENT[] =
    "the client side of Java's TLS (brokers and clients read it; namesrvd serves TLS with "
    "tls.server.*)";

static const java_key_t java_keys[] = {
    /* NamesrvConfig */
    {"clientRequestThreadPoolNums", THREADS},
    {"defaultThreadPoolNums", THREADS},
    {"clientRequestThreadPoolQueueCapacity", THREADS},
    {"defaultThreadPoolQueueCapacity", THREADS},
    {"enableControllerInNamesrv", "no embedded DLedger/JRaft controller: run the controller apart"},
    /* NettyServerConfig */
    {"serverWorkerThreads", THREADS},
    {"serverCallbackExecutorThreads", THREADS},
    {"serverSelectorThreads", THREADS},
    {"serverOnewaySemaphoreValue", "no request semaphores: flow control is TCP backpressure"},
    {"serverAsyncSemaphoreValue", "no request semaphores: flow control is TCP backpressure"},
    {"serverSocketSndBufSize", NETTY},
    {"serverSocketRcvBufSize", NETTY},
    {"writeBufferHighWaterMark", NETTY},
    {"writeBufferLowWaterMark", NETTY},
    {"serverSocketBacklog", NETTY},
    {"serverNettyWorkerGroupEnable", NETTY},
    {"serverPooledByteBufAllocatorEnable", NETTY},
    {"useEpollNativeSelector", NETTY},
    {"enableShutdownGracefully", "shutdown always drains: SIGTERM commits in-flight writes"},
    {"shutdownWaitTimeSeconds", "shutdown always drains: SIGTERM commits in-flight writes"},
    /* NettyClientConfig */
    {"clientWorkerThreads", CLIENT},
    {"clientCallbackExecutorThreads", CLIENT},
    {"clientOnewaySemaphoreValue", CLIENT},
    {"clientAsyncSemaphoreValue", CLIENT},
    {"connectTimeoutMillis", CLIENT},
    {"channelNotActiveInterval", CLIENT},
    {"scanAvailableNameSrv", CLIENT},
    {"clientChannelMaxIdleTimeSeconds", CLIENT},
    {"clientSocketSndBufSize", CLIENT},
    {"clientSocketRcvBufSize", CLIENT},
    {"clientPooledByteBufAllocatorEnable", CLIENT},
    {"clientCloseSocketIfTimeout", CLIENT},
    {"useTLS", CLIENT},
    {"socksProxyConfig", CLIENT},
    {"disableCallbackExecutor", CLIENT},
    {"disableNettyWorkerGroup", CLIENT},
    {"maxReconnectIntervalTimeSeconds", CLIENT},
    {"enableReconnectForGoAway", CLIENT},
    /* TlsSystemConfig (remoting, 5.x): the keys namesrvd has no row for */
    {"tls.test.mode.enable",
     "Java's self-signed test certificate: namesrvd serves TLS only with tls.server.certPath "
     "and keyPath"},
    {"tls.server.authClient",
     "a client certificate that is sent is always verified (tls.server.need.client.auth)"},
    {"tls.enable", TLS_CLIENT},
    {"tls.client.keyPath", TLS_CLIENT},
    {"tls.client.keyPassword", TLS_CLIENT},
    {"tls.client.certPath", TLS_CLIENT},
    {"tls.client.authServer", TLS_CLIENT},
    {"tls.client.trustCertPath", TLS_CLIENT},
};

/* Keys of our table that Java acts on and we accept but do not (yet). */
static const java_key_t noeffect_keys[] = {
    {"clusterTest", "cluster-test mode is not implemented"},
    {"productEnvName", "cluster-test mode is not implemented"},
};

const char *ns_config_noeffect(const char *key)
{
    for (size_t i = 0; i < sizeof noeffect_keys / sizeof noeffect_keys[0]; i++)
        if (strcmp(noeffect_keys[i].key, key) == 0)
            return noeffect_keys[i].why;
    return NULL;
}

int ns_config_java_warning(const char *const *keys, const char *const *whys, size_t n,
                           ns_buf_t *out)
{
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = whys[j] == whys[i];
        if (seen)
            continue; /* listed with the first key of the same reason */
        if (!first && ns_buf_append_str(out, "; ") != 0)
            return -1;
        first = false;
        for (size_t j = i, k = 0; j < n; j++)
            if (whys[j] == whys[i] && ns_buf_printf(out, "%s%s", k++ ? ", " : "", keys[j]) != 0)
                return -1;
        if (ns_buf_printf(out, " (%s)", whys[i]) != 0)
            return -1;
    }
    return 0;
}

const char *ns_config_java_key(size_t i)
{
    return i < sizeof java_keys / sizeof java_keys[0] ? java_keys[i].key : NULL;
}

const char *ns_config_java_ignored(const char *key)
{
    for (size_t i = 0; i < sizeof java_keys / sizeof java_keys[0]; i++)
        if (strcmp(java_keys[i].key, key) == 0)
            return java_keys[i].why;
    return NULL;
}

int ns_config_java_list(ns_buf_t *out)
{
    for (size_t i = 0; i < sizeof java_keys / sizeof java_keys[0]; i++)
        if (ns_buf_printf(out, "  %s: %s\n", java_keys[i].key, java_keys[i].why) != 0)
            return -1;
    for (size_t i = 0; i < sizeof noeffect_keys / sizeof noeffect_keys[0]; i++)
        if (ns_buf_printf(out, "  %s: %s\n", noeffect_keys[i].key, noeffect_keys[i].why) != 0)
            return -1;
    return 0;
}
