/* sign.h - RocketMQ remoting request signatures (the ACL 1.0 / 5.x scheme).
 *
 * What the Java clients send (AclClientRPCHook.doBeforeRequest): the custom
 * header is turned into extFields, AccessKey (and SecurityToken when set)
 * are added, then
 *
 *   content   = the values of all extFields except "Signature", in the
 *               order of their keys (Java TreeMap: String.compareTo, i.e.
 *               UTF-16 code units), concatenated as UTF-8, then the body
 *               bytes (AclUtils.combineRequestContent / combineBytes)
 *   Signature = Base64(HmacSHA1(key = secret as UTF-8, content))
 *               (AclSigner.calSignature), added as the extField "Signature".
 *
 * The 5.x server side (DefaultAuthenticationContextBuilder.build for
 * remoting) rebuilds exactly that content from the received extFields and
 * compares. Keys and values are signed, but only values enter the content:
 * the request code, version, flag, opaque and the keys are NOT covered.
 *
 * Pure functions over memory; the HMAC is OpenSSL libcrypto's. */
#ifndef NS_SIGN_H
#define NS_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "ns/buf.h"
#include "ns/remoting.h"

#define NS_SIGN_ACCESS_KEY "AccessKey"
#define NS_SIGN_SIGNATURE "Signature"
#define NS_SIGN_SECURITY_TOKEN "SecurityToken"
/* Base64 of a 20-byte SHA-1 HMAC: 28 characters. */
#define NS_SIGN_B64_LEN 28

/* Appends the signed content of cmd to out (see above). NS_OK, NS_ENOMEM. */
int ns_sign_content(const ns_cmd_t *cmd, ns_buf_t *out);

/* Base64(HmacSHA1(secret, data)) into sig (NUL-terminated, 29 bytes).
 * NS_OK, NS_EINVAL (libcrypto refused). */
int ns_sign_hmac_b64(const void *data, size_t len, const char *secret, size_t secret_len,
                     char sig[NS_SIGN_B64_LEN + 1]);

/* Computes the signature cmd should carry for secret, into sig.
 * scratch is reused memory for the content. NS_OK, NS_ENOMEM, NS_EINVAL. */
int ns_sign_compute(const ns_cmd_t *cmd, const char *secret, ns_buf_t *scratch,
                    char sig[NS_SIGN_B64_LEN + 1]);

/* True when `got` (len bytes, from the request) equals `want` (28 chars),
 * compared in constant time over the expected length. */
bool ns_sign_equal(const char *want, const char *got, size_t got_len);

/* A signed copy of a request for a client: ext holds the request's
 * extFields (AccessKey and Signature ones removed) plus AccessKey and
 * Signature. The caller's cmd is not changed; out->cmd borrows cmd's body
 * and strings and out's own storage. Free with ns_signed_free. */
typedef struct {
    ns_cmd_t cmd;
    ns_ext_field_t *ext;
    char sig[NS_SIGN_B64_LEN + 1];
} ns_signed_t;
int ns_sign_request(const ns_cmd_t *cmd, const char *access_key, const char *secret,
                    ns_buf_t *scratch, ns_signed_t *out);
void ns_signed_free(ns_signed_t *s);

#endif
