/* fuzz_header.h - the body of the two header fuzzers (fuzz_header_json.c,
 * fuzz_header_binary.c): the input is the header of one frame of the given
 * serialize type, with no body. The frame is decoded three ways: by the fast
 * path alone, by the general decoder alone, and by ns_remoting_decode (fast
 * path, then general). They must agree, or the target aborts: the general
 * decoder's result is the reference; whenever the fast path accepts a
 * header, it must decode it identically. A decoded header is then checked
 * for names and encoded again, in both types. */
#ifndef NS_FUZZ_HEADER_H
#define NS_FUZZ_HEADER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/names.h"
#include "ns/remoting.h"

static void fuzz_header_differ(const char *what, int rc_ref, int rc)
{
    fprintf(stderr, "fuzz_header: %s differs from the general decoder (rc %d vs %d)\n", what, rc,
            rc_ref);
    abort();
}

static int fuzz_header_one(uint8_t type, const uint8_t *data, size_t size)
{
    ns_buf_t f = NS_BUF_INIT, out = NS_BUF_INIT;
    ns_cmd_msg_t ref, fast, both;
    char remark[256];
    if (size > NS_DEFAULT_MAX_FRAME_BYTES - 8)
        return 0;
    ns_cmd_msg_init(&ref);
    ns_cmd_msg_init(&fast);
    ns_cmd_msg_init(&both);
    ns_buf_append_be32(&f, (uint32_t)(4 + size));
    ns_buf_append_be32(&f, ((uint32_t)type << 24) | (uint32_t)size);
    ns_buf_append(&f, data, size);
    if (f.len == size + 8) {
        int rc_ref = ns_remoting_decode_general(f.data, f.len, &ref);
        int rc_fast = ns_remoting_decode_fast(f.data, f.len, &fast);
        int rc_both = ns_remoting_decode(f.data, f.len, &both);
        if (rc_both != rc_ref || (rc_both == NS_OK && !ns_cmd_same(&both.cmd, &ref.cmd)))
            fuzz_header_differ("ns_remoting_decode", rc_ref, rc_both);
        if (rc_fast != NS_EFALLBACK &&
            (rc_fast != rc_ref || (rc_fast == NS_OK && !ns_cmd_same(&fast.cmd, &ref.cmd))))
            fuzz_header_differ("the fast path", rc_ref, rc_fast);
        /* a decoder that vouches for the names spares the check: it must pass */
        if ((rc_fast == NS_OK && fast.cmd.ext_names_ok &&
             !ns_names_check_header(&ref.cmd, remark, sizeof remark)) ||
            (rc_both == NS_OK && both.cmd.ext_names_ok &&
             !ns_names_check_header(&both.cmd, remark, sizeof remark)))
            fuzz_header_differ("ext_names_ok", 1, 0);
        if (rc_ref == NS_OK) {
            (void)ns_names_check_header(&ref.cmd, remark, sizeof remark);
            ns_remoting_encode(&out, &ref.cmd);
            ref.cmd.serialize_type =
                type == NS_SERIALIZE_JSON ? NS_SERIALIZE_ROCKETMQ : NS_SERIALIZE_JSON;
            ns_buf_reset(&out);
            ns_remoting_encode(&out, &ref.cmd);
        }
    }
    ns_buf_free(&f);
    ns_buf_free(&out);
    ns_cmd_msg_free(&ref);
    ns_cmd_msg_free(&fast);
    ns_cmd_msg_free(&both);
    return 0;
}

#endif
