// CRC-64/NVME (the CRC64NVME of S3 and of NVMe: polynomial 0xad93d23594c93659, reflected, all
// ones in and out). Slice-by-8 tables everywhere; on x86-64 CPUs with PCLMULQDQ (checked once
// with cpuid) and on arm64 with PMULL, carry-less multiply folding: four 128-bit lanes fold
// 64 bytes a step, then one lane, then the tables finish the last 16 bytes and the tail. The
// fold constants (x^n mod P, bit-reflected) are computed at setup, not copied in.
//
// Why the constants are x^(d+63) and x^(d-1): in the reflected order a 16-byte block A is
// A_hi * x^64 + A_lo with A_hi its first 8 bytes (the low lane of a little-endian load). Moving
// A forward by d bits is A * x^d = A_hi * x^(d+64) + A_lo * x^d (mod P); and a carry-less
// product of two reflected 64-bit values, read as a reflected 128-bit value, is the product
// times x, so each constant carries one x less.
#include "CSluiceCrypto.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define CRC64NVME_POLY 0x9a6c9329ac4bc9b5ull  // 0xad93d23594c93659 reflected

static uint64_t crc64_table[8][256];
// Fold constants: [0] x^(512+63), [1] x^(512-1) (four lanes apart), [2] x^(128+63), [3] x^(128-1),
// [4] x^(384+63), [5] x^(384-1), [6] x^(256+63), [7] x^(256-1), each mod P, reflected.
static uint64_t crc64_fold[8];

// x^n mod P, bit-reflected (bit 63 is x^0).
static uint64_t xpow_reflected(unsigned n) {
    uint64_t value = 1ull << 63;  // x^0
    while (n--) value = value & 1 ? (value >> 1) ^ CRC64NVME_POLY : value >> 1;
    return value;
}

