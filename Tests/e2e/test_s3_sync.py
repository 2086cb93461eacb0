"""`sluice s3 sync DIR s3://BUCKET/PREFIX/` against SeaweedFS, with the AWS CLI as the oracle:
on a constructed tree (new, deleted, grown, shrunk, rewritten with the size kept and a newer or
an older modification time, odd names, a folder marker, a sibling prefix, filters) `sluice s3
sync --dryrun` prints the same set of uploads and deletions as `aws s3 sync --dryrun`, with and
without `--delete` and `--size-only`, for a prefix with and without its `/`. Then a real sync
leaves the prefix equal to the tree (read back by SHA-256), and the cases where nothing may be
deleted: a walk that could not read a directory, more than `--max-delete`, bad input."""

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, s3, sluice, weed  # noqa: F401 (fixtures)
from test_s3_recursive import as_nobody, bucket_listing, open_to_nobody

# A modification time well before any object's LastModified (2017).
OLD = 1_500_000_000


def write(root, relative, data, mtime=OLD):
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    os.utime(path, (mtime, mtime))
    return path


# name -> content at the first sync; NFC and NFD spellings are two keys. (Names that S3 and a
# file system order differently, "a-b" < "a/b" in S3, are in their own test below: SeaweedFS
# lists them as a file system does, and the AWS CLI then decides wrongly.)
BASELINE = {
    "same": b"same content",
    "grown": b"grown",
    "shrunk": b"shrunk content",
    "newer same size": b"newer 1",
    "older same size": b"older 1",
    "deleted": b"deleted locally",
    "caf\u00e9": b"nfc",
    "cafe\u0301": b"nfd",
    "x%+#y z": b"odd",
    "sub dir/deep/file": b"deep",
    "excluded.log": b"excluded",
    "keep.log": b"keep",
}


def build(s3, root, prefix, marker=True):
    """The tree and the bucket as the scenario wants them (`marker`: with a folder marker)."""
    for name, data in BASELINE.items():
        s3.put_object(Bucket=BUCKET, Key=prefix + name, Body=data)
    # Objects with no file: one plain, one deep, a folder marker (never deleted by aws), and a
    # sibling prefix that a prefix without `/` must not take in.
    for name, data in {"only in bucket": b"x", "zz/orphan": b"y", "gone.log": b"z"}.items():
        s3.put_object(Bucket=BUCKET, Key=prefix + name, Body=data)
    s3.put_object(Bucket=BUCKET, Key=prefix.rstrip("/") + "-sibling/x", Body=b"s")
    # Last, and in a few cases only: after a folder marker SeaweedFS's next request to the
    # bucket can wait about 60 s.
    if marker:
        s3.put_object(Bucket=BUCKET, Key=prefix + "dir marker/", Body=b"")
    for name, data in BASELINE.items():
        if name != "deleted":
            write(root, name, data)
    write(root, "grown", b"grown and more")
    write(root, "shrunk", b"shrunk")
    write(root, "newer same size", b"newer 2", mtime=time.time() + 3600)
    write(root, "older same size", b"older 2")
    write(root, "new file", b"new")
    write(root, "sub dir/new", b"new deep")


def decisions(text, cwd):
    """{("upload", absolute local path, key) | ("delete", key)} from `--dryrun` output."""
    found = set()
    for line in text.replace("\r", "\n").split("\n"):
        if "(dryrun) upload: " in line:
            rest = line[line.index("(dryrun) upload: ") + len("(dryrun) upload: "):].rstrip()
            local, _, url = rest.rpartition(" to s3://")
            found.add(("upload", os.path.normpath(os.path.join(cwd, local)), url.split("/", 1)[1]))
        elif "(dryrun) delete: s3://" in line:
            url = line[line.index("(dryrun) delete: s3://") + len("(dryrun) delete: s3://"):].rstrip()
            found.add(("delete", url.split("/", 1)[1]))
    return found


