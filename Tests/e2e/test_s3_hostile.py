"""What a hostile user of `sluice s3 cp` tries: each case ends in the right object at the server,
or one `sluice: ...` line on stderr and a non-zero status, within bounded time, with nothing left
running. Against SeaweedFS (the fixtures of test_s3_cli.py) and, where it cannot show the case,
a small fault server of its own."""

import base64
import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import LocalServer, sluice_bin, wait_until_catching_signals
from conftest import REPO
from test_s3_cli import BUCKET, MIB, env, key, object_sha256, s3, sluice, uploads_of, weed  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy  # noqa: E402


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def interrupt(env, args, stdin, sent=None):
    """Starts sluice and sends it SIGINT at a gate: once it catches signals, or (sent=N) once
    its `--progress json` reports N bytes sent; (status, stderr without progress lines). What
    would hang instead (a read that blocks for ever) is killed by a 120 s guard and fails."""
    extra = ["--progress", "json"] if sent is not None else []
    proc = subprocess.Popen([sluice_bin(), *args, *extra], env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    guard = threading.Timer(120, proc.kill)
    guard.start()
    try:
        if sent is None:
            wait_until_catching_signals(proc)
            proc.send_signal(signal.SIGINT)
            lines = proc.stderr.read().decode("utf-8", "replace").splitlines(keepends=True)
        else:
            lines, signalled = [], False
            for raw in proc.stderr:
                lines.append(raw.decode("utf-8", "replace"))
                if not signalled and lines[-1].startswith("{") and json.loads(lines[-1])["bytes_sent"] >= sent:
                    proc.send_signal(signal.SIGINT)
                    signalled = True
            assert signalled, "the upload ended before the signal: %s" % "".join(lines[-3:])
        status = proc.wait()
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return status, "".join(line for line in lines if not line.startswith("{"))


def test_closed_stdin_is_one_line_not_a_hang(env):
    # Before: fd 0 became the signal watcher's pipe, and sluice read its own pipe for ever.
    proc = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", sluice_bin(), "s3", "cp", "-", "s3://%s/%s" % (BUCKET, key())],
                          env=env, capture_output=True, timeout=30)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and one_line(err), (proc.returncode, err)
    assert "stdin" in err and "Bad file descriptor" in err, err


def test_closed_stdout_and_stderr_do_not_take_other_descriptors(s3, env):
    name = key()
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&- 2>&-', "sh", sluice_bin(), "s3", "cp", "synthetic:11MiB:4",
                           "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"], env=env, capture_output=True, timeout=60)
    # The object is whole; printing its location fails (stdout is closed): 1.
    assert proc.returncode == 1
    assert object_sha256(s3, name)[1] == 11 * MIB


def test_ctrl_c_ends_an_upload_whose_stdin_is_idle(s3, env):
    # The writer keeps the pipe open and writes nothing: before, the read blocked until input
    # came (here: never, so the guard in interrupt() would kill it and the status would be -9).
    writer = subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE)
    try:
        name = key()
        status, err = interrupt(env, ["s3", "cp", "-", "s3://%s/%s" % (BUCKET, name)], writer.stdout)
        assert status == 130 and one_line(err) and "interrupted" in err, (status, err)
    finally:
        writer.kill()
        writer.wait()


