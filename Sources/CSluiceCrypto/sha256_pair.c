// SHA-256 of two byte ranges at once. On x86-64 CPUs with the SHA extensions (checked once
// with cpuid) the rounds of the two run interleaved: one stream is bound by the latency of
// `sha256rnds2`, two independent ones fill the gaps, about 1.8 times the bytes per second of
// one stream on this project's machines (Benchmarks/sigv4.sh prints it). Elsewhere, and in
// unoptimized builds, where this code runs about ten times slower than OpenSSL, the two are
// hashed one after the other by OpenSSL (`sluice_sha256`). Package.swift compiles this target
// with -O2 in every configuration, so debug builds and the tests run the interleaved code.
#include "CSluiceCrypto.h"
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include <pthread.h>

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t sha256_h0[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

// `blocks` 64-byte blocks of each of `n` streams into their states (a..h), the streams'
// rounds interleaved. `n` is a constant where this is inlined, so everything stays in registers.
__attribute__((target("sha,ssse3,sse4.1"), always_inline))
static inline void compress(int n, uint32_t *state[2], const unsigned char *data[2], size_t blocks) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i abef[2], cdgh[2];
    for (int s = 0; s < n; s++) {
        __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)state[s]), 0xB1);
        __m128i hgfe = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(state[s] + 4)), 0x1B);
        abef[s] = _mm_alignr_epi8(dcba, hgfe, 8);
        cdgh[s] = _mm_blend_epi16(hgfe, dcba, 0xF0);
    }
    for (size_t block = 0; block < blocks; block++) {
        __m128i w[2][4], abef_in[2], cdgh_in[2];
        for (int s = 0; s < n; s++) {
            abef_in[s] = abef[s];
            cdgh_in[s] = cdgh[s];
        }
        // Sixteen groups of four rounds; groups 4... compute their message words from the
        // four before (a ring of four registers per stream).
#pragma GCC unroll 16
        for (int group = 0; group < 16; group++) {
            __m128i k = _mm_loadu_si128((const __m128i *)(sha256_k + 4 * group));
#pragma GCC unroll 2
            for (int s = 0; s < n; s++) {
                if (group < 4) {
                    __m128i raw = _mm_loadu_si128((const __m128i *)(data[s] + 64 * block + 16 * group));
                    w[s][group] = _mm_shuffle_epi8(raw, byte_swap);
                } else {
                    __m128i x = _mm_sha256msg1_epu32(w[s][group & 3], w[s][(group - 3) & 3]);
                    x = _mm_add_epi32(x, _mm_alignr_epi8(w[s][(group - 1) & 3], w[s][(group - 2) & 3], 4));
                    w[s][group & 3] = _mm_sha256msg2_epu32(x, w[s][(group - 1) & 3]);
                }
                __m128i wk = _mm_add_epi32(w[s][group & 3], k);
                cdgh[s] = _mm_sha256rnds2_epu32(cdgh[s], abef[s], wk);
                abef[s] = _mm_sha256rnds2_epu32(abef[s], cdgh[s], _mm_shuffle_epi32(wk, 0x0E));
            }
        }
        for (int s = 0; s < n; s++) {
            abef[s] = _mm_add_epi32(abef[s], abef_in[s]);
            cdgh[s] = _mm_add_epi32(cdgh[s], cdgh_in[s]);
        }
    }
    for (int s = 0; s < n; s++) {
        __m128i feba = _mm_shuffle_epi32(abef[s], 0x1B);
        __m128i dchg = _mm_shuffle_epi32(cdgh[s], 0xB1);
        _mm_storeu_si128((__m128i *)state[s], _mm_blend_epi16(feba, dchg, 0xF0));
        _mm_storeu_si128((__m128i *)(state[s] + 4), _mm_alignr_epi8(dchg, feba, 8));
    }
}

__attribute__((target("sha,ssse3,sse4.1"), noinline))
static void compress_one(uint32_t *state, const unsigned char *data, size_t blocks) {
    uint32_t *states[2] = {state, state};
    const unsigned char *datas[2] = {data, data};
    compress(1, states, datas, blocks);
}

__attribute__((target("sha,ssse3,sse4.1"), noinline))
static void compress_two(uint32_t *state[2], const unsigned char *data[2], size_t blocks) {
    compress(2, state, data, blocks);
}

// What is left of one stream after `done` whole blocks: the other whole blocks, then the
// padding (0x80, zeros, the length in bits big-endian) in one or two blocks.
static void finish(uint32_t state[8], const unsigned char *bytes, size_t count, size_t done, unsigned char *out) {
    size_t whole = count / 64;
    if (whole > done) compress_one(state, bytes + 64 * done, whole - done);
    unsigned char tail[128] = {0};
    size_t rest = count % 64;
    memcpy(tail, bytes + 64 * whole, rest);
    tail[rest] = 0x80;
    size_t tail_blocks = rest < 56 ? 1 : 2;
    uint64_t bits = (uint64_t)count * 8;
    for (int i = 0; i < 8; i++) tail[64 * tail_blocks - 1 - i] = (unsigned char)(bits >> (8 * i));
    compress_one(state, tail, tail_blocks);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(state[i] >> 24);
        out[4 * i + 1] = (unsigned char)(state[i] >> 16);
        out[4 * i + 2] = (unsigned char)(state[i] >> 8);
        out[4 * i + 3] = (unsigned char)state[i];
    }
}

static int sha_extensions;
static pthread_once_t sha_once = PTHREAD_ONCE_INIT;

static void sha_setup(void) {
    __builtin_cpu_init();
    sha_extensions = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3");
}

int sluice_sha256_pair_interleaved(const void *a, size_t a_count, const void *b, size_t b_count, unsigned char *a_out,
                                   unsigned char *b_out) {
    pthread_once(&sha_once, sha_setup);
    if (!sha_extensions) return 0;
    uint32_t a_state[8], b_state[8];
    memcpy(a_state, sha256_h0, sizeof a_state);
    memcpy(b_state, sha256_h0, sizeof b_state);
    size_t common = (a_count < b_count ? a_count : b_count) / 64;
    uint32_t *states[2] = {a_state, b_state};
    const unsigned char *datas[2] = {a, b};
    if (common > 0) compress_two(states, datas, common);
    finish(a_state, a, a_count, common, a_out);
    finish(b_state, b, b_count, common, b_out);
    return 1;
}

int sluice_sha256_pair_is_interleaved(void) {
#if defined(__OPTIMIZE__)
    pthread_once(&sha_once, sha_setup);
    return sha_extensions;
#else
    return 0;
#endif
}

void sluice_sha256_pair(const void *a, size_t a_count, const void *b, size_t b_count, unsigned char *a_out,
                        unsigned char *b_out) {
    if (sluice_sha256_pair_is_interleaved() &&
        sluice_sha256_pair_interleaved(a, a_count, b, b_count, a_out, b_out)) return;
    sluice_sha256(a, a_count, a_out);
    sluice_sha256(b, b_count, b_out);
}

#else

int sluice_sha256_pair_interleaved(const void *a, size_t a_count, const void *b, size_t b_count, unsigned char *a_out,
                                   unsigned char *b_out) {
    (void)a, (void)a_count, (void)b, (void)b_count, (void)a_out, (void)b_out;
    return 0;
}

int sluice_sha256_pair_is_interleaved(void) { return 0; }

void sluice_sha256_pair(const void *a, size_t a_count, const void *b, size_t b_count, unsigned char *a_out,
                        unsigned char *b_out) {
    sluice_sha256(a, a_count, a_out);
    sluice_sha256(b, b_count, b_out);
}

#endif
