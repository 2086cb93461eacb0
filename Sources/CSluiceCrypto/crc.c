// CRC-32C (Castagnoli) and CRC-32 (IEEE, as zlib): table-driven slice-by-8 everywhere, and for
// CRC-32C the SSE4.2 `crc32` instruction on x86-64 CPUs that have it (checked once with cpuid),
// run as three interleaved streams whose CRCs are combined by zero-shift tables (after Mark
// Adler's crc32c.c), so the instruction's 3-cycle latency does not bound the speed.
#include "CSluiceCrypto.h"
#include <stdint.h>
#include <string.h>

#define CRC32C_POLY 0x82f63b78u
#define CRC32_POLY 0xedb88320u

static uint32_t crc32c_table[8][256];
static uint32_t crc32_table[8][256];

static void make_table(uint32_t table[8][256], uint32_t poly) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ poly : crc >> 1;
        table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = table[0][crc & 0xff] ^ (crc >> 8);
            table[k][n] = crc;
        }
    }
}

// Slice-by-8 on the pre-inverted register `crc` (little-endian loads).
static uint32_t slice8(uint32_t table[8][256], uint32_t crc, const unsigned char *next, size_t len) {
    while (len && ((uintptr_t)next & 7)) {
        crc = table[0][(crc ^ *next++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        word ^= crc;
        crc = table[7][word & 0xff] ^ table[6][(word >> 8) & 0xff] ^ table[5][(word >> 16) & 0xff] ^
              table[4][(word >> 24) & 0xff] ^ table[3][(word >> 32) & 0xff] ^ table[2][(word >> 40) & 0xff] ^
              table[1][(word >> 48) & 0xff] ^ table[0][word >> 56];
        next += 8;
        len -= 8;
    }
    while (len--) crc = table[0][(crc ^ *next++) & 0xff] ^ (crc >> 8);
    return crc;
}

// --- GF(2) operators that append zeros to a CRC-32C register (for combining streams) ---

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1) sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(mat, mat[n]);
}

// The operator that appends `len` zero bytes (`len` a power of two) for polynomial `poly`.
static void zeros_op(uint32_t *even, size_t len, uint32_t poly) {
    uint32_t odd[32], row = 1;
    odd[0] = poly;
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd); // 2 zero bits
    gf2_square(odd, even); // 4 zero bits
    // Each square doubles: 8 bits (1 byte) next, and so on.
    do {
        gf2_square(even, odd);
        len >>= 1;
        if (len == 0) return;
        gf2_square(odd, even);
        len >>= 1;
    } while (len);
    memcpy(even, odd, sizeof odd);
}

static void zeros_table(uint32_t zeros[4][256], size_t len, uint32_t poly) {
    uint32_t op[32];
    zeros_op(op, len, poly);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_times(op, n);
        zeros[1][n] = gf2_times(op, n << 8);
        zeros[2][n] = gf2_times(op, n << 16);
        zeros[3][n] = gf2_times(op, n << 24);
    }
}

