/* wqueue.h - the write side of a libuv stream: replies are appended to
 * `out`, and a flush swaps it with `wbuf` and writes that, synchronously with
 * uv_try_write when the socket takes it all, else the rest with one
 * uv_write. Shared by namesrvd's connections and nsbench's echo server, so
 * that the ceiling writes exactly the way the server does. */
#ifndef NS_WQUEUE_H
#define NS_WQUEUE_H

#include <stdbool.h>
#include <uv.h>

#include "ns/buf.h"

typedef struct {
    ns_buf_t out;  /* appended by the owner; written by the next flush */
    ns_buf_t wbuf; /* the bytes of the write in flight */
    uv_write_t req;
    bool writing;
} ns_wq_t;

enum {
    NS_WQ_IDLE = 0,   /* nothing to write, or a write already in flight */
    NS_WQ_SENT = 1,   /* everything went out synchronously */
    NS_WQ_QUEUED = 2, /* a uv_write is in flight: cb runs later with req.data = data */
};

/* Writes out to s. Returns one of the NS_WQ_* values, or a negative libuv
 * error code after which the caller closes the stream. */
int ns_wq_flush(ns_wq_t *q, uv_stream_t *s, void *data, uv_write_cb cb);
/* From the write callback: the queued write has ended. */
void ns_wq_done(ns_wq_t *q);
/* Frees both buffers. */
void ns_wq_free(ns_wq_t *q);

#endif
