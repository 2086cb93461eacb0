"""Hostile input, round two (issue 18): what a server sends is read with a bound, nothing waits
for ever, no password reaches a message, file-system errors are said in Sluice's words, nothing
is done before a refusal, and the lines say what is true. Every case ends by itself quickly:
the right result, or one `sluice: ...` line and a non-zero status.

Against the real peers (SeaweedFS through test_s3_cli.py's fixtures, tuspyserver, the fault
server) and, where a server must lie, Tests/Peers/s3_proxy.py's FaultProxy or a small server here."""

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse

import pytest

from conftest import REPO, LocalServer, need_env, sluice_bin
from test_s3_cli import BUCKET, MIB, env, key, s3, sluice, weed  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy  # noqa: E402

SECRET = "SECRETPW"


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def run(*args, env=None, stdin=None, input_bytes=None, timeout=60):
    proc = subprocess.run([sluice_bin(), *args], env=env, stdin=stdin, input=input_bytes, capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def resume_records(env):
    """The S3 resume records under the test's cache directory."""
    return [os.path.join(root, f) for root, _, files in os.walk(env["XDG_CACHE_HOME"]) for f in files if f.endswith(".json")]


def through_proxy(env, proxy):
    return dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port)


def leave_a_resumable_upload(env, proxy, path, name):
    """Runs `s3 cp` of `path` (over 6 MiB) through `proxy` and kills it once the first part is
    sent: the upload and its resume record (keyed by the proxy's endpoint) are kept. Returns
    the arguments to run it again."""
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "1"]
    # Part 3 is refused until the kill, so the upload cannot finish first (a race it lost
    # once uploads got faster); the refusal is lifted for the run that follows.
    proxy.fail_part(3, 503, "SlowDown", times=None)
    proc = subprocess.Popen([sluice_bin(), *args, "--progress", "json"], env=through_proxy(env, proxy),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for raw in proc.stderr:
            if raw.startswith(b"{") and json.loads(raw)["bytes_sent"] >= 6 * MIB:
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
        # The killed run's last request (a retry of part 3) is logged before the caller counts.
        proxy.wait_idle()
        proxy.clear_failures()
    assert "complete" not in proxy.actions, proxy.actions
    return args


# --- 3. Passwords in URLs never reach a message ---


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
def test_a_redirect_to_a_url_with_a_password_is_reported_without_it(transport):
    fault = need_env("SLUICE_FAULT_URL")
    port = urllib.parse.urlsplit(fault).port
    target = "http://user:%s@127.0.0.1:%d/sink" % (SECRET, port)
    # stdin cannot be replayed: the line names the redirect's target.
    status, _, err = run("upload", "-", "%s/redirect-307?to=%s" % (fault, urllib.parse.quote(target, safe="")),
                         "--transport", transport, input_bytes=os.urandom(3 * MIB))
    assert status == 1 and one_line(err), (status, err)
    assert SECRET not in err, err
    if transport == "curl":
        assert "user:***@127.0.0.1" in err, err


def test_a_password_in_the_tus_endpoint_is_not_printed(tmp_path):
    source = tmp_path / "f.bin"
    source.write_bytes(b"x" * 1000)
    status, _, err = run("tus", str(source), "http://user:%s@127.0.0.1:1/files/" % SECRET, "--retries", "0",
                         "--state", str(tmp_path / "state"))
    assert status == 1 and one_line(err), (status, err)
    assert SECRET not in err and "user:***@127.0.0.1:1" in err, err


def test_an_s3_redirect_with_a_password_is_reported_without_it(s3, weed, env):
    proxy = FaultProxy(weed[1])
    try:
        proxy.rewrite["put"] = lambda s, h, b: (307, [("Location", "http://user:%s@127.0.0.1:1/elsewhere" % SECRET)], b"")
        status, out, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port),
                                  "s3", "cp", "synthetic:1000", "s3://%s/%s" % (BUCKET, key()), timeout=60)
    finally:
        proxy.close()
    assert status == 1 and one_line(err), (status, err)
    assert SECRET not in err and "user:***@127.0.0.1:1" in err, err


# --- 4. File-system errors in Sluice's words; 5. nothing done before a refusal ---


def unusable_states(tmp_path):
    """(--state value, words the line must hold): a file, a path under a file, under /proc, /sys."""
    plain = tmp_path / "a-file"
    plain.write_text("not a directory")
    return [(str(plain), "exists and is not a directory"), (str(plain / "below"), "exists and is not a directory"),
            ("/proc/sluice-state", "no such file or directory"), ("/sys/sluice-state", "permission denied")]


