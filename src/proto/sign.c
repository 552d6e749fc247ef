/* sign.c - RocketMQ request signatures (include/ns/sign.h).
 *
 * The content is rebuilt from the decoded extFields. The decoder already
 * keeps the last value of a repeated key (Java's HashMap does the same), so
 * every key appears once. Keys are ordered as Java's TreeMap<String> orders
 * them: by UTF-16 code units, which differs from UTF-8 byte order only when
 * a character above U+FFFF meets one in U+E000..U+FFFF; both are handled.
 * Bytes that are not valid UTF-8 sort as single units (Java would have
 * turned them into U+FFFD on decoding, so such a request cannot verify in
 * Java either).
 *
 * The HMAC is written out over libcrypto's SHA-1 (EVP digests): OpenSSL 3's
 * one-shot HMAC() fetches its algorithms on every call, about 6 us here;
 * this is under 1 us. The unit tests pin it to openssl-computed values. */
#include "ns/sign.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ns/err.h"

/* Next UTF-16 code unit(s) of the UTF-8 text at *p (before end): returns
 * how many units (1 or 2) were put in u and advances *p. */
static int next_units(const unsigned char **p, const unsigned char *end, unsigned u[2])
{
    const unsigned char *s = *p;
    unsigned c = s[0], cp = 0;
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || (size_t)(end - s) < n)
        n = 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            n = 0;
    if (n <= 1) {
        *p = s + 1;
        u[0] = c;
        return 1;
    }
    cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (s[i] & 0x3F);
    *p = s + n;
    if (cp < 0x10000) {
        u[0] = cp;
        return 1;
    }
    u[0] = 0xD800 + ((cp - 0x10000) >> 10);
    u[1] = 0xDC00 + ((cp - 0x10000) & 0x3FF);
    return 2;
}

/* String.compareTo over two UTF-8 keys. */
static int java_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    const unsigned char *p = (const unsigned char *)a, *pe = p + alen;
    const unsigned char *q = (const unsigned char *)b, *qe = q + blen;
    unsigned ua[2], ub[2];
    int na = 0, nb = 0, ia = 0, ib = 0;
    for (;;) {
        if (ia == na && p < pe) {
            na = next_units(&p, pe, ua);
            ia = 0;
        }
        if (ib == nb && q < qe) {
            nb = next_units(&q, qe, ub);
            ib = 0;
        }
        bool a_done = ia == na, b_done = ib == nb;
        if (a_done || b_done)
            return a_done && b_done ? 0 : a_done ? -1 : 1;
        if (ua[ia] != ub[ib])
            return ua[ia] < ub[ib] ? -1 : 1;
        ia++;
        ib++;
    }
}

static int ext_ptr_cmp(const void *x, const void *y)
{
    const ns_ext_field_t *a = *(const ns_ext_field_t *const *)x;
    const ns_ext_field_t *b = *(const ns_ext_field_t *const *)y;
    return java_key_cmp(a->key, a->key_len, b->key, b->key_len);
}

static bool is_key(const ns_ext_field_t *e, const char *k)
{
    return e->key && e->key_len == strlen(k) && memcmp(e->key, k, e->key_len) == 0;
}

int ns_sign_content(const ns_cmd_t *cmd, ns_buf_t *out)
{
    const ns_ext_field_t *stack[32], **order = stack;
    size_t n = 0;
    int rc = NS_OK;
    if (cmd->n_ext > sizeof stack / sizeof stack[0]) {
        order = malloc(cmd->n_ext * sizeof *order);
        if (order == NULL)
            return NS_ENOMEM;
    }
    for (size_t i = 0; i < cmd->n_ext; i++)
        if (cmd->ext[i].key && cmd->ext[i].val && !is_key(&cmd->ext[i], NS_SIGN_SIGNATURE))
            order[n++] = &cmd->ext[i];
    qsort(order, n, sizeof *order, ext_ptr_cmp);
    for (size_t i = 0; rc == NS_OK && i < n; i++)
        rc = ns_buf_append(out, order[i]->val, order[i]->val_len);
    if (rc == NS_OK && cmd->body_len)
        rc = ns_buf_append(out, cmd->body, cmd->body_len);
    if (order != stack)
        free(order);
    return rc;
}

/* SHA-1, fetched once: OpenSSL 3's one-shot HMAC() looks the algorithm up
 * on every call, which costs several times the hash itself. */
static EVP_MD *sha1_md;
static pthread_once_t sha1_once = PTHREAD_ONCE_INIT;

static void sha1_fetch(void)
{
    sha1_md = EVP_MD_fetch(NULL, "SHA1", NULL);
}

