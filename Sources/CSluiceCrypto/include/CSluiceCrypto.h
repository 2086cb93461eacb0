#ifndef CSLUICE_CRYPTO_H
#define CSLUICE_CRYPTO_H
#include <stddef.h>
#include <stdint.h>

/// An incremental digest over OpenSSL's EVP interface; NULL on allocation failure.
/// `algorithm` is "SHA256" or "SHA1".
void *sluice_digest_new(const char *algorithm);
/// Feeds bytes; returns 1 on success.
int sluice_digest_update(void *ctx, const void *bytes, size_t count);
/// Writes the digest into `out` (at least 64 bytes); returns its length, or 0 on failure.
int sluice_digest_final(void *ctx, unsigned char *out);
void sluice_digest_free(void *ctx);

/// SHA-256 of `bytes` into `out` (32 bytes), one shot; returns 32, or 0 on failure.
int sluice_sha256(const void *bytes, size_t count, unsigned char *out);
/// SHA-256 of two byte ranges into `a_out` and `b_out` (32 bytes each): their rounds
/// interleaved with the x86-64 SHA extensions in optimized builds, else one after the other.
void sluice_sha256_pair(const void *a, size_t a_count, const void *b, size_t b_count, unsigned char *a_out,
                        unsigned char *b_out);
/// 1 when `sluice_sha256_pair` interleaves the two (the CPU has the SHA extensions, the build
/// is optimized).
int sluice_sha256_pair_is_interleaved(void);
/// The interleaved hashing whatever the build (for tests); returns 0 and writes nothing when
/// the CPU lacks the SHA extensions.
int sluice_sha256_pair_interleaved(const void *a, size_t a_count, const void *b, size_t b_count, unsigned char *a_out,
                                   unsigned char *b_out);
/// HMAC-SHA256 of `bytes` under `key` into `out` (32 bytes); returns 32, or 0 on failure.
int sluice_hmac_sha256(const void *key, size_t key_count, const void *bytes, size_t count, unsigned char *out);

/// CRC-32C (Castagnoli) of `bytes`, continuing from `crc` (0 to start); the SSE4.2
/// instruction where the CPU has it, slice-by-8 tables otherwise.
uint32_t sluice_crc32c(uint32_t crc, const void *bytes, size_t count);
/// CRC-32C by tables only (for cross-checks).
uint32_t sluice_crc32c_software(uint32_t crc, const void *bytes, size_t count);
/// 1 when `sluice_crc32c` uses the CPU instruction.
int sluice_crc32c_is_hardware(void);
/// CRC-32 (IEEE 802.3, as zlib's crc32) of `bytes`, continuing from `crc` (0 to start).
uint32_t sluice_crc32(uint32_t crc, const void *bytes, size_t count);
/// The CRC of A||B from crc(A), crc(B) and the length of B.
uint32_t sluice_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
uint32_t sluice_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/// CRC-64/NVME (S3's CRC64NVME) of `bytes`, continuing from `crc` (0 to start): carry-less
/// multiply folding (PCLMULQDQ on x86-64, PMULL on arm64) where the CPU has it, slice-by-8
/// tables otherwise.
uint64_t sluice_crc64nvme(uint64_t crc, const void *bytes, size_t count);
/// CRC-64/NVME by tables only (for cross-checks).
uint64_t sluice_crc64nvme_software(uint64_t crc, const void *bytes, size_t count);
/// 1 when `sluice_crc64nvme` folds with the CPU's carry-less multiply.
int sluice_crc64nvme_is_hardware(void);
/// The CRC-64/NVME of A||B from crc(A), crc(B) and the length of B.
uint64_t sluice_crc64nvme_combine(uint64_t crc1, uint64_t crc2, uint64_t len2);

/// `pread` of up to `count` bytes at `offset` that never waits on the disk (`preadv2` with
/// `RWF_NOWAIT`): the bytes the page cache holds, or -1 with errno EAGAIN where the read would
/// wait (EOPNOTSUPP where the file system or the kernel cannot say, and off Linux).
long sluice_pread_nowait(int fd, void *buffer, size_t count, int64_t offset);
#endif