def tus_store_files():
    return set(os.listdir(need_env("SLUICE_TUS_STORE")))


def test_tus_with_an_unusable_state_directory_is_refused_before_it_creates_an_upload(tmp_path):
    endpoint = need_env("SLUICE_TUS_URL")
    source = tmp_path / "f.bin"
    source.write_bytes(os.urandom(100000))
    for state, words in unusable_states(tmp_path):
        before = tus_store_files()
        status, out, err = run("tus", str(source), endpoint, "--state", state)
        assert status == 1 and out == "" and one_line(err), (state, status, err)
        assert "resume state directory" in err and words in err, (state, err)
        assert "Error Domain" not in err and "UserInfo" not in err, err
        # Before: the upload was created, then the record could not be written: an orphan each run.
        assert tus_store_files() == before, (state, tus_store_files() - before)


def test_s3_cp_with_an_unusable_state_directory_says_why_in_a_few_words(s3, env, tmp_path):
    for state, words in unusable_states(tmp_path):
        status, out, err = sluice(env, "s3", "cp", "synthetic:11MiB", "s3://%s/%s" % (BUCKET, key()), "--part-size", "5MiB",
                                  "--state", state, timeout=60)
        assert status == 1 and out == "" and one_line(err), (state, status, err)
        assert words in err and "Error Domain" not in err and "UserInfo" not in err, (state, err)


def test_s3_cp_without_credentials_touches_nothing(env, tmp_path):
    # $HOME does not exist: before, sluice created $HOME/.cache/sluice/s3, then found no credentials.
    home = tmp_path / "no-such-home"
    bare = {k: v for k, v in env.items() if not k.startswith("AWS_") and k != "XDG_CACHE_HOME"}
    bare.update(HOME=str(home), AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null", AWS_ENDPOINT_URL=env["AWS_ENDPOINT_URL"])
    for spec in ["synthetic:11MiB", "synthetic:10"]:
        status, out, err = sluice(bare, "s3", "cp", spec, "s3://%s/%s" % (BUCKET, key()), "--part-size", "5MiB", timeout=60)
        assert status == 2 and out == "" and one_line(err) and "no AWS credentials" in err, (status, err)
        assert not home.exists(), list(home.rglob("*"))
    status, _, err = sluice(bare, "s3", "abort", "s3://%s/%s" % (BUCKET, key()), timeout=60)
    assert status != 0 and one_line(err) and "no AWS credentials" in err, (status, err)
    assert not home.exists()
    # A directory: before, $HOME was created, each file failed alone and the line said to run again.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"a")
    status, out, err = sluice(bare, "s3", "cp", "--recursive", str(tree), "s3://%s/p/" % BUCKET, timeout=60)
    assert status == 2 and out == "" and one_line(err) and "no AWS credentials" in err, (status, err)
    assert not home.exists(), list(home.rglob("*"))


def test_a_resume_record_that_is_a_symlink_to_dev_zero_is_named_as_such(s3, weed, env, tmp_path):
    source = tmp_path / "src.bin"
    source.write_bytes(os.urandom(11 * MIB))
    name = key()
    proxy = FaultProxy(weed[1])
    try:
        args = leave_a_resumable_upload(env, proxy, source, name)
    finally:
        proxy.close()
    records = resume_records(env)
    assert len(records) == 1, records
    os.unlink(records[0])
    os.symlink("/dev/zero", records[0])
    status, out, err = sluice(through_proxy(env, proxy), *args, timeout=30)
    assert status == 1 and one_line(err), (status, err)
    assert "not a regular file (a character device)" in err and "permission" not in err.lower(), err


# --- 10. Configuration files are read up to a cap ---


@pytest.mark.parametrize("which", ["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"])
def test_a_huge_aws_config_file_is_refused_in_one_line_naming_it(env, tmp_path, which):
    path = tmp_path / "huge"
    with open(path, "wb") as handle:
        handle.write(b"[default]\nregion = us-east-1\n# " + b"x" * (8 * MIB) + b"\n")
    status, out, err = sluice(dict(env, **{which: str(path)}), "s3", "cp", "synthetic:10", "s3://%s/%s" % (BUCKET, key()), timeout=20)
    assert status == 2 and out == "" and one_line(err), (status, err)
    assert str(path) in err and "larger than" in err, err


# --- 1. What a server sends is read with a bound ---


@pytest.mark.parametrize("action", ["part", "create", "complete", "put"])
def test_an_answer_longer_than_1_mib_fails_the_request_at_once(s3, weed, env, action):
    proxy = FaultProxy(weed[1])
    try:
        # 20 MiB of error document (a real one is a few hundred bytes): before, up to 16 MiB of each
        # was kept and the rest read (RSS 172 MiB at a 1 GB body), and a 5xx was retried.
        big = b"<Error><Code>InternalError</Code><Message>" + b"x" * (20 * MIB) + b"</Message></Error>"
        proxy.rewrite[action] = lambda s, h, b: (500, [("Content-Type", "application/xml")], big)
        spec = "synthetic:1000" if action == "put" else "synthetic:%d" % (11 * MIB)
        status, out, err = sluice(through_proxy(env, proxy), "s3", "cp", spec, "s3://%s/%s" % (BUCKET, key()), "--part-size", "5MiB",
                                  timeout=60)
        assert status == 1 and out == "" and one_line(err), (status, err)
        assert "longer than 1 MiB" in err, err
        # Not retried: each request went once (the three parts are in flight at once).
        assert all(count == 1 for count in proxy.attempts.values()), proxy.attempts
        assert action == "part" or proxy.actions.count(action) == 1, proxy.actions
    finally:
        proxy.close()


def test_list_parts_pages_that_never_end_stop_at_10000_parts(s3, weed, env, tmp_path):
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(11 * MIB))
    proxy = FaultProxy(weed[1])
    args = leave_a_resumable_upload(env, proxy, path, key())
    pages = []

    def endless(status, headers, body):
        # A page that is truncated and whose marker advances by 1,000 every time, for ever.
        pages.append(1)
        marker = 1000 * len(pages)
        document = ("<ListPartsResult><Bucket>%s</Bucket><IsTruncated>true</IsTruncated><PartNumberMarker>%d</PartNumberMarker>"
                    "<NextPartNumberMarker>%d</NextPartNumberMarker></ListPartsResult>" % (BUCKET, marker - 1000, marker))
        return 200, [("Content-Type", "application/xml")], document.encode()
    try:
        proxy.rewrite["list"] = endless
        status, out, err = sluice(through_proxy(env, proxy), *args, timeout=60)
    finally:
        proxy.close()
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "ListParts" in err and "10000 parts" in err and "server is wrong" in err, err
    assert len(pages) <= 10, len(pages)


