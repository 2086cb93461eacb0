"""DESIGN.md's fault table as runnable rows, shared by test_faults.py (which requires every row
to pass with both transports) and scripts/fault_matrix.py (which prints the table and exits
non-zero when a row fails).

Each row is a function (base_url, transport, workdir) -> (ok, detail). "ok" means the outcome
the table asks for: a full, identical body at the server, or a clear non-zero failure; never a
2xx after a short body, never a hang."""

import json
import os
import re
import signal
import subprocess
import time

from conftest import checksum, run, sluice_bin

ROW_TIMEOUT = 60
# How long a row may run before it counts as a hang: far above what any row needs on a busy
# machine. No row asserts a wall-clock bound; what ended an upload shows in its error line.
HANG_GUARD = 120


def _fail_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def reset_mid_body(url, transport, workdir):
    spec = "synthetic:64MiB:1"
    status, out, err = run("upload", spec, url + "/reset-mid-body", "--transport", transport, timeout=ROW_TIMEOUT)
    line = _fail_line(err)
    ok = status == 1 and re.search(r"\(\d+ of 67108864 bytes sent\)", line) is not None
    return ok, "exit %d: %s" % (status, line)


def _replayed(url, path, transport, extra=()):
    spec = "synthetic:8MiB:3"
    status, out, err = run("upload", spec, url + path, "--transport", transport, *extra, timeout=ROW_TIMEOUT)
    if status != 0:
        return False, "exit %d: %s" % (status, _fail_line(err))
    try:
        got = json.loads(out.decode())
    except ValueError:
        return False, "exit 0 with a body that is not the sink's answer: %r" % out[:100]
    digest, count = checksum(spec)
    ok = got.get("bytes") == count and got.get("sha256") == digest
    return ok, "server got %s bytes (%s)" % (got.get("bytes"), "identical" if ok else "DIFFERENT")


def redirect_307(url, transport, workdir):
    return _replayed(url, "/redirect-307", transport)


def redirect_308(url, transport, workdir):
    return _replayed(url, "/redirect-308", transport)


def auth_with_credentials(url, transport, workdir):
    return _replayed(url, "/auth", transport, ("-u", "user:secret"))


