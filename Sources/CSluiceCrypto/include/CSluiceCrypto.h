#ifndef CSLUICE_CRYPTO_H
#define CSLUICE_CRYPTO_H
#include <stddef.h>

/// An incremental digest over OpenSSL's EVP interface; NULL on allocation failure.
/// `algorithm` is "SHA256" or "SHA1".
void *sluice_digest_new(const char *algorithm);
/// Feeds bytes; returns 1 on success.
int sluice_digest_update(void *ctx, const void *bytes, size_t count);
/// Writes the digest into `out` (at least 64 bytes); returns its length, or 0 on failure.
int sluice_digest_final(void *ctx, unsigned char *out);
void sluice_digest_free(void *ctx);

#endif