def test_a_list_parts_answer_of_100_mb_fails_at_1_mib(s3, weed, env, tmp_path):
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(11 * MIB))
    proxy = FaultProxy(weed[1])
    args = leave_a_resumable_upload(env, proxy, path, key())
    try:
        huge = b"<ListPartsResult>" + b"<Part><PartNumber>1</PartNumber></Part>" * (100 * MIB // 40) + b"</ListPartsResult>"
        proxy.rewrite["list"] = lambda s, h, b: (200, [("Content-Type", "application/xml")], huge)
        status, out, err = sluice(through_proxy(env, proxy), *args, timeout=60)
    finally:
        proxy.close()
    assert status == 1 and one_line(err) and "ListParts" in err and "longer than 1 MiB" in err, (status, err)


def test_s3_abort_stops_following_list_multipart_uploads_pages_that_never_end(s3, weed, env):
    name = key()
    proxy = FaultProxy(weed[1])
    pages = []

    def endless(status, headers, body):
        pages.append(1)
        document = ("<ListMultipartUploadsResult><Bucket>%s</Bucket><IsTruncated>true</IsTruncated>"
                    "<NextKeyMarker>%s</NextKeyMarker><NextUploadIdMarker>u%d</NextUploadIdMarker></ListMultipartUploadsResult>"
                    % (BUCKET, name, len(pages)))
        return 200, [("Content-Type", "application/xml")], document.encode()
    try:
        proxy.rewrite["other"] = endless
        status, out, err = sluice(through_proxy(env, proxy), "s3", "abort", "s3://%s/%s" % (BUCKET, name), timeout=60)
    finally:
        proxy.close()
    # Before: it followed the pages for ever.
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "ListMultipartUploads" in err and "server is wrong" in err, err
    assert len(pages) <= 101, len(pages)


def test_s3_abort_counts_an_upload_the_listing_repeats_once(s3, weed, env):
    name = key()
    upload_id = s3.create_multipart_upload(Bucket=BUCKET, Key=name)["UploadId"]
    proxy = FaultProxy(weed[1])
    entry = "<Upload><Key>%s</Key><UploadId>%s</UploadId></Upload>" % (name, upload_id)
    document = ("<ListMultipartUploadsResult><Bucket>%s</Bucket><IsTruncated>false</IsTruncated>%s%s</ListMultipartUploadsResult>"
                % (BUCKET, entry, entry)).encode()
    try:
        proxy.rewrite["other"] = lambda s, h, b: (200, [("Content-Type", "application/xml")], document)
        status, out, err = sluice(through_proxy(env, proxy), "s3", "abort", "s3://%s/%s" % (BUCKET, name), timeout=60)
    finally:
        proxy.close()
    assert status == 0 and out == upload_id + "\n", (status, out, err)
    assert "aborted 1 upload of" in err, err


# --- 2. Nothing waits for ever: --stall-timeout on every command ---


class SilentServer:
    """Accepts connections on 127.0.0.1, reads what comes, never answers."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.connections = []
        self.closed = False

        def drain(connection):
            try:
                while connection.recv(1 << 16):
                    pass
            except OSError:
                pass

        def accept():
            while not self.closed:
                try:
                    connection, _ = self.listener.accept()
                except OSError:
                    return
                self.connections.append(connection)
                threading.Thread(target=drain, args=(connection,), daemon=True).start()
        threading.Thread(target=accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.listener.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def silent():
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


# Only tells an ended command from a hang; no test here asserts how long a command took: its
# line names the limit that ended it.
HANG_GUARD = 120


@pytest.mark.parametrize("command", ["s3 cp", "s3 abort", "tus", "upload"])
def test_a_server_that_never_answers_costs_the_stall_timeout_per_attempt(silent, tmp_path, command):
    source = tmp_path / "f.bin"
    source.write_bytes(b"y" * 1000)
    environment = dict(os.environ, AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1",
                       AWS_ENDPOINT_URL=silent.url, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
                       HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    args = {
        "s3 cp": ["s3", "cp", str(source), "s3://bucket/k", "--retries", "1"],
        "s3 abort": ["s3", "abort", "s3://bucket/k"],
        "tus": ["tus", str(source), silent.url + "/files/", "--retries", "1", "--state", str(tmp_path / "tus")],
        "upload": ["upload", str(source), silent.url + "/sink"],
    }[command]
    # Before: s3 and tus had no --stall-timeout (a usage error), and waited 60 s an attempt.
    status, out, err = run(*args, "--stall-timeout", "1", env=environment, timeout=HANG_GUARD)
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "timed out" in err and "127.0.0.1:%d" % silent.port in err, err
    # The limit that fired is the one given, not the 60 s default: libcurl's 1 s speed window,
    # or the answer's wait of 4 x the stall timeout once the request was sent.
    assert "the last 1 seconds" in err or "longer than 4 s (4 x the stall timeout)" in err, err
    # A stall is one failed attempt: retried as any other (libcurl's rate window adds a few
    # seconds to an attempt that sent a body).
    assert {"s3 cp": "after 2 attempts", "tus": "failed 2 times", "s3 abort": "after 6 attempts"}.get(command, "") in err, err


@pytest.mark.parametrize("kind", ["fifo", "stdin"])
def test_s3_cp_of_a_source_that_never_writes_ends_after_the_stall_timeout(env, tmp_path, kind):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # Holds stdin open and writes nothing, for longer than the hang guard.
    writer = subprocess.Popen(["sleep", str(HANG_GUARD + 60)], stdout=subprocess.PIPE)
    try:
        source = str(fifo) if kind == "fifo" else "-"
        status, out, err = run("s3", "cp", source, "s3://%s/%s" % (BUCKET, key()), "--stall-timeout", "1",
                               env=env, stdin=writer.stdout, timeout=HANG_GUARD)
    finally:
        writer.kill()
        writer.wait()
    # Before: no --stall-timeout for s3 cp, and it waited for ever.
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "produced nothing for 1 s" in err, err   # the stall timeout given ended it


@pytest.mark.parametrize("command", [["s3", "cp", "--help"], ["s3", "abort", "--help"], ["tus", "--help"], ["upload", "--help"]])
def test_every_command_that_talks_to_a_server_takes_the_stall_timeout(command):
    status, out, _ = run(*command)
    assert status == 0 and "--stall-timeout SECONDS" in out and "default 60" in out, out


# --- 6. Ctrl-C during CompleteMultipartUpload says what the server did ---


def interrupt_during_complete(env, weed, args, stdin_bytes=None, meanwhile=None):
    """Runs sluice through a proxy that holds the server's answer to Complete (the object is
    complete at the server) until sluice was interrupted; `meanwhile()` runs before the
    interrupt. Returns (status, stderr)."""
    completed, release = threading.Event(), threading.Event()

    def hold(status, headers, body):
        completed.set()
        release.wait(30)
        return status, headers, body
    proxy = FaultProxy(weed[1])
    proxy.rewrite["complete"] = hold
    proc = subprocess.Popen([sluice_bin(), *args], env=through_proxy(env, proxy), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if stdin_bytes is not None:
            proc.stdin.write(stdin_bytes)
        proc.stdin.close()
        assert completed.wait(60), proc.stderr.read()
        if meanwhile:
            meanwhile()
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=30)
        return status, proc.stderr.read().decode("utf-8", "replace")
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proxy.close()


@pytest.mark.parametrize("kind", ["file", "stdin"])
def test_ctrl_c_while_the_server_completes_says_the_object_is_stored(s3, weed, env, tmp_path, kind):
    data = os.urandom(11 * MIB)
    name = key()
    if kind == "file":
        path = tmp_path / "src.bin"
        path.write_bytes(data)
        args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"]
    else:
        args = ["s3", "cp", "-", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"]
    status, err = interrupt_during_complete(env, weed, args, stdin_bytes=data if kind == "stdin" else None)
    # Before: "interrupted; upload … is kept: run the same command again to resume" (file), or
    # "… was aborted" (stdin), while the object was in the bucket.
    assert status == 130 and one_line(err), (status, err)
    assert "is stored" in err and "kept" not in err and "was aborted" not in err, err
    assert s3.head_object(Bucket=BUCKET, Key=name)["ContentLength"] == 11 * MIB
    assert resume_records(env) == []


def test_ctrl_c_while_the_server_completes_an_object_then_deleted_says_it_may_have_completed(s3, weed, env, tmp_path):
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(11 * MIB))
    name = key()
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"]
    status, err = interrupt_during_complete(env, weed, args, meanwhile=lambda: s3.delete_object(Bucket=BUCKET, Key=name))
    assert status == 130 and one_line(err), (status, err)
    assert "may have completed" in err and "kept" not in err, err


# --- 11. Lines that are not quite true ---


def test_an_upload_gone_under_a_resumer_is_not_called_kept(s3, weed, env, tmp_path):
    # Another run resumed and completed the same upload first: this one's Complete gets NoSuchUpload.
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(11 * MIB))
    proxy = FaultProxy(weed[1])
    try:
        proxy.rewrite["complete"] = lambda s, h, b: (404, [("Content-Type", "application/xml")],
                                                     b"<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>")
        status, out, err = sluice(through_proxy(env, proxy), "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, key()),
                                  "--part-size", "5MiB", timeout=60)
    finally:
        proxy.close()
    # Before: "… NoSuchUpload …; upload X is kept: run the same command to resume".
    assert status == 1 and one_line(err), (status, err)
    assert "NoSuchUpload" in err and "is gone" in err and "kept" not in err and "resume" not in err, err
    assert resume_records(env) == []


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
@pytest.mark.parametrize("path", ["/auth", "/redirect-307"])
def test_a_body_that_cannot_be_replayed_counts_what_was_sent(transport, path):
    fault = need_env("SLUICE_FAULT_URL")
    args = ["upload", "-", fault + path, "--transport", transport] + (["-u", "user:secret"] if path == "/auth" else [])
    status, _, err = run(*args, input_bytes=os.urandom(3 * MIB))
    # Before: "(0 of unknown bytes sent)" after the whole body had been sent once.
    assert status == 1 and one_line(err), (status, err)
    assert "cannot be replayed" in err and "(%d of unknown bytes sent)" % (3 * MIB) in err, err


def test_a_part_reset_after_100_continue_has_no_status_and_one_attempt(s3, weed, env):
    proxy = FaultProxy(weed[1])
    try:
        proxy.reset_part(1, after=MIB, times=None)
        status, _, err = sluice(through_proxy(env, proxy), "s3", "cp", "synthetic:%d" % (11 * MIB), "s3://%s/%s" % (BUCKET, key()),
                                "--part-size", "5MiB", "--retries", "0", timeout=60)
    finally:
        proxy.close()
    # Before: "failed after 1 attempts (status 100)": the interim answer counted as the status.
    assert status == 1 and one_line(err), (status, err)
    assert "status 100" not in err and "1 attempts" not in err and "after 1 attempt " in err, err


def test_s3_cp_whose_stdout_fails_says_the_object_was_stored(s3, env):
    name = key()
    proc = subprocess.run(["sh", "-c", 'exec "$@" >/dev/full', "sh", sluice_bin(), "s3", "cp", "synthetic:1000", "s3://%s/%s" % (BUCKET, name)],
                          env=env, capture_output=True, timeout=60)
    err = proc.stderr.decode()
    # Before: only "cannot write to stdout: No space left on device".
    assert proc.returncode == 1 and one_line(err), (proc.returncode, err)
    assert "uploaded s3://%s/%s" % (BUCKET, name) in err and "cannot write to stdout" in err, err
    assert s3.head_object(Bucket=BUCKET, Key=name)["ContentLength"] == 1000


@pytest.mark.parametrize("change", [["--part-size", "6MiB"], ["--checksum", "sha256"], ["--checksum", "none"]])
def test_a_rerun_with_other_part_size_or_checksum_is_refused_not_silently_resumed(s3, weed, env, tmp_path, change):
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(13 * MIB))
    proxy = FaultProxy(weed[1])
    try:
        args = leave_a_resumable_upload(env, proxy, path, key())
        sent_before = len(proxy.actions)
        status, out, err = sluice(through_proxy(env, proxy), *args, *change, timeout=60)
        # Before: it resumed with the recorded part size and checksum, saying nothing.
        assert status == 1 and out == "" and one_line(err), (status, err)
        assert "was started with" in err and "--restart" in err and "kept" not in err, err
        assert proxy.actions[sent_before:] == [], proxy.actions[sent_before:]   # refused before any request
        # --restart starts again with the new ones.
        status, _, err = sluice(through_proxy(env, proxy), *args, *change, "--restart", timeout=60)
        assert status == 0, err
    finally:
        proxy.close()


class EndlessAnswer:
    """Answers every request 500 with a chunked body that never ends (until the client goes)."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(500)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                block = b"%x\r\n%s\r\n" % (1 << 16, b"e" * (1 << 16))
                try:
                    while True:
                        self.wfile.write(block)
                except OSError:
                    pass
            do_OPTIONS = do_POST = do_HEAD = do_PATCH = do_GET = do_PUT = answer

            def log_message(self, *args):
                pass
        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()


