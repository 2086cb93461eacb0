"""An http(s) SOURCE (issue 38): nginx's static files as the real source (206, ETag, If-Match),
SeaweedFS and nginx as destinations, SHA-256 checked at the server; the fault server's
/source/ paths for what nginx will not do (a source that changes mid-copy, a 200 to a Range,
a short range, a reset, a redirect to another origin, no validator)."""

import hashlib
import json
import os
import random
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import uuid

import pytest

from conftest import need_env, run, sha256_file, sluice_bin, stop
from test_s3_cli import BUCKET, env, s3, sluice, weed  # noqa: F401  (fixtures)

MIB = 1 << 20
SIZE = 20 * MIB  # the fault server's /source/ default: three 8 MiB windows, so a change lands mid-copy


def source_sha(seed=0, size=SIZE):
    return hashlib.sha256(random.Random(seed).randbytes(size)).hexdigest()


def fault_requests(fault_url):
    with urllib.request.urlopen(fault_url + "/requests") as answer:
        return json.load(answer)


def sink_entries(fault_url, name):
    return [entry for entry in fault_requests(fault_url) if entry["path"] == "/sink/" + name]


def copy_to_sink(fault_url, mode, query="", *options):
    """`sluice upload` of /source/NAME?mode=MODE&QUERY to /sink/NAME: (name, status, stdout, stderr)."""
    name = "%s-%s" % (mode, uuid.uuid4().hex[:8])
    source = "%s/source/%s?mode=%s%s" % (fault_url, name, mode, query)
    status, out, err = run("upload", source, fault_url + "/sink/" + name, "-X", "PUT", "--progress", "none", *options)
    return name, status, out, err


def put_file(nginx, size, seed):
    url, root = nginx
    name = "src-%s.bin" % uuid.uuid4().hex[:8]
    os.makedirs(os.path.join(root, "dav"), exist_ok=True)
    path = os.path.join(root, "dav", name)
    with open(path, "wb") as handle:
        handle.write(random.Random(seed).randbytes(size))
    return url + "/dav/" + name, path


def test_an_http_source_is_copied_byte_exact_to_nginx(nginx):
    source, path = put_file(nginx, 19 * MIB + 333, 3)
    target = nginx[0] + "/dav/copy-%s.bin" % uuid.uuid4().hex[:8]
    status, out, err = run("upload", source, target, "-X", "PUT", "--progress", "none", "--source-header", "X-Token: abcdefgh12")
    assert status == 0, err
    stored = os.path.join(nginx[1], "dav", target.rsplit("/", 1)[1])
    assert sha256_file(stored) == sha256_file(path)


def test_an_http_source_is_copied_byte_exact_to_s3_in_parts(nginx, s3, env):  # noqa: F811
    source, path = put_file(nginx, 37 * MIB + 5, 4)
    key = "remote/%s.bin" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", source, "s3://%s/%s" % (BUCKET, key), "--part-size", "8MiB", "--progress", "none")
    assert status == 0, err
    assert "in 5 parts" in err, err
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha256_file(path)


@pytest.mark.parametrize("mode, after, says", [
    ("412", 1, "changed since it was opened: 412"),
    ("etag", 1, 'its ETag is now "v2", was "v1"'),
    ("200", 0, "answered 200 (the whole object)"),
    ("short", 0, "bytes to a request for the 8388608 of bytes 0-8388607"),
])
def test_a_source_that_changes_or_misanswers_fails_once_and_clearly(fault_url, mode, after, says):
    name, status, out, err = copy_to_sink(fault_url, mode, "&after=%d" % after)
    assert status == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], err
    # Nothing complete arrived: the upload stopped at the source's error.
    assert not [entry for entry in sink_entries(fault_url, name) if entry["complete"] and entry["bytes"] == SIZE]


def test_a_changed_source_leaves_no_object_in_s3(fault_url, s3, env):  # noqa: F811
    name = "s3-412-%s" % uuid.uuid4().hex[:8]
    key = "remote/%s.bin" % name
    source = "%s/source/%s?mode=412&after=1" % (fault_url, name)
    status, out, err = sluice(env, "s3", "cp", source, "s3://%s/%s" % (BUCKET, key), "--part-size", "5MiB", "--concurrency", "1",
                              "--progress", "none")
    assert status == 1, err
    assert "412" in err and "changed" in err, err
    with pytest.raises(Exception):
        s3.head_object(Bucket=BUCKET, Key=key)


