"""`sluice s3 cp --recursive DIR s3://BUCKET/PREFIX/`: a tree as one resumable job against
SeaweedFS. Every object is read back and compared by SHA-256; the keys are the ones
`aws s3 cp --recursive --dryrun` makes for the same tree (the AWS CLI is the independent
implementation); kill -9 mid-job, then the same command, ends with the same bucket and does not
send again what the job recorded as done."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import REPO, sluice_bin
from test_s3_cli import BUCKET, MIB, env, fault_proxy, s3, sluice, weed  # noqa: F401 (fixtures)


def make_tree(root, small=120, big=40 * MIB):
    """Nested directories, names with spaces, unicode, %, +, #; an empty file; a big file for a
    multipart upload; a symlink to a file and one to a directory; a FIFO (skipped)."""
    files = {}

    def put(relative, data):
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        files[relative] = hashlib.sha256(data).hexdigest()

    for index in range(small):
        folder = ["a", "a/deeper", "sub dir", "ü nïcode", "x%+#y"][index % 5]
        put("%s/file %03d %s.txt" % (folder, index, "%+#"), os.urandom(1 + index * 37))
    put("empty", b"")
    put("big/blob.bin", os.urandom(big))
    os.symlink("a", os.path.join(root, "link to a"))
    for relative in list(files):
        if relative.startswith("a/"):
            files["link to a/" + relative[2:]] = files[relative]
    os.symlink("empty", os.path.join(root, "link to empty"))
    files["link to empty"] = files["empty"]
    os.mkfifo(os.path.join(root, "a fifo"))
    return files


def bucket_listing(s3, prefix):
    """{key below prefix: sha256} of every object under prefix."""
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
            found[item["Key"][len(prefix):]] = hashlib.sha256(body).hexdigest()
    return found


def aws_cli_keys(root, prefix):
    request = os.path.join(os.environ.get("TMPDIR", "/tmp"), "aws-%s.json" % uuid.uuid4().hex[:8])
    with open(request, "w") as handle:
        json.dump({"root": root, "destination": "s3://%s/%s" % (BUCKET, prefix)}, handle)
    out = subprocess.run([sys.executable, os.path.join(REPO, "Tests", "Peers", "awscli_walk_peer.py"), request],
                         capture_output=True, check=True, timeout=120).stdout
    return sorted(key for _, key in json.loads(out)["uploads"])


def test_a_tree_is_byte_exact_with_the_aws_cli_keys(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    files = make_tree(root)
    prefix = "rec-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "--recursive", root, "s3://%s/%s" % (BUCKET, prefix), "--progress", "none")
    assert status == 0, err
    # One `upload: PATH to URL` line a file, as the AWS CLI prints it.
    told = [line.split(" to s3://%s/%s" % (BUCKET, prefix)) for line in out.splitlines()]
    assert all(len(parts) == 2 and parts[0].startswith("upload: ") for parts in told), out
    assert sorted(key for _, key in told) == sorted(files), out
    assert "a fifo: is a FIFO, skipped" in err
    assert "%d files sent" % len(files) in err, err
    assert bucket_listing(s3, prefix) == files
    assert sorted(prefix + key for key in files) == aws_cli_keys(root, prefix)


def test_filters_follow_the_aws_cli(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    files = make_tree(root, small=20, big=1)
    prefix = "filt-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--exclude", "*",
                              "--include", "*.txt", "--exclude", "sub dir/*", "--no-follow-symlinks", "--progress", "none")
    assert status == 0, err
    expected = {k: v for k, v in files.items() if k.endswith(".txt") and not k.startswith("sub dir/") and not k.startswith("link")}
    assert bucket_listing(s3, prefix) == expected


def journal_lines(state):
    total = 0
    for folder, _, names in os.walk(state):
        for name in names:
            if name.endswith(".journal"):
                with open(os.path.join(folder, name), "rb") as handle:
                    total += handle.read().count(b"\n") - 1
    return total


@pytest.mark.parametrize("recorded", [0, 5, 40, 100])
def test_kill_9_then_the_same_command_finishes_the_job(s3, fault_proxy, tmp_path, recorded):
    """SIGKILL once the job has recorded `recorded` files (0: while the first requests are in
    flight, the big file's parts among them), then the same command: the bucket is the tree,
    and the files recorded before the kill are not sent again. The gate: the proxy holds the big
    file's CompleteMultipartUpload (never forwarded), so the job cannot end before the kill
    however busy the machine is."""
    proxy, env = fault_proxy
    release = threading.Event()

    def hold_complete(action, headers):
        if action != "complete":
            return None
        release.wait(300)
        return 503, "SlowDown", "held by the test until sluice was killed"
    proxy.policy = hold_complete
    root = str(tmp_path / "tree")
    files = make_tree(root, small=150, big=24 * MIB)
    prefix = "kill-%s/" % uuid.uuid4().hex[:8]
    state = str(tmp_path / "state")
    args = [sluice_bin(), "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--state", state, "--progress", "none",
            "--concurrency", "4", "--part-size", "5MiB", "--limit-rate", "8M"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120   # a hang guard: the job cannot end while Complete is held
        while journal_lines(state) < max(1, recorded) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode("utf-8", "replace")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    proxy.wait_idle()
    proxy.policy = None
    done_before = journal_lines(state)
    assert done_before >= recorded
    status, out, err = sluice(env, "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--state", state,
                              "--progress", "none", "--concurrency", "4", "--part-size", "5MiB")
    assert status == 0, err
    assert "%d unchanged since a run before" % done_before in err, err
    assert bucket_listing(s3, prefix) == files
    assert journal_lines(state) == 0, "the record goes when the job completes"


def test_kill_9_during_complete_multipart_upload(s3, fault_proxy, tmp_path):
    """The server completes the big file's upload, and sluice is killed before it hears so:
    the same command finds the upload gone (NoSuchUpload), sends that file again, and the
    bucket is the tree."""
    proxy, env = fault_proxy
    root = str(tmp_path / "tree")
    files = make_tree(root, small=10, big=12 * MIB)
    prefix = "complete-%s/" % uuid.uuid4().hex[:8]
    state = str(tmp_path / "state")
    held, release = threading.Event(), threading.Event()

    def hold(status, headers, body):
        held.set()
        release.wait(60)
        return status, headers, body

    proxy.rewrite["complete"] = hold
    args = ["s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--state", state, "--progress", "none", "--part-size", "5MiB"]
    proc = subprocess.Popen([sluice_bin(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert held.wait(60), "CompleteMultipartUpload never came"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        release.set()
    del proxy.rewrite["complete"]
    status, out, err = sluice(env, *args)
    assert status == 0, err
    assert bucket_listing(s3, prefix) == files


def test_a_file_that_cannot_go_fails_alone_and_the_rerun_tries_only_it(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    files = make_tree(root, small=10, big=1)
    long_dir = os.path.join(root, *(["d" * 250] * 4))
    os.makedirs(long_dir)
    with open(os.path.join(long_dir, "too long"), "wb") as handle:
        handle.write(b"x")
    prefix = "fail-%s/" % uuid.uuid4().hex[:8]
    state = str(tmp_path / "state")
    for run in range(2):
        status, out, err = sluice(env, "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--state", state, "--progress", "none")
        assert status == 1, err
        lines = [line for line in err.splitlines() if "too long" in line]
        assert len(lines) == 1 and "1024" in lines[0], err
        sent = 0 if run else len(files)
        assert "%d files sent" % sent in err or "%d file sent" % sent in err, err
        if run:
            assert "%d unchanged since a run before" % len(files) in err, err
        assert "1 failed" in err
    assert bucket_listing(s3, prefix) == files


def open_to_nobody(base):
    """Makes everything below `base` readable by anyone, puts a copy of sluice there and a state
    directory; returns (binary, state)."""
    import shutil
    for folder, dirs, names in os.walk(base):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    binary = os.path.join(base, "sluice")
    shutil.copy(sluice_bin(), binary)
    os.chmod(binary, 0o755)
    state = os.path.join(base, "state")
    os.mkdir(state)
    return binary, state


def as_nobody(command, state):
    """`command` run as `nobody` when this is root (root reads every directory), `state` its own."""
    import shutil
    if os.geteuid() != 0:
        return command
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: every directory is readable")
    os.chown(state, 65534, 65534)
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command


def test_an_unreadable_directory_fails_alone_and_the_rerun_sends_it(s3, env):
    """A directory the process may not list: one line naming it, the other files sent, exit 1;
    made readable, the same command sends only its file. Root reads everything, so as root the
    job runs as `nobody` (setpriv), from a directory of its own under /tmp that nobody can reach."""
    import shutil
    import stat
    import tempfile
    base = tempfile.mkdtemp(prefix="sluice-unreadable-", dir="/tmp")
    try:
        os.chmod(base, 0o755)
        root = os.path.join(base, "tree")
        files = {}
        for relative in ["a/one", "locked/two", "z/three"]:
            os.makedirs(os.path.join(root, os.path.dirname(relative)), exist_ok=True)
            data = os.urandom(1000 + len(files))
            with open(os.path.join(root, relative), "wb") as handle:
                handle.write(data)
            files[relative] = hashlib.sha256(data).hexdigest()
        binary, state = open_to_nobody(base)
        prefix = "unreadable-%s/" % uuid.uuid4().hex[:8]
        command = [binary, "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--state", state, "--progress", "none"]
        command = as_nobody(command, state)
        run_env = dict(env, HOME=state, XDG_CACHE_HOME=state)
        locked = os.path.join(root, "locked")
        os.chmod(locked, 0)
        proc = subprocess.run(command, env=run_env, capture_output=True, timeout=120)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 1, err
        lines = [line for line in err.splitlines() if "locked" in line]
        assert lines == ["sluice: s3 cp: %s: permission denied" % locked], err
        assert "2 files sent" in err and "1 failed" in err, err
        assert bucket_listing(s3, prefix) == {k: v for k, v in files.items() if not k.startswith("locked/")}
        os.chmod(locked, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        proc = subprocess.run(command, env=run_env, capture_output=True, timeout=120)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 0, err
        assert "1 file sent" in err and "2 unchanged since a run before" in err, err
        assert bucket_listing(s3, prefix) == files
    finally:
        for folder, dirs, _ in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("case", ["missing", "file", "include-without-r", "state-is-a-file", "absurd-rate", "damaged-record"])
def test_bad_input_is_one_line(s3, env, tmp_path, case):
    root = str(tmp_path / "tree")
    os.makedirs(root)
    with open(os.path.join(root, "f"), "wb") as handle:
        handle.write(b"f")
    target = "s3://%s/bad-%s/" % (BUCKET, uuid.uuid4().hex[:8])
    state = str(tmp_path / "state")
    if case == "missing":
        status, out, err = sluice(env, "s3", "cp", "-r", root + "/nowhere", target)
        assert status == 2
    elif case == "file":
        status, out, err = sluice(env, "s3", "cp", "-r", root + "/f", target)
        assert status == 2
    elif case == "include-without-r":
        status, out, err = sluice(env, "s3", "cp", root + "/f", target + "f", "--include", "*")
        assert status == 2
    elif case == "state-is-a-file":
        with open(state, "wb") as handle:
            handle.write(b"not a directory")
        status, out, err = sluice(env, "s3", "cp", "-r", root, target, "--state", state, "--progress", "none")
        assert status == 1 and "job record" in err, err
        bucket, _, prefix = target[len("s3://"):].partition("/")
        assert s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("KeyCount", 0) == 0, "nothing sent before the refusal"
    elif case == "absurd-rate":
        status, out, err = sluice(env, "s3", "cp", "-r", root, target, "--limit-rate", "0")
        assert status == 2
    else:
        # A job that fails leaves its record; damage it; the next run refuses it, --restart forgets it.
        os.makedirs(os.path.join(root, *(["d" * 250] * 5)))
        with open(os.path.join(root, *(["d" * 250] * 5), "x"), "wb") as handle:
            handle.write(b"x")
        status, _, err = sluice(env, "s3", "cp", "-r", root, target, "--state", state, "--progress", "none")
        assert status == 1, err
        for folder, _, names in os.walk(state):
            for name in names:
                if name.endswith(".journal"):
                    with open(os.path.join(folder, name), "ab") as handle:
                        handle.write(b"garbage\n")
        status, out, err = sluice(env, "s3", "cp", "-r", root, target, "--state", state, "--progress", "none")
        assert status == 1 and "damaged" in err and "--restart" in err, err
        assert len(err.strip().splitlines()) == 1, err
        status, out, err = sluice(env, "s3", "cp", "-r", root, target, "--state", state, "--progress", "none", "--restart")
        assert status == 1 and "1 failed" in err, err
        return
    assert len(err.strip().splitlines()) == 1, err
    assert out == ""


def test_progress_json_counts_files_and_bytes(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    files = make_tree(root, small=30, big=6 * MIB)
    prefix = "progress-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--progress", "json")
    assert status == 0, err
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert records, err
    last = records[-1]
    assert last["files_done"] == last["files_total"] == len(files)
    assert last["bytes_sent"] == last["total_bytes"] == sum(os.path.getsize(os.path.join(root, k)) for k in files)
    done = [r["files_done"] for r in records]
    assert done == sorted(done), "files done never goes back"
    # Throttled: at most one record every 100 ms, plus the last.
    assert len(records) <= last["elapsed"] * 10 + 2, (len(records), last["elapsed"])


def test_a_tree_over_urlsession_is_byte_exact(s3, env, tmp_path):
    """`--transport urlsession`: the same job on URLSession (Linux), each body with its length
    (parts of 5 MiB); a part above its 8 MiB limit is refused with one line, nothing sent."""
    root = str(tmp_path / "tree")
    files = make_tree(root, small=30, big=12 * MIB)
    prefix = "rec-us-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), "--transport", "urlsession",
                              "--part-size", "5MiB", "--progress", "none")
    assert status == 0, err
    assert "%d files sent" % len(files) in err, err
    assert bucket_listing(s3, prefix) == files

    big = str(tmp_path / "big.bin")
    with open(big, "wb") as handle:
        handle.write(os.urandom(9 * MIB + 1))
    key = "us-big-%s.bin" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", big, "s3://%s/%s" % (BUCKET, key), "--transport", "urlsession",
                              "--part-size", "9MiB", "--progress", "none")
    assert status != 0
    assert "up to 8388608 bytes" in err and "curl transport" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=key)


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs of its own (mounting needs root), unmounted after."""
    path = tmp_path / "disk"
    path.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield path
    subprocess.run(["umount", str(path)], check=True)


def test_a_full_disk_under_the_record_stops_the_job_and_fails_no_stored_file(s3, env, tmp_path, small_disk):
    root = tmp_path / "tree"
    root.mkdir()
    for index in range(200):
        (root / ("file-%03d" % index)).write_bytes(b"a")
    # The disk full but for two pages: the record's lock file and its header take one each, and
    # its lines fill the second.
    with open(small_disk / "reserve", "wb") as handle:
        handle.write(b"\0" * 8192)
    filler = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(filler, b"\0" * 4096) > 0:
            pass
    except OSError:
        pass
    finally:
        os.close(filler)
    os.unlink(small_disk / "reserve")
    prefix = "full-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "--recursive", str(root), "s3://%s/%s" % (BUCKET, prefix),
                              "--state", str(small_disk), "--progress", "none")
    assert status == 1, err
    assert err.count("\n") == 1, err
    assert "No space left on device: the job stopped starting files;" in err, err
    assert " 0 failed;" in err and "make room for the record and run the same command again" in err, err
    sent = int(re.search(r"; (\d+) files sent, ", err).group(1))
    stored = bucket_listing(s3, prefix)
    assert 1 < sent < 200 and len(stored) == sent, (sent, len(stored))
    # Each file stored is told on stdout, and only those.
    assert sorted(line.rsplit("/", 1)[1] for line in out.splitlines()) == sorted(stored), out