static inline uint32_t zeros_shift(uint32_t zeros[4][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
static uint32_t crc32c_long[4][256];
static uint32_t crc32c_short[4][256];

#if defined(__x86_64__)
#include <nmmintrin.h>

/* Three interleaved streams of `block` bytes each, combined by shifting through `zeros`:
 * consumes whole groups of 3 * block bytes from *next and *len. */
__attribute__((target("sse4.2"), always_inline))
static inline uint64_t crc32c_three_streams(uint64_t crc0, const unsigned char **next, size_t *len,
                                            size_t block, uint32_t zeros[4][256]) {
    const unsigned char *p = *next;
    while (*len >= block * 3) {
        uint64_t crc1 = 0, crc2 = 0;
        const unsigned char *end = p + block;
        do {
            uint64_t a, b, c;
            memcpy(&a, p, 8);
            memcpy(&b, p + block, 8);
            memcpy(&c, p + 2 * block, 8);
            crc0 = _mm_crc32_u64(crc0, a);
            crc1 = _mm_crc32_u64(crc1, b);
            crc2 = _mm_crc32_u64(crc2, c);
            p += 8;
        } while (p < end);
        crc0 = zeros_shift(zeros, (uint32_t)crc0) ^ (uint32_t)crc1;
        crc0 = zeros_shift(zeros, (uint32_t)crc0) ^ (uint32_t)crc2;
        p += block * 2;
        *len -= block * 3;
    }
    *next = p;
    return crc0;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *next, size_t len) {
    uint64_t crc0 = crc;
    while (len && ((uintptr_t)next & 7)) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    crc0 = crc32c_three_streams(crc0, &next, &len, LONG_BLOCK, crc32c_long);
    crc0 = crc32c_three_streams(crc0, &next, &len, SHORT_BLOCK, crc32c_short);
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        crc0 = _mm_crc32_u64(crc0, word);
        next += 8;
        len -= 8;
    }
    while (len--) crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
    return (uint32_t)crc0;
}
#endif

// 0: not yet checked, 1: tables only, 2: hardware.
static int crc_mode;

static void crc_setup(void) {
    make_table(crc32c_table, CRC32C_POLY);
    make_table(crc32_table, CRC32_POLY);
    zeros_table(crc32c_long, LONG_BLOCK, CRC32C_POLY);
    zeros_table(crc32c_short, SHORT_BLOCK, CRC32C_POLY);
    int mode = 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) mode = 2;
#endif
    __atomic_store_n(&crc_mode, mode, __ATOMIC_RELEASE);
}

#include <pthread.h>
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static inline int crc_ready(void) {
    int mode = __atomic_load_n(&crc_mode, __ATOMIC_ACQUIRE);
    if (mode == 0) {
        pthread_once(&crc_once, crc_setup);
        mode = __atomic_load_n(&crc_mode, __ATOMIC_ACQUIRE);
    }
    return mode;
}

uint32_t sluice_crc32c(uint32_t crc, const void *bytes, size_t count) {
    int mode = crc_ready();
    uint32_t reg = crc ^ 0xffffffffu;
    if (count == 0) return crc;
#if defined(__x86_64__)
    if (mode == 2) return crc32c_hardware(reg, bytes, count) ^ 0xffffffffu;
#else
    (void)mode;
#endif
    return slice8(crc32c_table, reg, bytes, count) ^ 0xffffffffu;
}

uint32_t sluice_crc32c_software(uint32_t crc, const void *bytes, size_t count) {
    crc_ready();
    if (count == 0) return crc;
    return slice8(crc32c_table, crc ^ 0xffffffffu, bytes, count) ^ 0xffffffffu;
}

int sluice_crc32c_is_hardware(void) { return crc_ready() == 2; }

uint32_t sluice_crc32(uint32_t crc, const void *bytes, size_t count) {
    crc_ready();
    if (count == 0) return crc;
    return slice8(crc32_table, crc ^ 0xffffffffu, bytes, count) ^ 0xffffffffu;
}

// crc(A || B) from crc(A), crc(B) and |B|: shift crc(A) by |B| zero bytes, one
// power-of-two operator per set bit of the length (as zlib's crc32_combine).
static uint32_t combine(uint32_t crc1, uint32_t crc2, uint64_t len2, uint32_t poly) {
    if (len2 == 0) return crc1;
    uint32_t op[32];
    for (int bit = 0; len2 >> bit; bit++) {
        if ((len2 >> bit) & 1) {
            zeros_op(op, (size_t)1 << bit, poly);
            crc1 = gf2_times(op, crc1);
        }
    }
    return crc1 ^ crc2;
}

uint32_t sluice_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) { return combine(crc1, crc2, len2, CRC32C_POLY); }
uint32_t sluice_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) { return combine(crc1, crc2, len2, CRC32_POLY); }
