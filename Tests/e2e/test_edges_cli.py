"""The CLI at its edges: credentials across a redirect to another origin, a response larger
than any in-memory cap streamed whole to stdout, stdout write errors, absurd option values,
--help, --version and the documented exit codes (2 usage, 1 failure, 130 SIGINT)."""

import hashlib
import json
import os
import random
import subprocess
import sys
import urllib.parse

import pytest

from conftest import REPO, run, sluice_bin, stop

TRANSPORTS = ["curl", "urlsession"]
CREDENTIAL_HEADERS = ["Authorization: Bearer X", "Cookie: s=X", "Proxy-Authorization: Basic cHJveHk6c2VjcmV0"]


def start_sink():
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "Tests", "Peers", "curl_sink.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = int(proc.stdout.readline())
    return proc, "http://127.0.0.1:%d" % port


@pytest.fixture(scope="module")
def sinks():
    """Two curl_sink.py servers: two origins (same host, different ports)."""
    first, first_url = start_sink()
    second, second_url = start_sink()
    try:
        yield first_url, second_url
    finally:
        stop(first)
        stop(second)


def redirect(origin, target):
    return origin + "/redirect307?to=" + urllib.parse.quote(target, safe="")


def header_args(headers):
    args = []
    for header in headers:
        args += ["-H", header]
    return args


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_credentials_do_not_follow_a_redirect_to_another_origin(sinks, transport):
    first, second = sinks
    url = redirect(first, second + "/sink/other")
    status, out, err = run("upload", "synthetic:100003", url, "-X", "PUT", "--transport", transport,
                           *header_args(CREDENTIAL_HEADERS + ["X-Other: kept"]), timeout=60)
    assert status == 0, err
    seen = json.loads(out.decode())
    assert seen["path"] == "/sink/other" and seen["count"] == 100003
    assert "authorization" not in seen["headers"] and "cookie" not in seen["headers"]
    assert "proxy-authorization" not in seen["headers"]
    assert seen["headers"]["x-other"] == "kept"
    # Same origin: kept.
    status, out, err = run("upload", "synthetic:100003", redirect(first, first + "/sink/same"), "--transport", transport,
                           *header_args(CREDENTIAL_HEADERS), timeout=60)
    assert status == 0, err
    assert json.loads(out.decode())["headers"]["authorization"] == "Bearer X"
    # --location-trusted: the user opts in.
    status, out, err = run("upload", "synthetic:100003", url, "--location-trusted", "--transport", transport,
                           *header_args(CREDENTIAL_HEADERS), timeout=60)
    assert status == 0, err
    seen = json.loads(out.decode())["headers"]
    assert seen["authorization"] == "Bearer X" and seen["cookie"] == "s=X"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_user_credentials_do_not_answer_another_origins_challenge(sinks, transport):
    first, second = sinks
    url = redirect(first, second + "/auth")
    status, out, err = run("upload", "synthetic:1000", url, "-u", "user:secret", "--transport", transport, timeout=60)
    assert status == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "401" in lines[0], err
    status, out, err = run("upload", "synthetic:1000", url, "-u", "user:secret", "--location-trusted",
                           "--transport", transport, timeout=60)
    assert status == 0, err
    assert json.loads(out.decode())["headers"]["authorization"].startswith("Basic ")


def expected_large(count, seed):
    """The body curl_sink.py's /large sends, hashed here independently of sluice."""
    generator = random.Random(seed)
    digest = hashlib.sha256()
    remaining = count
    while remaining:
        block = generator.randbytes(1 << 20)[:remaining]
        remaining -= len(block)
        digest.update(block)
    return digest.hexdigest()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_response_larger_than_16_mib_arrives_whole_on_stdout_with_bounded_memory(sinks, transport):
    first, _ = sinks
    count = (96 << 20) + 7
    cmd = ["/usr/bin/time", "-f", "%M", sluice_bin(), "upload", "synthetic:5",
           first + "/large?bytes=%d&seed=3" % count, "--transport", transport]
    # Read stdout slowly-ish through a pipe (not all at once) so a transport that queues the
    # body in memory would show it in its peak RSS.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    digest = hashlib.sha256()
    total = 0
    while True:
        block = proc.stdout.read(16384)
        if not block:
            break
        digest.update(block)
        total += len(block)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert total == count
    assert digest.hexdigest() == expected_large(count, 3)
    peak_kib = int(err.strip().splitlines()[-1])
    assert peak_kib < 80 * 1024, "peak RSS %.1f MiB for a %d MiB response" % (peak_kib / 1024, count >> 20)
