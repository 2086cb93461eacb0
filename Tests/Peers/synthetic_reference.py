#!/usr/bin/env python3
"""An independent reference for `synthetic:SIZE[:SEED]` (DESIGN.md, "The synthetic source"),
written from the design text, sharing no code with Sluice: byte i is byte i mod 8 of the
little-endian 64-bit word w(i div 8), where w(k) is the splitmix64 output for
z = SEED + (k+1) * 0x9E3779B97F4A7C15 (mod 2^64).

    python3 synthetic_reference.py SIZE [SEED]   -> "<sha256 hex>  <size>" (as `sluice checksum`)
"""

import hashlib
import struct
import sys

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
# DESIGN.md's check: SEED 0 starts with these bytes.
CHECK = bytes.fromhex("afcd1d7b39a820e2f465b9a16a9e786e")


def word(seed, k):
    z = (seed + (k + 1) * GAMMA) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def blocks(size, seed=0, words_per_block=8192):
    """The stream's bytes, in blocks of up to 64 KiB."""
    k = 0
    remaining = size
    while remaining > 0:
        count = min(words_per_block, (remaining + 7) // 8)
        data = struct.pack("<%dQ" % count, *(word(seed, k + i) for i in range(count)))
        k += count
        if len(data) > remaining:
            data = data[:remaining]
        remaining -= len(data)
        yield data


def sha256(size, seed=0):
    digest = hashlib.sha256()
    for block in blocks(size, seed):
        digest.update(block)
    return digest.hexdigest()


def prefix(size, seed=0):
    return b"".join(blocks(size, seed))


assert prefix(16, 0) == CHECK, "the reference does not reproduce DESIGN.md's check bytes"


if __name__ == "__main__":
    size = int(sys.argv[1])
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print("%s  %d" % (sha256(size, seed), size))
