/* seal.c - secrets encrypted at rest with AES-256-GCM (include/ns/seal.h). */
#include "ns/seal.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "ns/err.h"

#define NONCE 12
#define TAG 16
#define PREFIX_LEN (sizeof NS_SEAL_PREFIX - 1)

static EVP_CIPHER *gcm; /* fetched once: a fetch per call costs more than the cipher */
static pthread_once_t gcm_once = PTHREAD_ONCE_INIT;

static void gcm_fetch(void)
{
    gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
}

int ns_seal_key_load(const char *path, uint8_t key[NS_SEAL_KEY_BYTES], char *err, size_t errlen)
{
    char text[256];
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read %s", path);
        return NS_EIO;
    }
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    size_t i = 0;
    for (; i < 2 * NS_SEAL_KEY_BYTES && isxdigit((unsigned char)p[i]); i++) {
        unsigned v = isdigit((unsigned char)p[i])
                         ? (unsigned)(p[i] - '0')
                         : (unsigned)(tolower((unsigned char)p[i]) - 'a' + 10);
        key[i / 2] = (uint8_t)(i % 2 ? (key[i / 2] << 4) | v : v);
    }
    const char *rest = p + i;
    while (isspace((unsigned char)*rest))
        rest++;
    bool bad = i != 2 * NS_SEAL_KEY_BYTES || *rest;
    OPENSSL_cleanse(text, sizeof text);
    if (bad) {
        snprintf(err, errlen, "%s: want 64 hex digits (e.g. openssl rand -hex 32)", path);
        OPENSSL_cleanse(key, NS_SEAL_KEY_BYTES);
        return NS_EINVAL;
    }
    return NS_OK;
}

bool ns_sealed(const char *s)
{
    return s && strncmp(s, NS_SEAL_PREFIX, PREFIX_LEN) == 0;
}

/* Runs AES-256-GCM one way over in (n bytes) into out; tag in/out. */
static int gcm_run(bool enc, const uint8_t *key, const uint8_t nonce[NONCE], const char *ak,
                   const uint8_t *in, size_t n, uint8_t *out, uint8_t tag[TAG])
{
    int len = 0, rc = NS_EINVAL;
    pthread_once(&gcm_once, gcm_fetch);
    EVP_CIPHER_CTX *c = gcm ? EVP_CIPHER_CTX_new() : NULL;
    if (c == NULL)
        return NS_ENOMEM;
    if (EVP_CipherInit_ex2(c, gcm, key, nonce, enc ? 1 : 0, NULL) == 1 &&
        EVP_CipherUpdate(c, NULL, &len, (const uint8_t *)ak, (int)strlen(ak)) == 1 &&
        (n == 0 || EVP_CipherUpdate(c, out, &len, in, (int)n) == 1) &&
        (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG, tag) == 1) &&
        EVP_CipherFinal_ex(c, out + (n ? len : 0), &len) == 1 &&
        (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG, tag) == 1))
        rc = NS_OK;
    EVP_CIPHER_CTX_free(c);
    return rc;
}

int ns_seal(const uint8_t key[NS_SEAL_KEY_BYTES], const char *ak, const char *plain, char **out)
{
    size_t n = strlen(plain), raw_len = NONCE + n + TAG;
    uint8_t *raw = malloc(raw_len);
    char *text = malloc(PREFIX_LEN + 4 * ((raw_len + 2) / 3) + 1);
    int rc = raw && text ? NS_OK : NS_ENOMEM;
    if (rc == NS_OK && RAND_bytes(raw, NONCE) != 1)
        rc = NS_EINVAL;
    if (rc == NS_OK)
        rc = gcm_run(true, key, raw, ak, (const uint8_t *)plain, n, raw + NONCE, raw + NONCE + n);
    if (rc == NS_OK) {
        memcpy(text, NS_SEAL_PREFIX, PREFIX_LEN);
        EVP_EncodeBlock((unsigned char *)text + PREFIX_LEN, raw, (int)raw_len);
        *out = text;
        text = NULL;
    }
    if (raw) {
        OPENSSL_cleanse(raw, raw_len);
        free(raw);
    }
    free(text);
    return rc;
}

int ns_unseal(const uint8_t key[NS_SEAL_KEY_BYTES], const char *ak, const char *sealed, char **out)
{
    if (!ns_sealed(sealed))
        return NS_EINVAL;
    const char *b64 = sealed + PREFIX_LEN;
    size_t blen = strlen(b64);
    if (blen % 4 != 0 || blen < 4 * ((NONCE + TAG + 2) / 3))
        return NS_EINVAL;
    uint8_t *raw = malloc(blen / 4 * 3 + 1);
    char *plain = NULL;
    int rc = raw ? NS_OK : NS_ENOMEM;
    int got = rc == NS_OK ? EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)blen) : -1;
    size_t pad = blen >= 2 ? (size_t)(b64[blen - 1] == '=') + (b64[blen - 2] == '=') : 0;
    size_t raw_len = got < 0 ? 0 : (size_t)got - pad;
    if (rc == NS_OK && (got < 0 || raw_len < NONCE + TAG))
        rc = NS_EINVAL;
    size_t n = rc == NS_OK ? raw_len - NONCE - TAG : 0;
    if (rc == NS_OK && (plain = malloc(n + 1)) == NULL)
        rc = NS_ENOMEM;
    if (rc == NS_OK)
        rc = gcm_run(false, key, raw, ak, raw + NONCE, n, (uint8_t *)plain, raw + NONCE + n);
    if (rc == NS_OK && memchr(plain, 0, n) != NULL)
        rc = NS_EINVAL;
    if (rc == NS_OK) {
        plain[n] = 0;
        *out = plain;
        plain = NULL;
    }
    if (plain) {
        OPENSSL_cleanse(plain, n);
        free(plain);
    }
    free(raw);
    return rc;
}
