"""Independent checksums for Sluice's tests: CRC64NVME (botocore's CrtCrc64NvmeChecksum, over
the `awscrt` package's C implementation), CRC32C (the `crc32c` package), CRC32 (zlib), SHA-1
and SHA-256 (hashlib).

    python3 checksum_peer.py INPUT.json   ->   [{"crc64nvme": int, "crc32c": int, "crc32": int,
                                                 "sha1": hex, "sha256": hex}, ...]

INPUT is a JSON list of base64 blobs, or {"file": PATH, "ranges": [[OFFSET, LENGTH], ...]}
for ranges of one file.
"""
import base64
import hashlib
import json
import sys
import zlib

import crc32c
from botocore.httpchecksum import CrtCrc64NvmeChecksum


def checksums(data):
    crc64 = CrtCrc64NvmeChecksum()
    crc64.update(data)
    return {
        "crc64nvme": int.from_bytes(crc64.digest(), "big"),
        "crc32c": crc32c.crc32c(data),
        "crc32": zlib.crc32(data) & 0xFFFFFFFF,
        "sha1": hashlib.sha1(data).hexdigest(),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def main():
    with open(sys.argv[1]) as f:
        request = json.load(f)
    if isinstance(request, dict):
        with open(request["file"], "rb") as f:
            whole = f.read()
        blobs = [whole[offset:offset + length] for offset, length in request["ranges"]]
    else:
        blobs = [base64.b64decode(blob) for blob in request]
    json.dump([checksums(data) for data in blobs], sys.stdout)


if __name__ == "__main__":
    main()
