"""Fixtures for the CLI end-to-end tests: the sluice binary, a loopback receiver, and the
peers that scripts/test.sh starts (nginx, the fault server), read from the environment."""

import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def sluice_bin():
    path = os.environ.get("SLUICE_BIN") or os.path.join(REPO, ".build", "debug", "sluice")
    if not os.access(path, os.X_OK):
        pytest.exit("no sluice binary at %s: build first or set SLUICE_BIN" % path, returncode=2)
    return path


class LocalServer:
    """A test's own small server: `handler` (a BaseHTTPRequestHandler class) served on 127.0.0.1
    at a free port from daemon threads; `close()` stops it. For answers no real peer sends."""

    def __init__(self, handler):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def run(*args, stdin=None, input_bytes=None, timeout=300):
    """Runs sluice; returns (exit status, stdout bytes, stderr text)."""
    proc = subprocess.run(
        [sluice_bin(), *args], stdin=stdin, input=input_bytes, capture_output=True, timeout=timeout
    )
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


def stop(proc):
    """Stops a peer this test run started, by its PID: SIGTERM, then SIGKILL after 10 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_until_catching_signals(proc, timeout=120):
    """Gate: returns once `proc` has its SIGINT handler installed (bit 2 of SigCgt in
    /proc/PID/status), so a SIGINT sent now is handled, not the default death (-2). Fails if
    the process ends first; `timeout` is a hang guard only."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "exited %s before catching signals" % proc.returncode
        with open("/proc/%d/status" % proc.pid) as handle:
            caught = next(int(line.split()[1], 16) for line in handle if line.startswith("SigCgt:"))
        if caught & (1 << (signal.SIGINT - 1)):
            return
        time.sleep(0.01)
    raise AssertionError("pid %d did not catch SIGINT within %s s" % (proc.pid, timeout))


def checksum(spec):
    status, out, err = run("checksum", spec)
    assert status == 0, err
    digest, count = out.decode().split()
    return digest, int(count)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(1 << 20)
            if not block:
                return digest.hexdigest()
            digest.update(block)


def need_env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip("%s is not set: run through scripts/test.sh" % name)
    return value


@pytest.fixture(scope="session")
def receiver():
    """A `sluice receive` on 127.0.0.1, port 0; yields its base URL; stopped by PID."""
    proc = subprocess.Popen(
        [sluice_bin(), "receive", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def nginx():
    return need_env("SLUICE_NGINX_URL"), need_env("SLUICE_NGINX_ROOT")


@pytest.fixture(scope="session")
def fault_url():
    return need_env("SLUICE_FAULT_URL")


@pytest.fixture()
def big_file(tmp_path_factory):
    """A 64 MiB file of random bytes."""
    return make_file(tmp_path_factory, 64 << 20)


def make_file(tmp_path_factory, size, seed=0):
    """A file of random bytes from the OS (independent of sluice's own generator)."""
    path = tmp_path_factory.mktemp("files") / ("data-%d-%d.bin" % (size, seed))
    with open(path, "wb") as handle:
        remaining = size
        while remaining > 0:
            block = os.urandom(min(remaining, 8 << 20))
            handle.write(block)
            remaining -= len(block)
    return str(path)


def response_json(out):
    return json.loads(out.decode())
