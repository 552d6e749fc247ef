/* fuzz_header.h - the driver shared by fuzz_header_binary.c and
 * fuzz_header_json.c: the input is the header of one frame of header type
 * `type` (NS_SERIALIZE_JSON or NS_SERIALIZE_ROCKETMQ); a decoded header is
 * checked for names and encoded again, in its own type and then in the
 * other one. */
#ifndef NS_FUZZ_HEADER_H
#define NS_FUZZ_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/names.h"
#include "ns/remoting.h"

static int fuzz_header_one(const uint8_t *data, size_t size, uint8_t type, uint8_t other_type)
{
    ns_buf_t f = NS_BUF_INIT, out = NS_BUF_INIT;
    ns_cmd_msg_t m;
    char remark[256];
    if (size > NS_DEFAULT_MAX_FRAME_BYTES - 8)
        return 0;
    ns_cmd_msg_init(&m);
    ns_buf_append_be32(&f, (uint32_t)(4 + size));
    ns_buf_append_be32(&f, ((uint32_t)type << 24) | (uint32_t)size);
    ns_buf_append(&f, data, size);
    if (f.len == size + 8 && ns_remoting_decode(f.data, f.len, &m) == 0) {
        (void)ns_names_check_header(&m.cmd, remark, sizeof remark);
        ns_remoting_encode(&out, &m.cmd);
        m.cmd.serialize_type = other_type;
        ns_buf_reset(&out);
        ns_remoting_encode(&out, &m.cmd);
    }
    ns_buf_free(&f);
    ns_buf_free(&out);
    ns_cmd_msg_free(&m);
    return 0;
}

#endif
