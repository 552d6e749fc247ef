/* seal.h - secrets encrypted at rest (AES-256-GCM, libcrypto).
 *
 * RocketMQ's HmacSHA1 signatures can only be checked with the secret
 * itself, so a user's secret cannot be stored hashed. With authKeyFile set,
 * the store keeps it sealed under a 256-bit key that lives in a file
 * OUTSIDE the store: a copy of the data directory, a backup or a dump then
 * does not reveal it, unless the key file is copied too. The process that
 * verifies signatures must hold the key, so it protects nothing against
 * someone who can read namesrvd's memory or its key file.
 *
 * A sealed secret is the text "enc1:" + Base64(nonce[12] || ciphertext ||
 * tag[16]), with the access key as additional data (a sealed secret moved
 * to another user does not open). */
#ifndef NS_SEAL_H
#define NS_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_SEAL_KEY_BYTES 32
#define NS_SEAL_PREFIX "enc1:"

/* Reads a key file: 64 hex digits (surrounding blanks and newlines
 * ignored). NS_OK; NS_EIO (cannot read), NS_EINVAL (not 64 hex digits),
 * with why in err. */
int ns_seal_key_load(const char *path, uint8_t key[NS_SEAL_KEY_BYTES], char *err, size_t errlen);
/* True when s is a sealed secret (starts with NS_SEAL_PREFIX). */
bool ns_sealed(const char *s);
/* Seals plain for access key ak; *out is a heap string the caller frees.
 * NS_OK, NS_ENOMEM, NS_EINVAL (libcrypto failed). */
int ns_seal(const uint8_t key[NS_SEAL_KEY_BYTES], const char *ak, const char *plain, char **out);
/* Opens a sealed secret of ak; *out is a heap string the caller wipes and
 * frees. NS_OK, NS_EINVAL (not sealed, tampered, wrong key or user),
 * NS_ENOMEM. */
int ns_unseal(const uint8_t key[NS_SEAL_KEY_BYTES], const char *ak, const char *sealed, char **out);

#endif