def aws_sync(env, cwd, *args):
    aws_env = dict(env, PYTHONIOENCODING="utf-8")
    proc = subprocess.run([sys.executable, "-m", "awscli", "s3", "sync", *args, "--endpoint-url", env["AWS_ENDPOINT_URL"]],
                          env=aws_env, cwd=cwd, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    return proc.stdout.decode("utf-8")


def sluice_sync(env, cwd, *args):
    proc = subprocess.run([sluice_bin(), "s3", "sync", *args], env=env, cwd=cwd, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")


OPTIONS = {
    "default": [],
    "delete": ["--delete"],
    "size-only": ["--size-only"],
    "delete size-only": ["--delete", "--size-only"],
    "filters": ["--delete", "--exclude", "*.log", "--include", "keep.log", "--exclude", "sub dir/*"],
}


@pytest.mark.parametrize("slash", [True, False], ids=["prefix/", "prefix"])
@pytest.mark.parametrize("options", list(OPTIONS), ids=list(OPTIONS))
def test_dryrun_decides_as_the_aws_cli(s3, env, tmp_path, options, slash):
    root = str(tmp_path / "tree")
    prefix = "sync-%s/" % uuid.uuid4().hex[:8]
    build(s3, root, prefix, marker=options == "delete")
    target = "s3://%s/%s" % (BUCKET, prefix if slash else prefix.rstrip("/"))
    args = OPTIONS[options]
    cwd = str(tmp_path)
    expected = decisions(aws_sync(env, cwd, "tree", target, "--dryrun", *args), cwd)
    status, out, err = sluice_sync(env, cwd, "tree", target, "--dryrun", *args)
    assert status == 0, err
    assert decisions(out, cwd) == expected, (out, err)
    # The oracle's answer is not empty, and has what the scenario is built for.
    uploads = {key[len(prefix):] for kind, *rest in expected if kind == "upload" for key in rest[1:]}
    deletes = {rest[0][len(prefix):] for kind, *rest in expected if kind == "delete"}
    assert {"grown", "shrunk", "new file"} <= uploads and "same" not in uploads, expected
    # The same-size edit with an older time is missed by the AWS CLI's rule (aws-cli #8377), and so here.
    assert "older same size" not in uploads
    assert ("newer same size" in uploads) == ("--size-only" not in args)
    if "--delete" in args:
        assert {"deleted", "only in bucket", "zz/orphan"} <= deletes and "dir marker/" not in deletes, expected
        assert ("gone.log" in deletes) == (options != "filters")
    else:
        assert not deletes
    assert not any("-sibling/" in key for key in uploads | deletes)


def test_a_sync_leaves_the_prefix_equal_to_the_tree(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    prefix = "sync-real-%s/" % uuid.uuid4().hex[:8]
    build(s3, root, prefix, marker=False)
    os.utime(os.path.join(root, "newer same size"), (OLD + 10, OLD + 10))
    state = str(tmp_path / "state")
    target = "s3://%s/%s" % (BUCKET, prefix)
    status, out, err = sluice_sync(env, str(tmp_path), root, target, "--delete", "--state", state, "--progress", "none")
    assert status == 0, err
    # "newer same size" now has an old time: the listing says it is held, and it is not sent.
    assert "4 files sent" in err and "4 deleted" in err, err
    told = out.splitlines()
    assert sorted(line for line in told if line.startswith("delete: ")) == sorted(
        "delete: s3://%s/%s%s" % (BUCKET, prefix, name) for name in ["deleted", "only in bucket", "zz/orphan", "gone.log"])
    assert len([line for line in told if line.startswith("upload: tree/")]) == 4 == len(told) - 4, out
    expected = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                expected[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    expected["newer same size"] = hashlib.sha256(BASELINE["newer same size"]).hexdigest()
    expected["older same size"] = hashlib.sha256(BASELINE["older same size"]).hexdigest()
    assert bucket_listing(s3, prefix) == expected
    # Both tools now find nothing to do.
    status, out, err = sluice_sync(env, str(tmp_path), root, target, "--delete", "--dryrun")
    assert status == 0 and out == "", (out, err)
    assert decisions(aws_sync(env, str(tmp_path), root, target, "--delete", "--dryrun"), str(tmp_path)) == set()


def test_max_delete_deletes_nothing_past_its_limit(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    write(root, "kept", b"kept")
    prefix = "sync-max-%s/" % uuid.uuid4().hex[:8]
    for name in ["kept", "orphan 1", "orphan 2", "orphan 3"]:
        s3.put_object(Bucket=BUCKET, Key=prefix + name, Body=b"kept" if name == "kept" else b"o")
    target = "s3://%s/%s" % (BUCKET, prefix)
    status, out, err = sluice_sync(env, str(tmp_path), root, target, "--delete", "--max-delete", "2")
    assert status == 1 and out == "", (out, err)
    assert "3 objects with no file, more than --max-delete 2: none deleted" in err, err
    assert set(bucket_listing(s3, prefix)) == {"kept", "orphan 1", "orphan 2", "orphan 3"}
    status, out, err = sluice_sync(env, str(tmp_path), root, target, "--delete", "--max-delete", "3")
    assert status == 0, err
    assert set(bucket_listing(s3, prefix)) == {"kept"}


def test_delete_with_an_unreadable_directory_deletes_nothing(s3, env):
    """A directory the walk cannot read would make its objects look like orphans: nothing is
    deleted, one line says why, exit 1. Root reads everything, so as root the sync runs as
    `nobody` (setpriv), from a directory of its own under /tmp."""
    base = tempfile.mkdtemp(prefix="sluice-sync-unreadable-", dir="/tmp")
    try:
        os.chmod(base, 0o755)
        root = os.path.join(base, "tree")
        prefix = "sync-locked-%s/" % uuid.uuid4().hex[:8]
        for relative in ["a/one", "locked/two"]:
            write(root, relative, b"data")
            s3.put_object(Bucket=BUCKET, Key=prefix + relative, Body=b"data")
        s3.put_object(Bucket=BUCKET, Key=prefix + "orphan", Body=b"o")
        binary, state = open_to_nobody(base)
        command = [binary, "s3", "sync", root, "s3://%s/%s" % (BUCKET, prefix), "--delete", "--state", state, "--progress", "none"]
        command = as_nobody(command, state)
        # Its spool files too: `nobody` cannot write the TMPDIR of the run (scripts/test.sh's).
        run_env = dict(env, HOME=state, XDG_CACHE_HOME=state, TMPDIR=state)
        locked = os.path.join(root, "locked")
        os.chmod(locked, 0)
        for extra in (["--dryrun"], []):
            proc = subprocess.run(command + extra, env=run_env, capture_output=True, timeout=120)
            err = proc.stderr.decode("utf-8", "replace")
            assert proc.returncode == 1, err
            assert proc.stdout == b"", proc.stdout
            assert "sluice: s3 sync: %s: permission denied" % locked in err.splitlines(), err
            assert "2 objects with no file not deleted: the walk could not read 1 path" in err, err
            assert set(bucket_listing(s3, prefix)) == {"a/one", "locked/two", "orphan"}
    finally:
        for folder, dirs, _ in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("case", ["file", "missing", "no-bucket"])
def test_bad_input_is_one_line_and_deletes_nothing(s3, env, tmp_path, case):
    root = str(tmp_path / "tree")
    write(root, "f", b"f")
    prefix = "sync-bad-%s/" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=prefix + "orphan", Body=b"o")
    target = "s3://%s/%s" % (BUCKET, prefix)
    if case == "file":
        status, out, err = sluice_sync(env, str(tmp_path), root + "/f", target, "--delete")
        assert status == 2 and "is not a directory" in err, err
    elif case == "missing":
        status, out, err = sluice_sync(env, str(tmp_path), root + "/nowhere", target, "--delete")
        assert status == 2 and "no such file or directory" in err, err
    else:
        status, out, err = sluice_sync(env, str(tmp_path), root, "s3://no-such-bucket-%s/p/" % uuid.uuid4().hex[:8], "--delete")
        assert status == 1 and "NoSuchBucket" in err, err
    assert len(err.splitlines()) == 1 and out == "", (out, err)
    assert set(bucket_listing(s3, prefix)) == {"orphan"}


def test_a_server_that_lists_as_a_file_system(s3, env, tmp_path):
    """SeaweedFS lists `a/b` before `a-b` and `a.txt` (a file system's order, not S3's). The AWS
    CLI's merge then takes `a-b` and `a.txt` for missing and their objects for orphans: it sends
    them and, with --delete, deletes them (its dry run shows it; not run for real here). Sluice finds the order out from the
    listing, joins in it, and finds nothing to do."""
    root = str(tmp_path / "tree")
    prefix = "sync-order-%s/" % uuid.uuid4().hex[:8]
    for name in ["a-b", "a.txt", "a/b", "a/c/d", "a0"]:
        write(root, name, name.encode())
        s3.put_object(Bucket=BUCKET, Key=prefix + name, Body=name.encode())
    keys = [item["Key"][len(prefix):] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]]
    if keys == sorted(keys, key=lambda k: k.encode()):
        pytest.skip("this server lists in S3's order")
    target = "s3://%s/%s" % (BUCKET, prefix)
    aws = decisions(aws_sync(env, str(tmp_path), root, target, "--delete", "--dryrun"), str(tmp_path))
    assert ("delete", prefix + "a-b") in aws, aws  # the AWS CLI's wrong answer, shown
    status, out, err = sluice_sync(env, str(tmp_path), root, target, "--delete", "--dryrun")
    assert status == 0 and out == "", (out, err)
    assert "lists keys as a file system does" in err, err
    write(root, "a-b", b"changed")
    os.remove(os.path.join(root, "a/c/d"))
    status, out, err = sluice_sync(env, str(tmp_path), root, target, "--delete", "--progress", "none")
    assert status == 0, err
    # (The changed a-b may go in the first pass, taken for missing before the order was found
    # out: the summary counts the pass in the server's order.)
    told = out.splitlines()
    assert [line for line in told if not line.startswith("upload: ")] == ["delete: s3://%s/%sa/c/d" % (BUCKET, prefix)], out
    assert "upload: tree/a-b to s3://%s/%sa-b" % (BUCKET, prefix) in told, out
    assert bucket_listing(s3, prefix) == {name: hashlib.sha256(data).hexdigest() for name, data in
                                          [("a-b", b"changed"), ("a.txt", b"a.txt"), ("a/b", b"a/b"), ("a0", b"a0")]}
