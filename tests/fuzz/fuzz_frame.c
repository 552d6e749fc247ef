/* fuzz_frame.c - a byte stream as a connection delivers it: frames split by
 * ns_frame_peek (up to maxFrameBytes), each decoded (either header type), and
 * a decoded command encoded again. */
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/remoting.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ns_cmd_msg_t m;
    ns_buf_t out = NS_BUF_INIT;
    ns_cmd_msg_init(&m);
    size_t off = 0, flen = 0;
    while (ns_frame_peek(data + off, size - off, NS_DEFAULT_MAX_FRAME_BYTES, &flen) == 0) {
        if (ns_remoting_decode(data + off, flen, &m) == 0) {
            ns_buf_reset(&out);
            ns_remoting_encode(&out, &m.cmd);
            (void)ns_cmd_ext_get(&m.cmd, "topic");
        }
        off += flen;
    }
    ns_buf_free(&out);
    ns_cmd_msg_free(&m);
    return 0;
}
