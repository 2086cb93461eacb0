#include "CSluiceCrypto.h"
#include <openssl/evp.h>

void *sluice_digest_new(const char *algorithm) {
    const EVP_MD *md = EVP_get_digestbyname(algorithm);
    if (md == NULL) return NULL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) return NULL;
    if (EVP_DigestInit_ex(ctx, md, NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int sluice_digest_update(void *ctx, const void *bytes, size_t count) {
    return EVP_DigestUpdate((EVP_MD_CTX *)ctx, bytes, count);
}

int sluice_digest_final(void *ctx, unsigned char *out) {
    unsigned int length = 0;
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)ctx, out, &length) != 1) return 0;
    return (int)length;
}

void sluice_digest_free(void *ctx) { EVP_MD_CTX_free((EVP_MD_CTX *)ctx); }
