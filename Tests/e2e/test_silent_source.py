"""A sequential source that goes silent (issue 8 §5): a FIFO whose writer opened it and writes
nothing, or stdin from a pipe whose writer stays open and writes nothing, with or without some
bytes first. `--stall-timeout` ends the upload on both transports: exit 1, one line naming the
source as the cause and the stall timeout given (never a URLSession or server timeout, never the
60 s default), and nothing of the upload left running. No wall-clock bound is asserted: the line
names the limit that fired."""

import os
import subprocess
import threading

import pytest

from conftest import sluice_bin

TRANSPORTS = ["curl", "urlsession"]
STALL = 2
# Only tells an ended upload from a hang, far above the stall timeout on a busy machine (libcurl
# measures speed over a window of about 5 s, so after some bytes its stall clock starts late).
HANG_GUARD = 120


def _run_against(args, stdin=None):
    """Starts sluice in a process group of its own; returns (exit status, stdout, stderr)."""
    proc = subprocess.Popen([sluice_bin(), *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        pytest.fail("still running %d s after a %d s stall timeout: %r" % (HANG_GUARD, STALL, err.decode()))
    # Nothing of the upload is left: no process in its group (sluice starts none of its own).
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    return proc.returncode, out, err.decode("utf-8", "replace")


def _check(status, out, err, sent):
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 1, err
    assert len(lines) == 1, err
    # The source, and the stall timeout given (not the 60 s default), ended it.
    assert "source produced nothing for %d s" % STALL in lines[0], err
    assert "(%d of unknown bytes sent)" % sent in lines[0], err
    assert out == b""


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
