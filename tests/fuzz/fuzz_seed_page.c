/* fuzz_seed_page.c - the NS_SEED_PAGE decoders (include/ns/seed.h): the
 * input's first byte picks the section, the rest is decoded as a reply
 * page of it and as a request; a page that decodes must hold exactly the
 * items and list entries its form says, and a request written again must
 * read back to the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/seed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ns_seed_section_t s = (ns_seed_section_t)(data[0] % NS_SEED_SECTIONS);
    ns_seed_page_t p;
    if (ns_seed_page_decode(data + 1, size - 1, s, 1000, &p) == NS_OK) {
        for (size_t i = 0; i < p.n; i++) {
            const ns_seed_item_t *it = &p.items[i];
            if (it->s[0] == NULL)
                abort(); /* every form starts with a name */
            for (size_t j = 0; j < it->n_list; j++)
                if (it->list[j] == NULL)
                    abort();
        }
        if (p.next.a && p.n == 0)
            abort();
        ns_seed_page_free(&p);
    }
    /* invalid UTF-8 in a name is replaced when written (as in every JSON
     * body we send), so it is the written form that must survive: encode,
     * decode, encode gives the same bytes */
    ns_seed_request_t r, r2;
    if (ns_seed_request_decode(data + 1, size - 1, &r) == NS_OK) {
        ns_buf_t b = NS_BUF_INIT, b2 = NS_BUF_INIT;
        if (ns_seed_request_encode(&b, &r) != NS_OK ||
            ns_seed_request_decode(b.data, b.len, &r2) != NS_OK || r2.section != r.section ||
            r2.max_bytes != r.max_bytes || ns_seed_request_encode(&b2, &r2) != NS_OK ||
            b.len != b2.len || memcmp(b.data, b2.data, b.len) != 0)
            abort();
        ns_seed_cursor_free(&r2.after);
        ns_seed_cursor_free(&r.after);
        ns_buf_free(&b);
        ns_buf_free(&b2);
    }
    return 0;
}
