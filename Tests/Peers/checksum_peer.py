"""Independent checksums for Sluice's tests: CRC32C (the `crc32c` package), CRC32 (zlib) and
SHA-256 (hashlib) of each base64 blob in a JSON list.

    python3 checksum_peer.py INPUT.json   ->   [{"crc32c": int, "crc32": int, "sha256": hex}, ...]
"""
import base64
import hashlib
import json
import sys
import zlib

import crc32c


def main():
    with open(sys.argv[1]) as f:
        blobs = json.load(f)
    out = []
    for blob in blobs:
        data = base64.b64decode(blob)
        out.append({
            "crc32c": crc32c.crc32c(data),
            "crc32": zlib.crc32(data) & 0xFFFFFFFF,
            "sha256": hashlib.sha256(data).hexdigest(),
        })
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