def test_ctrl_c_mid_stream_aborts_the_multipart_upload(s3, env):
    # 12 MiB then silence: parts 1 and 2 are sent (the gate), part 3 waits for bytes that never come.
    writer = subprocess.Popen(["sh", "-c", "head -c %d /dev/zero; exec sleep 600" % (12 * MIB)], stdout=subprocess.PIPE)
    try:
        name = key()
        status, err = interrupt(env, ["s3", "cp", "-", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"], writer.stdout, sent=10 * MIB)
        assert status == 130 and one_line(err) and "aborted" in err, (status, err)
        assert uploads_of(s3, name) == []
    finally:
        writer.kill()
        writer.wait()


def test_a_fifo_without_a_writer_stops_on_ctrl_c(env, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    status, err = interrupt(env, ["s3", "cp", str(fifo), "s3://%s/%s" % (BUCKET, key())], subprocess.DEVNULL)
    assert status == 130 and one_line(err), (status, err)


def test_a_fifo_and_a_proc_file_are_read_as_streams(s3, env, tmp_path):
    # /proc/version reports size 0 and has content; before, it was refused.
    with open("/proc/version", "rb") as handle:
        expected = handle.read()
    name = key()
    status, _, err = sluice(env, "s3", "cp", "/proc/version", "s3://%s/%s" % (BUCKET, name), timeout=60)
    assert status == 0, err
    assert object_sha256(s3, name) == (hashlib.sha256(expected).hexdigest(), len(expected))

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = os.urandom(6 * MIB + 3)
    name = key()
    proc = subprocess.Popen([sluice_bin(), "s3", "cp", str(fifo), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "wb") as handle:
        handle.write(data)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert object_sha256(s3, name) == (hashlib.sha256(data).hexdigest(), len(data))


@pytest.mark.parametrize("change", ["grows", "shrinks", "rewritten"])
def test_a_file_that_changes_during_the_upload_is_not_completed(s3, env, tmp_path, change):
    path = tmp_path / "changing.bin"
    with open(path, "wb") as handle:
        handle.write(os.urandom(40 * MIB))
    name = key()
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "1", "--progress", "json"]
    proc = subprocess.Popen([sluice_bin(), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    changed = False
    try:
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            if not changed and line.startswith("{") and json.loads(line)["bytes_sent"] >= 6 * MIB:
                changed = True
                if change == "grows":
                    with open(path, "ab") as handle:
                        handle.write(b"more")
                elif change == "shrinks":
                    os.truncate(path, 39 * MIB)
                else:
                    with open(path, "r+b") as handle:
                        handle.seek(1)
                        handle.write(b"x")
        status = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(line for line in lines if not line.startswith("{"))
    assert changed, "".join(lines[-3:])
    assert status == 1 and one_line(err), (status, err)
    assert "the source changed while it was sent" in err and "--restart" in err and "resume" not in err, err
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=name).get("KeyCount", 0) == 0
    # The upload is kept (its parts are billed): the same command refuses, --restart starts over.
    status, _, err = sluice(env, *args[:-2])
    assert status == 1 and "--restart" in err, err
    status, _, err = sluice(env, *args[:-2], "--restart")
    assert status == 0, err
    with open(path, "rb") as handle:
        data = handle.read()
    assert object_sha256(s3, name) == (hashlib.sha256(data).hexdigest(), len(data))
    assert uploads_of(s3, name) == []


def test_a_file_rewritten_while_it_is_put_fails(s3, weed, env, tmp_path):
    # A PutObject cannot be held back: the run fails, naming the change. The gate: the file is
    # written to once the server has taken the body and before its answer reaches sluice (the
    # proxy's hook), so the change falls inside the send however busy the machine is. (Before,
    # a writer looping on its own was started and the test waited to see it run: when it did
    # not, the upload was sent whole and exited 0.) 4 MiB is past the small-body snapshot,
    # which reads a file once at rest.
    path = tmp_path / "rewritten.bin"
    with open(path, "wb") as handle:
        handle.write(os.urandom(4 * MIB))
    opened = os.stat(path).st_ctime_ns
    written = []

    def write_before_the_answer(status, headers, body):
        # Until the change time moves: a write in the same tick of the kernel's clock leaves it.
        while os.stat(path).st_ctime_ns == opened:
            with open(path, "r+b") as handle:
                handle.write(b"new")
            time.sleep(0.001)
        written.append(status)
        return status, headers, body

    proxy = FaultProxy(weed[1])
    try:
        proxy.rewrite["put"] = write_before_the_answer
        status, _, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port),
                                "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, key()), timeout=120)
    finally:
        proxy.close()
    assert written == [200], (written, proxy.actions)
    assert status == 1 and one_line(err) and "changed while it was sent" in err, (status, err)


def test_a_state_path_that_is_a_file_is_refused_before_an_upload_exists(s3, env, tmp_path):
    state = tmp_path / "state"
    state.write_text("not a directory")
    name = key()
    status, out, err = sluice(env, "s3", "cp", "synthetic:11MiB", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                              "--state", str(state), timeout=60)
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "resume state directory" in err and "(--state)" in err and "kept" not in err, err
    assert uploads_of(s3, name) == []


def test_an_edited_or_truncated_state_file_is_refused_and_restart_recovers(s3, env, tmp_path):
    path = tmp_path / "source.bin"
    with open(path, "wb") as handle:
        handle.write(os.urandom(30 * MIB))
    name = key()
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "1"]
    proc = subprocess.Popen([sluice_bin(), *args, "--progress", "json"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for raw in proc.stderr:
        if raw.startswith(b"{") and json.loads(raw)["bytes_sent"] >= 6 * MIB:
            proc.kill()
            break
    proc.wait(timeout=30)
    [record] = [os.path.join(root, f) for root, _, files in os.walk(env["XDG_CACHE_HOME"]) for f in files if f.endswith(".json")]
    original = open(record).read()
    # Before: a part size of 0 divided by zero (a crash with a backtrace).
    for text in [original.replace('"partSize" : 5242880', '"partSize" : 0'), original[:50], ""]:
        assert text != original
        with open(record, "w") as handle:
            handle.write(text)
        status, out, err = sluice(env, *args, timeout=60)
        assert status == 1 and out == "" and one_line(err), (status, err)
        assert "resume state" in err and "--restart" in err, err
    status, _, err = sluice(env, *args, "--restart", timeout=120)
    assert status == 0, err
    with open(path, "rb") as handle:
        assert object_sha256(s3, name) == (hashlib.sha256(handle.read()).hexdigest(), 30 * MIB)


@pytest.mark.parametrize("args", [
    ["s3", "cp", "", "s3://sluice/k"],
    ["s3", "cp", "synthetic:abc", "s3://sluice/k"],
    ["s3", "cp", "synthetic:1:x", "s3://sluice/k"],
    # A count that would retry a refused endpoint for ever (8 s apart) is refused, as for tus.
    ["s3", "cp", "synthetic:1", "s3://sluice/k", "--retries", "1001"],
    ["s3", "cp", "synthetic:1", "s3://sluice/k", "--retries", "99999999999999999999"],
])
def test_a_malformed_source_is_a_usage_error(env, args):
    status, out, err = sluice(env, *args, stdin=subprocess.DEVNULL, timeout=30)
    assert status == 2 and one_line(err) and out == "", (status, err)


# --- The server lies (Tests/Peers/s3_proxy.py's FaultProxy in front of SeaweedFS rewrites its answers) ---


class OtherOrigin:
    """Another origin on 127.0.0.1 that answers every request 200 and records what reached it."""

    def __init__(self):
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append((self.command, self.path, {k.lower() for k in self.headers.keys()}))
                self.send_response(200)
                self.send_header("ETag", '"elsewhere"')
                self.send_header("Content-Length", "0")
                self.end_headers()
            do_PUT = do_POST = do_GET = do_DELETE = answer

            def log_message(self, *args):
                pass
        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()


def _redirect(status, other):
    return lambda _status, _headers, _body: (status, [("Location", other.url + "/elsewhere?partNumber=1")], b"")


LIES = {
    # Before: PUT/POST bodies and x-amz-* headers were re-sent to the other origin, and its 200
    # was reported as the object uploaded (exit 0).
    "PutObject 307 elsewhere": ("put", lambda other: _redirect(307, other), "redirected (307)"),
    "PutObject 301 elsewhere": ("put", lambda other: _redirect(301, other), "redirected (301)"),
    "UploadPart 307 elsewhere": ("part", lambda other: _redirect(307, other), "redirected (307)"),
    "Create 307 elsewhere": ("create", lambda other: _redirect(307, other), "redirected (307)"),
    "Create answers HTML": ("create", lambda other: lambda s, h, b: (200, [("Content-Type", "text/html")], b"<html>hi</html>"),
                            "CreateMultipartUpload answer is <html>"),
    "Complete 200 with <Error>": ("complete", lambda other: lambda s, h, b: (
        200, [("Content-Type", "application/xml")], b"<Error><Code>InternalError</Code><Message>retry me</Message></Error>"),
        "200 InternalError"),
    "UploadPart without ETag": ("part", lambda other: lambda s, h, b: (s, [(n, v) for n, v in h if n.lower() != "etag"], b),
                                "has no ETag"),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lying_server_fails_the_upload_in_one_line(s3, weed, env, lie):
    action, make, expected = LIES[lie]
    other = OtherOrigin()
    proxy = FaultProxy(weed[1])
    try:
        proxy.rewrite[action] = make(other)
        name = key()
        spec = "synthetic:1000:2" if action == "put" else "synthetic:%d:2" % (11 * MIB)
        status, out, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port),
                                  "s3", "cp", spec, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--retries", "1", timeout=120)
        assert status == 1 and out == "" and one_line(err), (status, err)
        assert expected in err, err
        assert other.seen == [], other.seen
        # (The proxy rewrites answers the server already acted on: the object may be there.)
        assert "complete" not in proxy.actions or action == "complete", proxy.actions
    finally:
        proxy.close()
        other.close()


def fault_env(fault_url, tmp_path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environment.update({
        "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": fault_url,
        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    })
    return environment


def test_s3_cp_refuses_a_200_with_an_error_document(fault_url, tmp_path):
    # Before (issue 37.3): a PutObject answered 200 with an <Error> body and no ETag printed
    # "uploaded" and exited 0.
    path = tmp_path / "small"
    path.write_bytes(b"x" * 1000)
    status, out, err = sluice(fault_env(fault_url, tmp_path), "s3", "cp", str(path), "s3://error-200/small", "--retries", "0",
                              timeout=120)
    assert status == 1 and out == "" and one_line(err), (status, out, err)
    assert "PutObject failed: 200" in err and "AccessDenied" in err, err


def test_s3_cp_recursive_counts_no_file_answered_200_with_an_error_document(fault_url, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a", "b"):
        (tree / name).write_bytes(name.encode() * 100)
    status, out, err = sluice(fault_env(fault_url, tmp_path), "s3", "cp", "--recursive", str(tree), "s3://error-200/t/",
                              "--retries", "0", "--state", str(tmp_path / "state"), timeout=120)
    assert status == 1, (status, out, err)
    assert "upload:" not in out, out
    assert err.count("AccessDenied") == 2, err


@pytest.mark.parametrize("source, null", [("/dev/zero", False), ("/dev/zero", True), ("/dev/urandom", False),
                                          ("/dev/urandom", True), ("fifo", False)])
def test_files_from_a_list_that_never_ends_is_refused_in_one_line(fault_url, tmp_path, source, null):
    # Before (issue 37.5): /dev/zero was read for ever at 100 % CPU. A FIFO fed /dev/zero by a
    # writer of its own is read with the same bounds.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_bytes(b"f")
    writer = None
    if source == "fifo":
        source = str(tmp_path / "fifo")
        os.mkfifo(source)
        writer = subprocess.Popen(["sh", "-c", 'exec cat /dev/zero > "$1"', "sh", source], stderr=subprocess.DEVNULL)
    try:
        args = ["s3", "cp", "--recursive", str(tree), "s3://bucket/p/", "--files-from", source] + (["--null"] if null else [])
        status, out, err = sluice(fault_env(fault_url, tmp_path), *args, timeout=120)
    finally:
        if writer:
            writer.kill()
            writer.wait()
    assert status != 0 and out == "" and one_line(err), (status, out, err)
    assert "nothing was sent" in err and "\x00" not in err and "\x1b" not in err, err


@pytest.mark.parametrize("progress", ["none", "json"])
def test_a_gateway_echoing_the_headers_gets_no_secret_printed(fault_url, tmp_path, progress):
    # Before (issue 37.6): the SSE-C key's base64, as sent, was printed in the error line.
    key = b"0123456789abcdefghijklmnopqrstuv"
    key_file = tmp_path / "key"
    key_file.write_bytes(key)
    path = tmp_path / "small"
    path.write_bytes(b"x" * 1000)
    env = dict(fault_env(fault_url, tmp_path), AWS_SESSION_TOKEN="echoed-session-token-37",
               AWS_SECRET_ACCESS_KEY="echoed-secret-key-37")
    status, out, err = sluice(env, "s3", "cp", str(path), "s3://echo-headers/small", "--sse-c", "AES256", "--sse-c-key-file", str(key_file),
                              "--retries", "0", "--progress", progress, timeout=120)
    assert status == 1 and out == "", (status, out, err)
    # The gateway did echo them: the line names the headers, their values hidden.
    assert "x-amz-server-side-encryption-customer-key: ***" in err and "x-amz-security-token: ***" in err.lower(), err
    for secret in [base64.b64encode(key).decode(), key.decode(), "echoed-session-token-37", "echoed-secret-key-37"]:
        assert secret not in out + err, err
    assert "Signature=***; Content-Length" in err, err


@pytest.mark.parametrize("command", ["sync", "cp -r prefix", "sync prefix"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_wait_for_a_listing_page_that_does_not_come(fault_url, tmp_path, signum, command):
    # Before (issue 37.8): the wait lasted until the listing's retries ran out, then exit 1.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_bytes(b"f")
    env = fault_env(fault_url, tmp_path)
    args = {
        "sync": ["sync", str(tree), "s3://silent/p/", "--state", str(tmp_path / "state")],
        # A prefix copied by the store (S3PrefixCopy): its source's listing is held.
        "cp -r prefix": ["cp", "-r", "s3://silent/p/", "s3://other/q/"],
        "sync prefix": ["sync", "s3://silent/p/", "s3://other/q/", "--delete"],
    }[command]
    proc = subprocess.Popen([sluice_bin(), "s3", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until_catching_signals(proc)
        # The gate: the server holds the listing's request.
        deadline = time.monotonic() + 120
        while not any(r["path"].startswith("/silent/") and r["method"] == "GET" for r in json.load(
                urllib.request.urlopen(fault_url + "/requests"))):
            assert proc.poll() is None and time.monotonic() < deadline, proc.poll()
            time.sleep(0.01)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = err.decode("utf-8", "replace")
    assert proc.returncode == 130 and one_line(err), (proc.returncode, err)


def test_a_key_with_a_newline_is_stored_as_given_and_reported_in_one_line(s3, env):
    name = key() + "\nsecond line\t"
    status, out, err = sluice(env, "s3", "cp", "synthetic:10", "s3://%s/%s" % (BUCKET, name), timeout=60)
    assert status == 0 and one_line(err) and out.count("\n") == 1, (out, err)
    assert "\\u{A}second line\\u{9}" in err and "\\u{A}second line\\u{9}" in out, (out, err)
    assert object_sha256(s3, name)[1] == 10


def test_an_argument_that_is_not_utf8_is_refused_not_replaced(env):
    # Swift would read b"\xff" as U+FFFD and upload to another key than the bytes given.
    proc = subprocess.run([sluice_bin().encode(), b"s3", b"cp", b"synthetic:10", b"s3://%s/a\xffb" % BUCKET.encode()], env=env,
                          capture_output=True, timeout=30)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and one_line(err) and "not valid UTF-8" in err, (proc.returncode, err)
