#include "CSluiceCrypto.h"
#include <openssl/evp.h>
#include <openssl/hmac.h>

int sluice_hmac_sha256(const void *key, size_t key_count, const void *bytes, size_t count, unsigned char *out) {
    unsigned int length = 0;
    static const unsigned char empty = 0;
    if (HMAC(EVP_sha256(), key_count ? key : &empty, (int)key_count,
             count ? (const unsigned char *)bytes : &empty, count, out, &length) == NULL) return 0;
    return (int)length;
}

#include <pthread.h>

// SHA-256 fetched once: OpenSSL 3 looks a digest up on every EVP_get_digestbyname / implicit
// fetch, which costs more than hashing a short string.
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static void sha256_fetch(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

int sluice_sha256(const void *bytes, size_t count, unsigned char *out) {
    static const unsigned char empty = 0;
    unsigned int length = 0;
    pthread_once(&sha256_once, sha256_fetch);
    if (sha256_md == NULL) return 0;
    if (EVP_Digest(count ? bytes : &empty, count, out, &length, sha256_md, NULL) != 1) return 0;
    return (int)length;
}