def test_a_tus_answer_that_never_ends_fails_at_1_mib(tmp_path):
    source = tmp_path / "f.bin"
    source.write_bytes(b"z" * 1000)
    server = EndlessAnswer()
    try:
        # Before: the answer was read (16 MiB kept, the rest dropped) for as long as it came: no end.
        status, out, err = run("tus", str(source), server.url + "/files/", "--retries", "0",
                               "--state", str(tmp_path / "tus"), timeout=HANG_GUARD)
    finally:
        server.close()
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "longer than 1 MiB" in err, err   # the bound on an answer ended it


def test_a_presigned_part_answered_with_20_mib_fails_at_1_mib(s3, weed, env, tmp_path):
    proxy = FaultProxy(weed[1])
    try:
        through = through_proxy(env, proxy)
        name = key()
        status, out, err = sluice(through, "s3", "presign", "s3://%s/%s" % (BUCKET, name), "--multipart", "--size", str(11 * MIB),
                                  "--part-size", "5MiB")
        assert status == 0, err
        plan = tmp_path / "plan.json"
        plan.write_text(out)
        big = b"<Error><Code>InternalError</Code><Message>" + b"x" * (20 * MIB) + b"</Message></Error>"
        proxy.rewrite["part"] = lambda s, h, b: (500, [("Content-Type", "application/xml")], big)
        client = {k: v for k, v in env.items() if not k.startswith("AWS_")}
        # Before: 64 KiB kept, the rest read and dropped, and the 500 retried: 20 MiB an attempt.
        status, out, err = sluice(client, "upload", "--parts", str(plan), "synthetic:%d" % (11 * MIB), "--progress", "none",
                                  "--stall-timeout", "10", timeout=60)
    finally:
        proxy.close()
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "longer than 1 MiB" in err, err
