/* seqlog_pack.h - a sequence log record's stored form (seqlog.c), also
 * written by migration 0011: records of NS_SEQLOG_PACK_MIN bytes or more
 * are [0x01][u32 LE length of the JSON][zlib stream], shorter ones the JSON
 * itself (it starts with '{'). The schema that brought the packed form. */
#ifndef NS_SEQLOG_PACK_H
#define NS_SEQLOG_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

#define NS_SEQLOG_PACK_MIN 256
#define NS_SEQLOG_PACK_SCHEMA 11
/* Appends the packed form of json to out (the caller keeps it only when
 * shorter). NS_ENOMEM; NS_EINVAL over 16 MiB of JSON (stored plain). */
int ns_seqlog_pack(ns_buf_t *out, const char *json, size_t len);
/* Appends the JSON of stored value v, packed or not, and a NUL
 * (out->len - 1 is its length). NS_ECORRUPT when a packed one does not
 * inflate to the length it names. */
int ns_seqlog_unpack(ns_buf_t *out, const uint8_t *v, size_t n);
/* True when a stored value is packed. */
static inline int ns_seqlog_is_packed(const uint8_t *v, size_t n)
{
    return n > 0 && v[0] == 0x01;
}

#endif
