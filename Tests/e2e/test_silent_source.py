"""A sequential source that goes silent (issue 8 §5): a FIFO whose writer opened it and writes
nothing, or stdin from a pipe whose writer stays open and writes nothing, with or without some
bytes first. `--stall-timeout` ends the upload on both transports within about the timeout:
exit 1, one line naming the source as the cause (never a URLSession or server timeout), and
nothing of the upload left running."""

import os
import subprocess
import threading
import time

import pytest

from conftest import sluice_bin

TRANSPORTS = ["curl", "urlsession"]
STALL = 2
# libcurl measures speed over a window of about 5 s, so after some bytes its stall clock starts
# up to 5 s late: still far inside this bound, which only tells an ended upload from a hang.
BOUND = STALL + 10


def _run_against(args, stdin=None):
    """Starts sluice in a process group of its own; returns (exit status, stdout, stderr, seconds)."""
    started = time.monotonic()
    proc = subprocess.Popen([sluice_bin(), *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BOUND + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        pytest.fail("still running %d s after a %d s stall timeout: %r" % (BOUND + 30, STALL, err.decode()))
    elapsed = time.monotonic() - started
    # Nothing of the upload is left: no process in its group (sluice starts none of its own).
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    return proc.returncode, out, err.decode("utf-8", "replace"), elapsed


def _check(status, out, err, elapsed, sent):
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 1, err
    assert len(lines) == 1, err
    assert "source produced nothing for %d s" % STALL in lines[0], err
    assert "(%d of unknown bytes sent)" % sent in lines[0], err
    assert out == b""
    assert elapsed < BOUND, "ended %.1f s after a %d s stall timeout: %s" % (elapsed, STALL, lines[0])


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("first", [0, 100_000])
def test_silent_fifo_ends_at_the_stall_timeout(receiver, tmp_path, transport, first):
    path = str(tmp_path / "fifo")
    os.mkfifo(path)
    held = []

    def writer():
        # open() returns once sluice opened the FIFO for reading; the writer then goes silent.
        handle = open(path, "wb", buffering=0)
        held.append(handle)
        _write_all(handle.fileno(), first)

    result = _with_writer(writer, ["upload", path, receiver + "silent-fifo"], transport)
    for handle in held:
        handle.close()
    assert held, "the writer never opened the FIFO"
    _check(*result, sent=first)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("first", [0, 100_000])
def test_silent_stdin_ends_at_the_stall_timeout(receiver, transport, first):
    read_end, write_end = os.pipe()
    try:
        result = _with_writer(lambda: _write_all(write_end, first), ["upload", "-", receiver + "silent-stdin"],
                              transport, stdin=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    _check(*result, sent=first)


def _write_all(fd, count):
    """Writes `count` bytes to `fd` (as sluice reads them), then nothing; stops if sluice is gone."""
    try:
        os.write(fd, b"s" * count)
    except OSError:
        pass


def _with_writer(writer, args, transport, stdin=None):
    """Runs the upload while `writer` runs on a thread; the writer's end stays open after it."""
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        return _run_against([*args, "--transport", transport, "--stall-timeout", str(STALL)], stdin=stdin)
    finally:
        thread.join(timeout=10)
