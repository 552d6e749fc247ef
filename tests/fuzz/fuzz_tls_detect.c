/* fuzz_tls_detect.c - libFuzzer target for what a connection's first bytes
 * go through (src/daemon/net/wire.c): PROXY detection and parsing, then TLS or
 * plain, then the TLS server session (src/proto/tls.c) on whatever follows.
 *
 * Input: byte 0 picks the mode (disabled / permissive / enforcing) and
 * whether PROXY headers are trusted; byte 1 the size of the reads the rest
 * is cut into (1..256, as the network may deliver it). The wire must end
 * in a defined state, never emit plaintext from a failed TLS session, and
 * never report ready without a decision. The server certificate is made in
 * memory at start (a throwaway self-signed EC key). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ns/err.h"
#include "src/daemon/net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static ns_tls_server_t *tls_srv;

/* Writes a self-signed certificate and its key to temp files. */
static int make_cert(char *cert, char *key)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (pk == NULL || x == NULL)
        return -1;
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
    X509_set_issuer_name(x, n);
    if (X509_sign(x, pk, EVP_sha256()) == 0)
        return -1;
    int fc = mkstemp(cert), fk = mkstemp(key);
    FILE *c = fdopen(fc, "w"), *k = fdopen(fk, "w");
    if (c == NULL || k == NULL || !PEM_write_X509(c, x) ||
        !PEM_write_PrivateKey(k, pk, NULL, NULL, 0, NULL, NULL))
        return -1;
    fclose(c);
    fclose(k);
    X509_free(x);
    EVP_PKEY_free(pk);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char cert[] = "/tmp/fuzz-wire-cert-XXXXXX", key[] = "/tmp/fuzz-wire-key-XXXXXX", err[256];
    if (make_cert(cert, key) != 0)
        abort();
    ns_tls_opts_t o = {.cert_path = cert, .key_path = key, .protocols = "TLSv1.2,TLSv1.3"};
    if (ns_tls_server_new(&o, &tls_srv, err, sizeof err) != NS_OK) {
        fprintf(stderr, "fuzz: %s\n", err);
        abort();
    }
    unlink(cert);
    unlink(key);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    ns_wire_cfg_t cfg = {.mode = (ns_tls_mode_t)(data[0] % 3), .tls = tls_srv};
    cfg.acl.any = (data[0] & 0x10) != 0;
    size_t chunk = (size_t)data[1] + 1;
    data += 2;
    size -= 2;
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(1234)};
    peer.sin_addr.s_addr = htonl(0x7f000001);
    ns_wire_t *w = ns_wire_new(&cfg, (struct sockaddr *)&peer);
    ns_buf_t plain = NS_BUF_INIT;
    if (w == NULL)
        return 0;
    int rc = NS_OK;
    for (size_t off = 0; off < size && rc == NS_OK; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        uint8_t *copy = malloc(n); /* exact size: overreads are ASan errors */
        memcpy(copy, data + off, n);
        const char *why = NULL;
        size_t before = plain.len;
        rc = ns_wire_feed(w, copy, n, &plain, &why);
        free(copy);
        if (rc != NS_OK && (why == NULL || plain.len != before))
            abort(); /* a failure has a reason and yields nothing */
        ns_buf_reset(ns_wire_pending(w));
    }
    ns_wire_state_t st = ns_wire_state(w);
    if (rc != NS_OK && st != NS_WIRE_FAILED && rc != NS_ESHUTDOWN && rc != NS_ENOMEM)
        abort();
    if (ns_wire_ready(w) && st != NS_WIRE_PLAIN && st != NS_WIRE_TLS)
        abort();
    if (plain.len > 0 && st == NS_WIRE_DETECT)
        abort(); /* nothing passes before the decision */
    if (cfg.mode == NS_TLS_MODE_ENFORCING && st == NS_WIRE_PLAIN)
        abort();
    if (cfg.mode == NS_TLS_MODE_DISABLED && st == NS_WIRE_TLS)
        abort();
    ns_buf_t out = NS_BUF_INIT;
    const char *why = NULL;
    if (st == NS_WIRE_TLS && ns_wire_ready(w))
        (void)ns_wire_seal(w, &out, &why);
    ns_buf_free(&out);
    ns_buf_free(&plain);
    ns_wire_free(w);
    return 0;
}
