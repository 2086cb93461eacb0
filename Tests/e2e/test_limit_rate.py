"""`--limit-rate RATE`: one cap on bytes per second across every connection of a command, on
`upload` (both transports), `tus` and `s3 cp` (parts in parallel share it).

A cap is shown by its lower bound: a body of S bytes under a cap of R bytes per second with a
burst of R/10 cannot take less than S/R - 0.1 s, whatever the machine's load. No upper bound is
asserted (a loaded machine is slow; the subprocess timeout is only a hang guard), and the
measured accuracy lives in the closing notes, not in a timed assertion. Every upload is checked byte for byte at the server."""

import hashlib
import json
import os
import time

import pytest

from conftest import checksum, need_env, receiver, run  # noqa: F401 (fixture)
from test_s3_cli import BUCKET, MIB, env, key, object_sha256, s3, sluice, weed  # noqa: F401 (fixtures)


def lower_bound(size, rate):
    return (size / rate - 0.1) * 0.97


@pytest.mark.parametrize("transport,size,rate", [("curl", 6 * MIB, 2 * MIB), ("urlsession", 16 * MIB, 8 * MIB)])
def test_upload_keeps_to_the_cap(receiver, transport, size, rate):
    spec = "synthetic:%d:11" % size
    started = time.monotonic()
    status, out, err = run("upload", spec, receiver + "/rated", "--limit-rate", "%dK" % (rate // 1024),
                           "--transport", transport, "--progress", "none", timeout=120)
    elapsed = time.monotonic() - started
    assert status == 0, err
    answer = json.loads(out)
    assert (answer["sha256"], answer["bytes"]) == checksum(spec)
    assert elapsed >= lower_bound(size, rate), "%d bytes in %.2f s under a cap of %d B/s" % (size, elapsed, rate)


def test_tus_keeps_to_the_cap():
    endpoint = need_env("SLUICE_TUS_URL")
    store = need_env("SLUICE_TUS_STORE")
    size, rate = 4 * MIB, 2 * MIB
    spec = "synthetic:%d:12" % size
    started = time.monotonic()
    status, out, err = run("tus", spec, endpoint, "--chunk-size", "1MiB", "--limit-rate", "2M", "--progress", "none",
                           "--state", os.path.join(os.environ.get("TMPDIR", "/tmp"), "rated-tus"), timeout=120)
    elapsed = time.monotonic() - started
    assert status == 0, err
    stored = os.path.join(store, out.decode().strip().rstrip("/").split("/")[-1])
    with open(stored, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == checksum(spec)[0]
    assert elapsed >= lower_bound(size, rate), "%.2f s" % elapsed


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
def test_s3_parts_share_one_cap(s3, env, tmp_path, transport):
    """Four parts in flight draw from one cap: 24 MiB at 6 MiB/s takes about 4 s, where four
    parts each capped on their own would take 1 s. On URLSession the parts go as sized bodies
    (data with Content-Length), drawn from the cap before each is handed over (before: uncapped)."""
    size, rate = 24 * MIB, 6 * MIB
    path = tmp_path / "rated.bin"
    path.write_bytes(os.urandom(size))
    name = key()
    started = time.monotonic()
    status, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                              "--concurrency", "4", "--limit-rate", "6M", "--progress", "none",
                              "--transport", transport, timeout=120)
    elapsed = time.monotonic() - started
    assert status == 0, err
    assert object_sha256(s3, name) == (hashlib.sha256(path.read_bytes()).hexdigest(), size)
    assert elapsed >= lower_bound(size, rate), "%.2f s" % elapsed


@pytest.mark.parametrize("value", ["0", "-1", "2T", "1e30", "abc", "", "10 M"])
def test_an_absurd_rate_is_a_usage_error(receiver, value):
    status, out, err = run("upload", "synthetic:1KiB", receiver + "/x", "--limit-rate", value)
    assert status == 2
    assert err.count("\n") == 1 and "--limit-rate" in err, err
