/* remoting_bin.c - the general ROCKETMQ binary header decoder (docs/protocol.md
 * §1.5): big-endian fixed fields, a length-prefixed remark, then the ext
 * block of (short keyLength, key, int valueLength, value) entries.
 *
 * A zero-length remark is no remark; entries with a zero-length key or value
 * are dropped (Java reads them as null); negative lengths are NS_EINVAL;
 * bytes after the ext block are ignored, as Java does.
 */
#include "remoting_int.h"

int ns_hdr_bin_decode(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m)
{
    bool has_remark = false;
    size_t remark_off = 0;
    size_t pos = NS_HDR_BIN_FIXED;

    if (n < NS_HDR_BIN_FIXED)
        return NS_EINVAL;
    m->cmd.code = (int16_t)ns_be16_read(hdr);
    m->cmd.language = hdr[2];
    m->cmd.version = (int16_t)ns_be16_read(hdr + 3);
    m->cmd.opaque = (int32_t)ns_be32_read(hdr + 5);
    m->cmd.flag = (int32_t)ns_be32_read(hdr + 9);

    int32_t rlen = (int32_t)ns_be32_read(hdr + 13);
    if (rlen < 0 || (size_t)rlen > n - pos)
        return NS_EINVAL;
    if (rlen > 0) {
        if (ns_hdr_arena_put(&m->arena, hdr + pos, (size_t)rlen, &remark_off) != NS_OK)
            return NS_ENOMEM;
        has_remark = true;
        m->cmd.remark_len = (size_t)rlen;
        pos += (size_t)rlen;
    }

    if (n - pos < 4)
        return NS_EINVAL;
    int32_t elen = (int32_t)ns_be32_read(hdr + pos);
    pos += 4;
    if (elen < 0 || (size_t)elen > n - pos)
        return NS_EINVAL;
    m->cmd.has_ext = elen > 0;
    const uint8_t *q = hdr + pos, *end = hdr + pos + (size_t)elen;
    while (q < end) {
        if (end - q < 2)
            return NS_EINVAL;
        int16_t kl = (int16_t)ns_be16_read(q);
        q += 2;
        if (kl < 0 || kl > end - q)
            return NS_EINVAL;
        const uint8_t *key = q;
        q += kl;
        if (end - q < 4)
            return NS_EINVAL;
        int32_t vl = (int32_t)ns_be32_read(q);
        q += 4;
        if (vl < 0 || vl > end - q)
            return NS_EINVAL;
        const uint8_t *val = q;
        q += vl;
        if (kl == 0 || vl == 0)
            continue; /* a zero length string is null: Java drops the entry */
        size_t koff = 0, voff = 0;
        if (ns_hdr_arena_put(&m->arena, key, (size_t)kl, &koff) != NS_OK ||
            ns_hdr_arena_put(&m->arena, val, (size_t)vl, &voff) != NS_OK ||
            ns_hdr_ext_add(m, koff, (size_t)kl, voff, (size_t)vl) != NS_OK)
            return NS_ENOMEM;
    }
    ns_hdr_fix_pointers(m, has_remark, remark_off);
    return NS_OK;
}