def test_a_reset_mid_range_is_read_again_from_the_byte_reached(fault_url):
    name, status, out, err = copy_to_sink(fault_url, "reset", "&after=1")
    assert status == 0, err
    assert json.loads(out)["sha256"] == source_sha()
    gets = [entry for entry in fault_requests(fault_url) if entry["path"] == "/source/" + name and entry["method"] == "GET"]
    # Three windows, and the one that was reset asked again from where it stopped, not from its start.
    assert len(gets) == 4
    reset, again = gets[1]["headers"]["range"], gets[2]["headers"]["range"]
    assert reset != again and reset.split("-")[1] == again.split("-")[1], (reset, again)
    assert all(entry["headers"]["if-match"] == '"v1"' for entry in gets)


def test_a_redirect_to_another_origin_drops_the_source_headers(fault_url):
    there_name = "there-%s" % uuid.uuid4().hex[:8]
    other = fault_url.replace("127.0.0.1", "localhost") + "/source/" + there_name
    name, status, out, err = copy_to_sink(fault_url, "redirect", "&to=" + urllib.parse.quote(other, safe=""),
                                          "--source-header", "X-Token: secret-token-1")
    assert status == 0, err
    assert json.loads(out)["sha256"] == source_sha()
    entries = fault_requests(fault_url)
    home = [entry for entry in entries if entry["path"] == "/source/" + name]
    there = [entry for entry in entries if entry["path"] == "/source/" + there_name]
    assert home and all(entry["headers"].get("x-token") == "secret-token-1" for entry in home)
    assert len(there) >= 4 and all("x-token" not in entry["headers"] for entry in there)


def test_a_source_without_a_validator_is_copied_and_said_once(fault_url):
    _, status, out, err = copy_to_sink(fault_url, "noetag")
    assert status == 0, err
    assert json.loads(out)["sha256"] == source_sha()
    assert err.count("names no strong ETag or Last-Modified") == 1, err


@pytest.mark.parametrize("refusal", [405, 403, 501])
def test_a_source_that_refuses_head_is_sized_by_a_get_of_its_first_byte(fault_url, refusal):
    name, status, out, err = copy_to_sink(fault_url, "ok", "&head=%d" % refusal)
    assert status == 0, err
    assert json.loads(out)["sha256"] == source_sha()
    asked = [entry for entry in fault_requests(fault_url) if entry["path"] == "/source/" + name]
    assert [entry["method"] for entry in asked[:2]] == ["HEAD", "GET"], asked
    assert asked[1]["headers"]["range"] == "bytes=0-0"
    # The ranges are pinned by the ETag the ranged answer named.
    assert len(asked) == 5 and all(entry["headers"].get("if-match") == '"v1"' for entry in asked[2:]), asked


def test_a_source_that_refuses_head_and_answers_200_is_sized_by_its_content_length(fault_url):
    name, status, out, err = copy_to_sink(fault_url, "first200", "&head=405")
    assert status == 0, err
    assert json.loads(out)["sha256"] == source_sha()


def test_an_empty_source_that_refuses_head_is_sized_by_its_416(fault_url):
    name, status, out, err = copy_to_sink(fault_url, "ok", "&head=405&size=0")
    assert status == 0, err
    assert json.loads(out)["sha256"] == hashlib.sha256(b"").hexdigest()


def test_a_source_that_refuses_head_and_names_no_length_is_one_line(fault_url):
    name, status, out, err = copy_to_sink(fault_url, "ok", "&head=405&total=*")
    assert status == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "names no length (Content-Range: bytes 0-0/*)" in lines[0], err
    assert not sink_entries(fault_url, name)


def test_a_source_header_with_a_line_break_is_refused(fault_url):
    status, out, err = run("upload", fault_url + "/source/x", fault_url + "/sink/x", "--source-header", "X-A: b\r\nEvil: 1")
    assert status == 2 and len(err.strip().splitlines()) == 1 and "--source-header" in err, err


