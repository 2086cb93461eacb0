"""Paths that are not plain regular files, through the CLI as a user would give them:
/proc files (size 0 but content: read to their end, never an empty body with exit 0), an empty
file, FIFOs with and without a writer (waits for the writer; SIGINT ends the wait), devices,
directories and sockets (refused in one line)."""

import hashlib
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import need_env, response_json, run, sha256_file, sluice_bin
from test_form_cli import multipart_url  # noqa: F401 - the fixture

TRANSPORTS = ["curl", "urlsession"]
# /proc/version does not change while the machine runs; /proc/cpuinfo may (cpu MHz).
PROC_FILE = "/proc/version"


def proc_bytes():
    with open(PROC_FILE, "rb") as handle:
        data = handle.read()
    assert data and os.stat(PROC_FILE).st_size == 0
    return data


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_proc_file_uploads_its_whole_content(receiver, transport):
    expected = proc_bytes()
    status, out, err = run("upload", PROC_FILE, receiver + "proc", "--transport", transport)
    assert status == 0, err
    got = response_json(out)
    assert (got["bytes"], got["sha256"]) == (len(expected), hashlib.sha256(expected).hexdigest())
    # Its length is learned only at its end: chunked.
    assert got["chunked"] is True
    # A /proc file that changes as it is read is never empty either.
    status, out, err = run("upload", "/proc/cpuinfo", receiver + "cpuinfo", "--transport", transport)
    assert status == 0, err
    assert response_json(out)["bytes"] > 0


def test_proc_file_checksum_is_its_content():
    expected = proc_bytes()
    status, out, err = run("checksum", PROC_FILE)
    assert status == 0, err
    assert out.decode().split() == [hashlib.sha256(expected).hexdigest(), str(len(expected))]
    status, out, err = run("checksum", "/proc/self/status")
    assert status == 0, err
    assert int(out.decode().split()[1]) > 0


def test_proc_file_as_a_form_part(multipart_url):  # noqa: F811
    expected = proc_bytes()
    status, out, err = run("upload", "--form", "f=@%s" % PROC_FILE, multipart_url)
    assert status == 0, err
    (part,) = json.loads(out.decode())["parts"]
    assert (part["size"], part["sha256"]) == (len(expected), hashlib.sha256(expected).hexdigest())


def test_proc_file_through_tus(tmp_path):
    endpoint, store = need_env("SLUICE_TUS_URL"), need_env("SLUICE_TUS_STORE")
    expected = proc_bytes()
    status, out, err = run("tus", PROC_FILE, endpoint, "--state", str(tmp_path / "state"), "--progress", "none", timeout=60)
    assert status == 0, err
    stored = os.path.join(store, out.decode().strip().rstrip("/").rsplit("/", 1)[-1])
    with open(stored, "rb") as handle:
        assert handle.read() == expected


def test_empty_regular_file_is_an_empty_body(receiver, tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    status, out, err = run("upload", str(path), receiver + "empty")
    assert status == 0, err
    got = response_json(out)
    assert got["bytes"] == 0 and got["chunked"] is False and got["content_length"] == 0


def _has_open(pid, path, timeout=120):
    """Gate: `pid` holds a descriptor on `path`; False if it is gone or after `timeout`, a hang guard."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == path:
                        return True
                except OSError:
                    pass
        except OSError:
            return False
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fifo_waits_for_its_writer_and_sends_what_it_wrote(receiver, tmp_path, transport):
    path = str(tmp_path / "fifo")
    os.mkfifo(path)
    data = os.urandom(3_000_001)

    def writer():
        # open() for writing blocks until sluice opened the FIFO for reading: the gate.
        with open(path, "wb") as handle:
            handle.write(data)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    status, out, err = run("upload", path, receiver + "fifo", "--transport", transport, timeout=60)
    thread.join(timeout=10)
    assert status == 0, err
    got = response_json(out)
    assert (got["bytes"], got["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize("command", ["upload-curl", "upload-urlsession", "checksum"])
def test_fifo_without_a_writer_waits_and_sigint_ends_it(receiver, tmp_path, command):
    path = str(tmp_path / "fifo")
    os.mkfifo(path)
    if command == "checksum":
        args = ["checksum", path]
    else:
        args = ["upload", path, receiver + "nowriter", "--transport", command.split("-")[1]]
    proc = subprocess.Popen([sluice_bin(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Gate: it opened the FIFO (and did not hang in open()); it is now waiting for a writer.
        assert _has_open(proc.pid, path), "sluice never opened the FIFO"
        assert proc.poll() is None, "sluice ended without a writer: %r" % (proc.communicate(),)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if command == "checksum":
        # checksum has nothing to clean up: SIGINT's default action ends it (the shell says 130).
        assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    else:
        assert proc.returncode == 130, err
        assert len(err.decode().strip().splitlines()) == 1, err
    assert out == b""


def test_devices_directories_and_sockets_are_refused_in_one_line(tmp_path):
    sock_path = str(tmp_path / "sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(sock_path)
    try:
        for path, fragment in [("/dev/zero", "character device"), ("/dev/null", "character device"),
                               (str(tmp_path), "is a directory"), (sock_path, sock_path)]:
            for args in (["upload", path, "http://127.0.0.1:9/x"], ["checksum", path]):
                status, out, err = run(*args, timeout=10)
                lines = err.strip().splitlines()
                assert status == 1 and len(lines) == 1 and fragment in lines[0], (args, status, err)
                assert out == b""
    finally:
        sock.close()