/* One SHA-1 over a (64-byte padded key) block and then data. */
static bool sha1_two(EVP_MD_CTX *ctx, const unsigned char pad[64], const void *data, size_t len,
                     unsigned char out[20])
{
    unsigned int n = 0;
    return EVP_DigestInit_ex(ctx, sha1_md, NULL) == 1 && EVP_DigestUpdate(ctx, pad, 64) == 1 &&
           (len == 0 || EVP_DigestUpdate(ctx, data, len) == 1) &&
           EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 20;
}

int ns_sign_hmac_b64(const void *data, size_t len, const char *secret, size_t secret_len,
                     char sig[NS_SIGN_B64_LEN + 1])
{
    /* HMAC (RFC 2104) with SHA-1, block 64: H(K^opad || H(K^ipad || m)),
     * a key longer than the block hashed first, as javax.crypto.Mac does. */
    unsigned char key[64] = {0}, ipad[64], opad[64], inner[20], mac[20];
    EVP_MD_CTX *ctx = NULL;
    int rc = NS_EINVAL;
    pthread_once(&sha1_once, sha1_fetch);
    if (sha1_md == NULL || (ctx = EVP_MD_CTX_new()) == NULL)
        goto out;
    if (secret_len > 64) {
        unsigned int n = 0;
        if (EVP_Digest(secret, secret_len, key, &n, sha1_md, NULL) != 1 || n != 20)
            goto out;
    } else if (secret_len) {
        memcpy(key, secret, secret_len);
    }
    for (int i = 0; i < 64; i++) {
        ipad[i] = key[i] ^ 0x36;
        opad[i] = key[i] ^ 0x5c;
    }
    if (!sha1_two(ctx, ipad, data, len, inner) || !sha1_two(ctx, opad, inner, 20, mac))
        goto out;
    if (EVP_EncodeBlock((unsigned char *)sig, mac, 20) != NS_SIGN_B64_LEN)
        goto out;
    sig[NS_SIGN_B64_LEN] = 0;
    rc = NS_OK;
out:
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(ipad, sizeof ipad);
    OPENSSL_cleanse(opad, sizeof opad);
    EVP_MD_CTX_free(ctx);
    return rc;
}

int ns_sign_compute(const ns_cmd_t *cmd, const char *secret, ns_buf_t *scratch,
                    char sig[NS_SIGN_B64_LEN + 1])
{
    ns_buf_reset(scratch);
    int rc = ns_sign_content(cmd, scratch);
    if (rc == NS_OK)
        rc = ns_sign_hmac_b64(scratch->data, scratch->len, secret, strlen(secret), sig);
    return rc;
}

bool ns_sign_equal(const char *want, const char *got, size_t got_len)
{
    /* The length of a valid signature is public (always 28); compare the
     * bytes in constant time whatever they are. */
    char pad[NS_SIGN_B64_LEN] = {0};
    memcpy(pad, got, got_len < NS_SIGN_B64_LEN ? got_len : NS_SIGN_B64_LEN);
    bool same = CRYPTO_memcmp(want, pad, NS_SIGN_B64_LEN) == 0;
    return same && got_len == NS_SIGN_B64_LEN;
}

int ns_sign_request(const ns_cmd_t *cmd, const char *access_key, const char *secret,
                    ns_buf_t *scratch, ns_signed_t *out)
{
    memset(out, 0, sizeof *out);
    out->ext = calloc(cmd->n_ext + 2, sizeof *out->ext);
    if (out->ext == NULL)
        return NS_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < cmd->n_ext; i++)
        if (!is_key(&cmd->ext[i], NS_SIGN_ACCESS_KEY) && !is_key(&cmd->ext[i], NS_SIGN_SIGNATURE))
            out->ext[n++] = cmd->ext[i];
    out->ext[n++] = ns_ext_field(NS_SIGN_ACCESS_KEY, access_key);
    out->cmd = *cmd;
    out->cmd.ext = out->ext;
    out->cmd.n_ext = n;
    out->cmd.has_ext = true;
    int rc = ns_sign_compute(&out->cmd, secret, scratch, out->sig);
    if (rc != NS_OK) {
        ns_signed_free(out);
        return rc;
    }
    out->ext[n++] = ns_ext_field(NS_SIGN_SIGNATURE, out->sig);
    out->cmd.ext = out->ext;
    out->cmd.n_ext = n;
    return NS_OK;
}

void ns_signed_free(ns_signed_t *s)
{
    free(s->ext);
    s->ext = NULL;
    s->cmd.ext = NULL;
    s->cmd.n_ext = 0;
}