def auth_without_credentials(url, transport, workdir):
    started = time.monotonic()
    try:
        status, out, err = run("upload", "synthetic:8MiB", url + "/auth", "--transport", transport, timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        return False, "hung (no exit within %d s)" % HANG_GUARD
    line = _fail_line(err)
    ok = status == 1 and "401" in line
    return ok, "exit %d after %.1f s: %s" % (status, time.monotonic() - started, line)


def early_413(url, transport, workdir):
    try:
        status, out, err = run("upload", "synthetic:4GiB", url + "/early-413", "--transport", transport, timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        return False, "hung (no exit within %d s)" % HANG_GUARD
    line = _fail_line(err)
    sent = re.search(r"\((\d+) of 4294967296 bytes sent\)", line)
    # With the 413, and sending stopped long before 4 GiB: the count of bytes sent shows it,
    # however fast the machine (a loopback can carry 4 GiB inside the hang guard).
    ok = status == 1 and "413" in line and sent is not None and int(sent.group(1)) < (1 << 30)
    return ok, "exit %d: %s" % (status, line)


def close_without_response(url, transport, workdir):
    status, out, err = run("upload", "synthetic:8MiB", url + "/close-no-response", "--transport", transport, timeout=ROW_TIMEOUT)
    line = _fail_line(err)
    return status == 1 and line.startswith("sluice:"), "exit %d: %s" % (status, line)


def early_200(url, transport, workdir):
    """A 2xx answered after 1 MiB of a 64 MiB body: the upload must fail, never exit 0."""
    started = time.monotonic()
    try:
        status, out, err = run("upload", "synthetic:64MiB:2", url + "/early-200", "--transport", transport, timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        return False, "hung (no exit within %d s)" % HANG_GUARD
    line = _fail_line(err)
    ok = status == 1 and line.startswith("sluice:") and re.search(r"\(\d+ of 67108864 bytes sent\)", line) is not None
    return ok, "exit %d after %.1f s: %s" % (status, time.monotonic() - started, line)


def expect_417_kept(url, transport, workdir):
    """A 417 while the body is sent (no 100 Continue; the rest of the body read and dropped):
    libcurl sends the request again without `Expect` and the body from its first byte."""
    return _replayed(url, "/expect-417?then=drain&timeout=5", transport)


def expect_417_closed(url, transport, workdir):
    """A 417 while the body is sent, the connection closed with it: the whole body at the
    server, or exit 1 and one line; never exit 0 after a body that did not start at byte 0."""
    spec = "synthetic:8MiB:4"
    status, out, err = run("upload", spec, url + "/expect-417?then=close&timeout=5", "--transport", transport, timeout=ROW_TIMEOUT)
    line = _fail_line(err)
    if status != 0:
        return status == 1 and line.startswith("sluice:"), "exit %d: %s" % (status, line)
    got = json.loads(out.decode())
    digest, count = checksum(spec)
    ok = got.get("bytes") == count and got.get("sha256") == digest
    return ok, "exit 0, server got %s bytes (%s)" % (got.get("bytes"), "identical" if ok else "DIFFERENT")


def _wait_for_socket(pid, timeout=HANG_GUARD):
    """Gate: `pid` holds a socket (sluice installs its signal handlers before it connects).
    False if the process is gone or none appeared within `timeout` (a hang guard)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                        return True
                except OSError:
                    pass
        except OSError:
            return False
        time.sleep(0.02)
    return False


def source_shrinks(url, transport, workdir):
    path = os.path.join(workdir, "shrinking-%s.bin" % transport)
    with open(path, "wb") as handle:
        handle.truncate(256 << 20)
    proc = subprocess.Popen(
        [sluice_bin(), "upload", path, url + "/slow", "--transport", transport],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        if not _wait_for_socket(proc.pid):
            proc.kill()
            _, err = proc.communicate()
            return False, "no connection before the source shrank (exit %s): %s" % (proc.returncode, _fail_line(err.decode()))
        os.truncate(path, 1 << 20)
        out, err = proc.communicate(timeout=ROW_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return False, "hung"
    finally:
        os.unlink(path)
    line = _fail_line(err.decode())
    ok = proc.returncode == 1 and "source" in line and re.search(r"byte \d+", line) is not None
    return ok, "exit %d: %s" % (proc.returncode, line)


def producer_stall_then_sigint(url, transport, workdir):
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [sluice_bin(), "upload", "-", url + "/sink", "--transport", transport],
        stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    os.close(read_end)
    try:
        os.write(write_end, b"y" * 200_000)
        if not _wait_for_socket(proc.pid):
            proc.kill()
            _, err = proc.communicate()
            return False, "no connection before the SIGINT (exit %s): %s" % (proc.returncode, _fail_line(err.decode()))
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return False, "still running %d s after SIGINT" % HANG_GUARD
        line = _fail_line(err.decode())
        # 130 is the interrupt ("upload cancelled", or "interrupted" when it lands before the
        # transfer began); a SIGINT left waiting behind the stalled producer would end only at
        # the stall timeout (60 s by default, inside the hang guard): exit 1 and "the source
        # produced nothing".
        ok = proc.returncode == 130 and ("cancelled" in line or "interrupted" in line)
        return ok, "exit %d after SIGINT: %s" % (proc.returncode, line)
    finally:
        os.close(write_end)


def slow_server(url, transport, workdir):
    spec = "synthetic:96MiB:5"
    cmd = ["/usr/bin/time", "-f", "%M", sluice_bin(), "upload", spec, url + "/slow?chunk=262144&interval_ms=2",
           "--transport", transport]
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    err = proc.stderr.decode()
    peak_kib = int(err.strip().splitlines()[-1])
    if proc.returncode != 0:
        return False, "exit %d: %s" % (proc.returncode, err.strip().splitlines()[0])
    got = json.loads(proc.stdout.decode())
    digest, count = checksum(spec)
    ok = got["bytes"] == count and got["sha256"] == digest and peak_kib < 64 * 1024
    return ok, "completed, identical=%s, peak RSS %.1f MiB for a 96 MiB body" % (got["sha256"] == digest, peak_kib / 1024)


def stalled_server(url, transport, workdir):
    """The server stops reading (1 byte every 3 s): --stall-timeout ends it, no hang. The line
    names the window that fired, so it tells --stall-timeout 1 from the 60 s default: libcurl's
    "the last 1 seconds", URLSession's "the stall timeout of 1 s". 120 s is a hang guard only."""
    try:
        status, _, err = run("upload", "synthetic:256MiB", url + "/slow?chunk=1&interval_ms=3000",
                             "--transport", transport, "--stall-timeout", "1", timeout=120)
    except subprocess.TimeoutExpired:
        return False, "hung (no exit within 120 s)"
    line = _fail_line(err)
    named = "the last 1 seconds" in line if transport == "curl" else "the stall timeout of 1 s" in line
    return status == 1 and "timed out" in line and named, "exit %d: %s" % (status, line)


def trickled_answer(url, transport, workdir):
    """The server answers at 5 bytes a second (a 1 MiB body): the answer's pace ends it, one
    line, exit 1 (before: about 58 hours; --stall-timeout never fired)."""
    try:
        status, _, err = run("upload", "synthetic:1000", url + "/trickle?bytes=1048576&rate=5",
                             "--transport", transport, "--stall-timeout", "1", timeout=120)
    except subprocess.TimeoutExpired:
        return False, "hung (no exit within 120 s)"
    line = _fail_line(err)
    return status == 1 and "came too slowly" in line, "exit %d: %s" % (status, line)


ROWS = [
    ("server resets the connection mid-body", reset_mid_body),
    ("307 after the body", redirect_307),
    ("308 after the body", redirect_308),
    ("401 challenge, credentials given", auth_with_credentials),
    ("401 challenge, no credentials", auth_without_credentials),
    ("early 413 without reading", early_413),
    ("whole body read, closed with no response", close_without_response),
    ("200 before the whole body was read", early_200),
    ("417 during the body, the rest read and dropped", expect_417_kept),
    ("417 during the body, connection closed with it", expect_417_closed),
    ("source shrinks mid-upload", source_shrinks),
    ("producer stalls; SIGINT", producer_stall_then_sigint),
    ("slow server", slow_server),
    ("server stops reading; stall timeout", stalled_server),
    ("server trickles its answer (5 B/s); stall timeout", trickled_answer),
]