def test_a_symlink_into_proc_is_named_once_and_skipped(s3, env, tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.txt").write_bytes(b"a")
    os.symlink("/proc/self/status", root / "status")
    prefix = "proc-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "--recursive", str(root), "s3://%s/%s" % (BUCKET, prefix), "--progress", "none")
    assert status == 0, err
    assert err.count(str(root / "status")) == 1, err
    assert "status: is a file of /proc or /sys (its size is not its length), skipped" in err, err
    assert list(bucket_listing(s3, prefix)) == ["a.txt"]


def closed_port():
    """A port on 127.0.0.1 nothing listens on (bound, then closed)."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_run_again_is_said_only_for_failures_that_may_pass(tmp_path):
    # A key over S3's 1,024 bytes fails the same way every run; a refused connection may pass.
    # The summary tells them apart instead of asking to run again for both.
    deep = tmp_path / "tree" / ("a" * 250) / ("b" * 250) / ("c" * 250) / ("d" * 250)
    deep.mkdir(parents=True)
    (deep / ("e" * 100)).write_bytes(b"long key\n")
    (tmp_path / "tree" / "ok.txt").write_bytes(b"fine\n")
    fake = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1",
                HOME=str(tmp_path))
    url = "http://127.0.0.1:%d" % closed_port()

    def cp():
        proc = subprocess.run([sluice_bin(), "s3", "cp", "-r", str(tmp_path / "tree"), "s3://bucket/p/", "--endpoint-url", url,
                               "--retries", "0", "--progress", "none", "--state", str(tmp_path / "state")],
                              env=fake, capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stderr.splitlines()[-1]

    status, last = cp()
    assert status == 1, last
    assert "2 failed" in last and "run the same command again to send the 1 that failed for a reason that may pass" in last, last
    assert "the 1 other would fail again as it is" in last, last
    (tmp_path / "tree" / "ok.txt").unlink()
    status, last = cp()
    assert status == 1, last
    assert "1 failed" in last and "it would fail again as it is" in last and "send the" not in last, last
