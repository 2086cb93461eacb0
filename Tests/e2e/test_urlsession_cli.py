"""`--transport urlsession` where URLSession on Linux asks for what a one-shot body cannot give,
or cannot reach: each case ends in a full body at the server or one line and exit 1, in seconds."""

import os
import subprocess
import time

import pytest

from conftest import REPO, sluice_bin, stop

PEERS = os.path.join(REPO, "Tests", "Peers")


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def start_peer(*args):
    """A Python peer that prints its port on its first stdout line; (process, base URL)."""
    proc = subprocess.Popen(["python3", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = proc.stdout.readline().decode().strip()
    assert line.isdigit(), line
    return proc, "http://127.0.0.1:%s" % line


@pytest.fixture(scope="module")
def faults():
    url = os.environ.get("SLUICE_FAULT_URL")
    if url:
        yield url
        return
    proc, url = start_peer(os.path.join(PEERS, "fault_server.py"), "--port", "0")
    try:
        yield url
    finally:
        stop(proc)


def upload_stdin(url, data, *extra, timeout=30):
    """`sluice upload - URL --transport urlsession` with `data` through a pipe; (status, stdout, stderr, seconds)."""
    started = time.monotonic()
    proc = subprocess.Popen([sluice_bin(), "upload", "-", url, "--transport", "urlsession", *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out, err.decode("utf-8", "replace"), time.monotonic() - started
    return proc.returncode, out, err.decode("utf-8", "replace"), time.monotonic() - started


@pytest.mark.parametrize("path, extra", [
    ("/redirect-307", []),
    ("/auth", ["-u", "user:secret"]),
])
def test_a_one_shot_body_asked_for_again_fails_in_one_line(faults, path, extra):
    # The transport answers these itself (the task completes, then it would replay): a
    # one-shot body is refused there. The other way URLSession asks again, from inside
    # libcurl's rewind, is URLSessionReplayTests.
    status, _, err, seconds = upload_stdin(faults + path, os.urandom(3 << 20), *extra)
    assert status == 1 and one_line(err), (status, err)
    assert "cannot be replayed" in err, err
    assert seconds < 10, seconds
