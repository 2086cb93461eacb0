"""`synthetic:SIZE[:SEED]` checked against an independent reference (Tests/Peers/
synthetic_reference.py, splitmix64 in Python from DESIGN.md's text), not against Sluice itself:
what nginx stored from a PUT is hashed with hashlib and compared with the reference's hash of
the whole stream; `sluice checksum` is compared with it too. Odd sizes (not a multiple of 8),
seed 0, a large seed and the largest seed."""

import os
import sys

import pytest

from conftest import REPO, run, sha256_file

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))

import synthetic_reference  # noqa: E402

CASES = [
    (1, 0),
    (7, 1),
    (8, 2),
    (9, 3),
    (65_537, 0),
    (1_000_003, 12345),
    (3 * (1 << 20) + 5, 18446744073709551615),
]


def test_reference_reproduces_the_design_check_bytes():
    assert synthetic_reference.prefix(16, 0) == bytes.fromhex("afcd1d7b39a820e2f465b9a16a9e786e")
    # The stream does not depend on how it is cut into blocks.
    whole = synthetic_reference.prefix(1003, 7)
    pieces = b"".join(synthetic_reference.blocks(1003, 7, words_per_block=3))
    assert whole == pieces and len(whole) == 1003


@pytest.mark.parametrize("size, seed", CASES, ids=["%d:%d" % case for case in CASES])
def test_checksum_matches_the_reference(size, seed):
    status, out, err = run("checksum", "synthetic:%d:%d" % (size, seed))
    assert status == 0, err
    assert out.decode().split() == [synthetic_reference.sha256(size, seed), str(size)]


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
@pytest.mark.parametrize("size, seed", CASES, ids=["%d:%d" % case for case in CASES])
def test_put_to_nginx_stores_the_reference_stream(nginx, transport, size, seed):
    url, root = nginx
    name = "dav/synthetic-ref/%s-%d-%d.bin" % (transport, size, seed)
    status, _, err = run("upload", "synthetic:%d:%d" % (size, seed), "%s/%s" % (url, name), "-X", "PUT",
                         "--transport", transport, "--progress", "none")
    assert status == 0, err
    stored = os.path.join(root, name)
    assert os.path.getsize(stored) == size
    assert sha256_file(stored) == synthetic_reference.sha256(size, seed)