def test_an_http_source_goes_over_tus_byte_exact(nginx, tmp_path):
    endpoint, store = need_env("SLUICE_TUS_URL"), need_env("SLUICE_TUS_STORE")
    source, path = put_file(nginx, 9 * MIB + 17, 5)
    status, out, err = run("tus", source, endpoint, "--state", str(tmp_path), "--progress", "none")
    assert status == 0, err
    upload_url = out.decode().strip()
    assert sha256_file(os.path.join(store, upload_url.rstrip("/").rsplit("/", 1)[-1])) == sha256_file(path)


def held_parts(s3, key, bucket=BUCKET):
    uploads = [u for u in s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads", []) if u["Key"] == key]
    return sum(len(s3.list_parts(Bucket=bucket, Key=key, UploadId=u["UploadId"]).get("Parts", [])) for u in uploads)


def journaled_parts(env):
    """The part numbers the parts journals in the run's state directory name (every one of them
    accepted by S3 before its line was written)."""
    state = os.path.join(env["XDG_CACHE_HOME"], "sluice", "s3")
    numbers = set()
    for name in os.listdir(state) if os.path.isdir(state) else []:
        if name.endswith(".parts"):
            with open(os.path.join(state, name)) as journal:
                numbers |= {json.loads(line)["partNumber"] for line in journal.readlines()[1:] if line.endswith("\n")}
    return numbers


def kill_once_parts_are_held(s3, env, args, key, bucket=BUCKET, journaled=False):  # noqa: F811
    """Starts `sluice ARGS`, waits (a gate, bounded) until the server holds a part (with
    `journaled`: until the parts journal names one), kills it with SIGKILL."""
    proc = subprocess.Popen([sluice_bin(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        held = (lambda: journaled_parts(env)) if journaled else (lambda: held_parts(s3, key, bucket))
        while not held() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the copy ended before a part was held"
    finally:
        proc.kill()
        stop(proc)


@pytest.mark.parametrize("replaced", [False, True], ids=["same", "replaced"])
def test_an_http_source_resumes_after_kill_9_and_a_replaced_one_is_sent_whole(nginx, s3, env, replaced):  # noqa: F811
    source, path = put_file(nginx, 30 * MIB + 7, 6)
    key = "remote/resume-%s.bin" % uuid.uuid4().hex[:8]
    args = ["s3", "cp", source, "s3://%s/%s" % (BUCKET, key), "--part-size", "5MiB", "--concurrency", "2", "--progress", "none"]
    kill_once_parts_are_held(s3, env, args + ["--limit-rate", "4M"], key)
    if replaced:
        # Other bytes of the same length, and another ETag (nginx's is mtime-size).
        with open(path, "wb") as handle:
            handle.write(random.Random(7).randbytes(30 * MIB + 7))
        later = time.time() + 100
        os.utime(path, (later, later))
    status, out, err = sluice(env, *args)
    assert status == 0, err
    assert ("already at the server" in err) != replaced, err
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha256_file(path)


def test_a_pinned_source_without_checksums_keeps_no_parts_journal_and_resumes(nginx, s3, env):  # noqa: F811
    """With `--checksum-algorithm none` Complete names ETags alone, which ListParts gives: no
    parts journal is kept beside the record (nothing would read it), and the rerun still takes
    the held parts from the server."""
    source, path = put_file(nginx, 30 * MIB + 7, 6)
    key = "remote/no-checksum-%s.bin" % uuid.uuid4().hex[:8]
    args = ["s3", "cp", source, "s3://%s/%s" % (BUCKET, key), "--part-size", "5MiB", "--concurrency", "2", "--progress", "none",
            "--checksum-algorithm", "none"]
    kill_once_parts_are_held(s3, env, args + ["--limit-rate", "4M"], key)
    state = os.path.join(env["XDG_CACHE_HOME"], "sluice", "s3")
    kept = os.listdir(state)
    assert any(name.endswith(".json") for name in kept), kept  # the record the rerun resumes from
    assert not any(name.endswith(".parts") for name in kept), kept
    status, out, err = sluice(env, *args)
    assert status == 0, err
    assert "already at the server" in err, err
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha256_file(path)


def test_a_resumed_pinned_source_reads_only_the_parts_the_server_does_not_hold(fault_url, s3, env):  # noqa: F811
    """After kill -9, the held parts' checksums come from the parts journal beside the record
    (SeaweedFS's ListParts lists none): the source is asked only for the ranges of missing parts."""
    part, size = 8 * MIB, 40 * MIB  # 8 MiB parts: each part's range is one window, one GET
    name = "resume-%s" % uuid.uuid4().hex[:8]
    source = "%s/source/%s?size=%d&seed=21" % (fault_url, name, size)
    key = "remote/%s.bin" % name
    args = ["s3", "cp", source, "s3://%s/%s" % (BUCKET, key), "--part-size", "8MiB", "--concurrency", "1", "--progress", "none"]
    kill_once_parts_are_held(s3, env, args + ["--limit-rate", "8M"], key, journaled=True)
    uploads = [u for u in s3.list_multipart_uploads(Bucket=BUCKET, Prefix=key).get("Uploads", []) if u["Key"] == key]
    assert len(uploads) == 1, uploads
    listed = {p["PartNumber"] for p in s3.list_parts(Bucket=BUCKET, Key=key, UploadId=uploads[0]["UploadId"]).get("Parts", [])}
    # A part held but killed before its line was written is read again (the journal only saves
    # reads): the parts not to be read again are the journaled ones, all of them held.
    held = journaled_parts(env)
    assert held and held <= listed and len(held) < size // part, (held, listed)
    before = len(fault_requests(fault_url))
    status, out, err = sluice(env, *args)
    assert status == 0, err
    assert "already at the server" in err, err
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == source_sha(21, size)
    asked = []
    for entry in fault_requests(fault_url)[before:]:
        if entry["path"] == "/source/" + name and entry["method"] == "GET":
            first, _, last = entry["headers"]["range"][len("bytes="):].partition("-")
            asked.append((int(first), int(last)))
    assert asked, "the second run read nothing"
    # No range of a held part was asked for again: each GET lies within a part that was missing.
    for first, last in asked:
        number = first // part + 1
        assert number not in held and last < number * part, (first, last, sorted(held))
    assert sum(last - first + 1 for first, last in asked) <= size - len(held) * part
    # The journal went with the record when the upload completed.
    state = os.path.join(env["XDG_CACHE_HOME"], "sluice", "s3")
    assert not [n for n in os.listdir(state) if n.endswith((".parts", ".json", ".lock"))], os.listdir(state)


def peak_rss_run(env, args):
    """(exit status, stderr, peak RSS in MiB) of `sluice ARGS` under /usr/bin/time (a small process
    that forks sluice, so the peak is sluice's own, not this Python process's)."""
    with tempfile.NamedTemporaryFile("r") as usage:
        proc = subprocess.run(["/usr/bin/time", "-o", usage.name, "-f", "%M", sluice_bin(), *args], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
        return proc.returncode, proc.stderr.decode("utf-8", "replace"), int(usage.read().split()[-1]) / 1024


def nginx_bytes_served(root, name, run):
    """Body bytes nginx sent for GETs of /dav/NAME that carried `X-Sluice-Run: RUN`, by its access
    log (`bs=`, `run=`)."""
    with open(os.path.join(os.path.dirname(root), "logs", "access.log")) as log:
        return [int(line.split(" bs=")[1].split()[0]) for line in log
                if line.startswith("GET /dav/%s " % name) and line.rstrip("\n").endswith(" run=%s" % run)]


def test_parts_that_are_not_multiples_of_the_window_ask_only_for_their_own_bytes(fault_url, s3, env):  # noqa: F811
    """5 MiB parts of a 23 MiB source: every GET lies within one part (windows of 8 MiB would run
    into the next part's bytes), and together they ask for each byte once."""
    part, size = 5 * MIB, 23 * MIB + 5
    name = "pieces-%s" % uuid.uuid4().hex[:8]
    key = "remote/%s.bin" % name
    before = len(fault_requests(fault_url))
    status, out, err = sluice(env, "s3", "cp", "%s/source/%s?size=%d&seed=4" % (fault_url, name, size), "s3://%s/%s" % (BUCKET, key),
                              "--part-size", "5MiB", "--concurrency", "3", "--progress", "none")
    assert status == 0, err
    asked = []
    for entry in fault_requests(fault_url)[before:]:
        if entry["path"] == "/source/" + name and entry["method"] == "GET":
            first, _, last = entry["headers"]["range"][len("bytes="):].partition("-")
            asked.append((int(first), int(last)))
    assert all(first // part == last // part for first, last in asked), asked
    assert sum(last - first + 1 for first, last in asked) == size, asked
    assert hashlib.sha256(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()).hexdigest() == source_sha(4, size)


def test_a_1_gib_http_source_in_flat_memory_resumed_reading_only_what_is_missing(nginx, s3, env):  # noqa: F811
    """Issue 38's done-when: nginx -> SeaweedFS, 1 GiB byte-exact at 16 MiB parts x 8 under 64 MiB
    peak RSS; killed with SIGKILL once a part is held, the same command has nginx send only the
    parts not journaled as held (its access log's body bytes)."""
    url, root = nginx
    size, part = (1 << 30) + 7, 16 * MIB
    name = "big-%s.bin" % uuid.uuid4().hex[:8]
    os.makedirs(os.path.join(root, "dav"), exist_ok=True)
    digest = hashlib.sha256()
    with open(os.path.join(root, "dav", name), "wb") as handle:
        for _ in range(size // MIB):
            chunk = os.urandom(MIB)
            digest.update(chunk)
            handle.write(chunk)
        tail = os.urandom(size % MIB)
        digest.update(tail)
        handle.write(tail)
    key = "remote/%s" % name
    args = ["s3", "cp", url + "/dav/" + name, "s3://%s/%s" % (BUCKET, key), "--part-size", "16MiB", "--concurrency", "8",
            "--progress", "none"]
    kill_once_parts_are_held(s3, env, args + ["--limit-rate", "32M"], key, journaled=True)
    held = journaled_parts(env)
    run = uuid.uuid4().hex[:8]
    status, err, peak = peak_rss_run(env, args + ["--source-header", "X-Sluice-Run: " + run])
    assert status == 0, err
    assert "already at the server" in err, err
    assert peak < 64, "peak RSS %.1f MiB" % peak
    missing = size - len(held) * part
    again = sum(nginx_bytes_served(root, name, run))
    # A last part under 64 KiB is read twice (its SHA-256 is signed in the header: a first pass).
    assert 0 < again <= missing + size % part, (again, missing, len(held))
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
    copied = hashlib.sha256()
    for chunk in body.iter_chunks(4 * MIB):
        copied.update(chunk)
    assert copied.hexdigest() == digest.hexdigest()
    s3.delete_object(Bucket=BUCKET, Key=key)
    os.unlink(os.path.join(root, "dav", name))


def test_an_s3_object_is_copied_by_pinned_ranges_to_another_key(s3, env):  # noqa: F811
    data = random.Random(11).randbytes(21 * MIB + 3)
    source_key = "remote/s3-src-%s.bin" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=source_key, Body=data)
    target_key = "remote/s3-copy-%s.bin" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, "s3", "cp", "s3://%s/%s" % (BUCKET, source_key), "s3://%s/%s" % (BUCKET, target_key),
                              "--part-size", "8MiB", "--progress", "none")
    assert status == 0, err
    assert "in 3 parts" in err, err
    body = s3.get_object(Bucket=BUCKET, Key=target_key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_missing_s3_object_or_a_prefix_as_source_is_one_line(s3, env):  # noqa: F811
    status, _, err = sluice(env, "s3", "cp", "s3://%s/remote/no-such-%s" % (BUCKET, uuid.uuid4().hex), "s3://%s/x" % BUCKET)
    assert status == 1 and len(err.strip().splitlines()) == 1 and "404" in err, err
    status, _, err = sluice(env, "s3", "cp", "s3://%s/remote/" % BUCKET, "s3://%s/x" % BUCKET)
    assert status == 2 and len(err.strip().splitlines()) == 1 and "prefixes are not copied yet" in err, err
