"""Hostile input, round two (issue 18): what a server sends is read with a bound, nothing waits
for ever, no password reaches a message, file-system errors are said in Sluice's words, nothing
is done before a refusal, and the lines say what is true. Every case ends by itself quickly:
the right result, or one `sluice: ...` line and a non-zero status.

Against the real peers (SeaweedFS through test_s3_cli.py's fixtures, tuspyserver, the fault
server) and, where a server must lie, Tests/Peers/s3_proxy.py's FaultProxy or a small server here."""

import os
import subprocess
import sys
import urllib.parse

import pytest

from conftest import REPO, need_env, sluice_bin
from test_s3_cli import BUCKET, MIB, env, key, s3, sluice, weed  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy  # noqa: E402

SECRET = "SECRETPW"


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def run(*args, env=None, stdin=None, input_bytes=None, timeout=60):
    proc = subprocess.run([sluice_bin(), *args], env=env, stdin=stdin, input=input_bytes, capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


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


def test_a_resume_record_that_is_a_symlink_to_dev_zero_is_named_as_such(s3, env, tmp_path):
    source = tmp_path / "src.bin"
    source.write_bytes(os.urandom(11 * MIB))
    name = key()
    proxy = FaultProxy(need_weed_port(env))
    try:
        args = leave_a_resumable_upload(env, proxy, source, name)
    finally:
        proxy.close()
    records = [os.path.join(root, f) for root, _, files in os.walk(env["XDG_CACHE_HOME"]) for f in files if f.endswith(".json")]
    assert len(records) == 1, records
    os.unlink(records[0])
    os.symlink("/dev/zero", records[0])
    status, out, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port), *args, timeout=30)
    assert status == 1 and one_line(err), (status, err)
    assert "not a regular file (a character device)" in err and "permission" not in err.lower(), err


def need_weed_port(env):
    return urllib.parse.urlsplit(env["AWS_ENDPOINT_URL"]).port


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


def through_proxy(env, proxy):
    return dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port)


def leave_a_resumable_upload(env, proxy, path, name):
    """Runs `s3 cp` once through `proxy`, refusing Complete: the parts are at the server and the
    resume record (keyed by the proxy's endpoint) is kept. Returns the arguments to run it again."""
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"]
    proxy.rewrite["complete"] = lambda s, h, b: (403, [("Content-Type", "application/xml")],
                                                 b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>")
    status, _, err = sluice(through_proxy(env, proxy), *args, timeout=60)
    assert status == 1 and "AccessDenied" in err, err
    del proxy.rewrite["complete"]
    return args


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
        import socket
        import threading
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


def timed(*args, **kwargs):
    import time
    started = time.monotonic()
    result = run(*args, **kwargs)
    return result + (time.monotonic() - started,)


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
    status, out, err, seconds = timed(*args, "--stall-timeout", "1", env=environment, timeout=60)
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "timed out" in err and "127.0.0.1:%d" % silent.port in err, err
    # A stall is one failed attempt: retried as any other (libcurl's rate window adds a few
    # seconds to an attempt that sent a body).
    assert {"s3 cp": "after 2 attempts", "tus": "failed 2 times", "s3 abort": "after 6 attempts"}.get(command, "") in err, err
    assert seconds < 30, seconds


@pytest.mark.parametrize("kind", ["fifo", "stdin"])
def test_s3_cp_of_a_source_that_never_writes_ends_after_the_stall_timeout(env, tmp_path, kind):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE)   # holds stdin open, writes nothing
    try:
        source = str(fifo) if kind == "fifo" else "-"
        status, out, err, seconds = timed("s3", "cp", source, "s3://%s/%s" % (BUCKET, key()), "--stall-timeout", "1",
                                          env=env, stdin=writer.stdout, timeout=30)
    finally:
        writer.kill()
        writer.wait()
    # Before: no --stall-timeout for s3 cp, and it waited for ever.
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "produced nothing for 1 s" in err, err
    assert seconds < 10, seconds


@pytest.mark.parametrize("command", [["s3", "cp", "--help"], ["s3", "abort", "--help"], ["tus", "--help"], ["upload", "--help"]])
def test_every_command_that_talks_to_a_server_takes_the_stall_timeout(command):
    status, out, _ = run(*command)
    assert status == 0 and "--stall-timeout SECONDS" in out and "default 60" in out, out