static uint64_t slice8_64(uint64_t crc, const unsigned char *next, size_t len) {
    while (len && ((uintptr_t)next & 7)) {
        crc = crc64_table[0][(crc ^ *next++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        word ^= crc;
        crc = crc64_table[7][word & 0xff] ^ crc64_table[6][(word >> 8) & 0xff] ^ crc64_table[5][(word >> 16) & 0xff] ^
              crc64_table[4][(word >> 24) & 0xff] ^ crc64_table[3][(word >> 32) & 0xff] ^
              crc64_table[2][(word >> 40) & 0xff] ^ crc64_table[1][(word >> 48) & 0xff] ^ crc64_table[0][word >> 56];
        next += 8;
        len -= 8;
    }
    while (len--) crc = crc64_table[0][(crc ^ *next++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("pclmul,sse4.1"), always_inline))
static inline __m128i fold(__m128i lane, __m128i constants) {
    // low lane (A_hi) times constants' low (x^(d+63)), high lane (A_lo) times its high (x^(d-1)).
    return _mm_xor_si128(_mm_clmulepi64_si128(lane, constants, 0x00), _mm_clmulepi64_si128(lane, constants, 0x11));
}

// At least 64 bytes: the raw register `crc` (pre-inverted) continued over `next`.
__attribute__((target("pclmul,sse4.1")))
static uint64_t crc64_clmul(uint64_t crc, const unsigned char *next, size_t len) {
    __m128i by4 = _mm_set_epi64x((long long)crc64_fold[1], (long long)crc64_fold[0]);
    __m128i by1 = _mm_set_epi64x((long long)crc64_fold[3], (long long)crc64_fold[2]);
    __m128i by3 = _mm_set_epi64x((long long)crc64_fold[5], (long long)crc64_fold[4]);
    __m128i by2 = _mm_set_epi64x((long long)crc64_fold[7], (long long)crc64_fold[6]);
    __m128i x0 = _mm_loadu_si128((const __m128i *)next);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(next + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(next + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(next + 48));
    // The register enters as the first 8 bytes of the message, xored in.
    x0 = _mm_xor_si128(x0, _mm_cvtsi64_si128((long long)crc));
    next += 64;
    len -= 64;
    while (len >= 64) {
        x0 = _mm_xor_si128(fold(x0, by4), _mm_loadu_si128((const __m128i *)next));
        x1 = _mm_xor_si128(fold(x1, by4), _mm_loadu_si128((const __m128i *)(next + 16)));
        x2 = _mm_xor_si128(fold(x2, by4), _mm_loadu_si128((const __m128i *)(next + 32)));
        x3 = _mm_xor_si128(fold(x3, by4), _mm_loadu_si128((const __m128i *)(next + 48)));
        next += 64;
        len -= 64;
    }
    // Four lanes into one: each moved forward to where the last one ends.
    __m128i x = _mm_xor_si128(_mm_xor_si128(fold(x0, by3), fold(x1, by2)), _mm_xor_si128(fold(x2, by1), x3));
    while (len >= 16) {
        x = _mm_xor_si128(fold(x, by1), _mm_loadu_si128((const __m128i *)next));
        next += 16;
        len -= 16;
    }
    // What is left is congruent to the message so far: 16 bytes the tables finish from 0.
    unsigned char rest[16];
    _mm_storeu_si128((__m128i *)rest, x);
    return slice8_64(slice8_64(0, rest, 16), next, len);
}
#endif

#if defined(__aarch64__) && defined(__ARM_FEATURE_AES)
#include <arm_neon.h>

static inline uint64x2_t fold_pmull(uint64x2_t lane, uint64_t low, uint64_t high) {
    poly128_t a = vmull_p64((poly64_t)vgetq_lane_u64(lane, 0), (poly64_t)low);
    poly128_t b = vmull_p64((poly64_t)vgetq_lane_u64(lane, 1), (poly64_t)high);
    return veorq_u64(vreinterpretq_u64_p128(a), vreinterpretq_u64_p128(b));
}

static uint64_t crc64_clmul(uint64_t crc, const unsigned char *next, size_t len) {
    const uint64_t *k = crc64_fold;
    uint64x2_t x0 = vld1q_u64((const uint64_t *)next), x1 = vld1q_u64((const uint64_t *)(next + 16));
    uint64x2_t x2 = vld1q_u64((const uint64_t *)(next + 32)), x3 = vld1q_u64((const uint64_t *)(next + 48));
    x0 = veorq_u64(x0, vcombine_u64(vcreate_u64(crc), vcreate_u64(0)));
    next += 64;
    len -= 64;
    while (len >= 64) {
        x0 = veorq_u64(fold_pmull(x0, k[0], k[1]), vld1q_u64((const uint64_t *)next));
        x1 = veorq_u64(fold_pmull(x1, k[0], k[1]), vld1q_u64((const uint64_t *)(next + 16)));
        x2 = veorq_u64(fold_pmull(x2, k[0], k[1]), vld1q_u64((const uint64_t *)(next + 32)));
        x3 = veorq_u64(fold_pmull(x3, k[0], k[1]), vld1q_u64((const uint64_t *)(next + 48)));
        next += 64;
        len -= 64;
    }
    uint64x2_t x = veorq_u64(veorq_u64(fold_pmull(x0, k[4], k[5]), fold_pmull(x1, k[6], k[7])),
                             veorq_u64(fold_pmull(x2, k[2], k[3]), x3));
    while (len >= 16) {
        x = veorq_u64(fold_pmull(x, k[2], k[3]), vld1q_u64((const uint64_t *)next));
        next += 16;
        len -= 16;
    }
    unsigned char rest[16];
    vst1q_u64((uint64_t *)rest, x);
    return slice8_64(slice8_64(0, rest, 16), next, len);
}
#endif

// 0: not yet set up, 1: tables only, 2: carry-less multiply.
static int crc64_mode;
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_setup(void) {
    for (uint64_t n = 0; n < 256; n++) {
        uint64_t crc = n;
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ CRC64NVME_POLY : crc >> 1;
        crc64_table[0][n] = crc;
    }
    for (int n = 0; n < 256; n++) {
        uint64_t crc = crc64_table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = crc64_table[0][crc & 0xff] ^ (crc >> 8);
            crc64_table[k][n] = crc;
        }
    }
    const unsigned distances[4] = {512, 128, 384, 256};
    for (int n = 0; n < 4; n++) {
        crc64_fold[2 * n] = xpow_reflected(distances[n] + 63);
        crc64_fold[2 * n + 1] = xpow_reflected(distances[n] - 1);
    }
    int mode = 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) mode = 2;
#elif defined(__aarch64__) && defined(__ARM_FEATURE_AES)
    mode = 2;
#endif
    __atomic_store_n(&crc64_mode, mode, __ATOMIC_RELEASE);
}

static inline int crc64_ready(void) {
    int mode = __atomic_load_n(&crc64_mode, __ATOMIC_ACQUIRE);
    if (mode == 0) {
        pthread_once(&crc64_once, crc64_setup);
        mode = __atomic_load_n(&crc64_mode, __ATOMIC_ACQUIRE);
    }
    return mode;
}

uint64_t sluice_crc64nvme(uint64_t crc, const void *bytes, size_t count) {
    int mode = crc64_ready();
    if (count == 0) return crc;
    uint64_t reg = ~crc;
#if defined(__x86_64__) || (defined(__aarch64__) && defined(__ARM_FEATURE_AES))
    if (mode == 2 && count >= 64) return ~crc64_clmul(reg, bytes, count);
#else
    (void)mode;
#endif
    return ~slice8_64(reg, bytes, count);
}

uint64_t sluice_crc64nvme_software(uint64_t crc, const void *bytes, size_t count) {
    crc64_ready();
    if (count == 0) return crc;
    return ~slice8_64(~crc, bytes, count);
}

int sluice_crc64nvme_is_hardware(void) { return crc64_ready() == 2; }

// a * b mod P, both reflected (as zlib's multmodp).
static uint64_t multmodp64(uint64_t a, uint64_t b) {
    uint64_t m = 1ull << 63, product = 0;
    for (;;) {
        if (a & m) {
            product ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ CRC64NVME_POLY : b >> 1;
    }
    return product;
}

uint64_t sluice_crc64nvme_combine(uint64_t crc1, uint64_t crc2, uint64_t len2) {
    // crc1 moved past len2 bytes: times x^(8 * len2) mod P, by squaring.
    uint64_t power = xpow_reflected(8), shift = 1ull << 63;
    for (; len2; len2 >>= 1) {
        if (len2 & 1) shift = multmodp64(shift, power);
        power = multmodp64(power, power);
    }
    return multmodp64(shift, crc1) ^ crc2;
}
