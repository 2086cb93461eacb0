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
