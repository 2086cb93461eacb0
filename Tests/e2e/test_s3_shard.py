"""`--shard K/N` and `--files-from` (`s3 sync`, `s3 cp -r`) against SeaweedFS, through
Tests/Peers/s3_proxy.py's FaultProxy, which logs every request, so that what was sent is counted
at the wire, not taken from sluice's own summary:

- four `sluice s3 sync --shard K/4 --delete` run at once under GNU parallel send each file
  exactly once (one PUT per key across the four), each deletes only the orphans of its shard,
  and the prefix then equals the tree (read back by SHA-256); each shard's files are those the
  documented function puts there (computed here in Python);
- a shard killed with SIGKILL while the proxy holds its third PUT, and run again, sends only the
  files it had not sent (its own journal, and the listing);
- `--files-from -` with NUL-separated odd names (spaces, a newline, NFC and NFD, `%+#`) sends
  exactly the files named, for `sync` and `cp -r`;
- bad input is one line and a non-zero exit, with nothing sent or deleted."""

import collections
import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import uuid

import pytest

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, fault_proxy, s3, weed  # noqa: F401 (fixtures)
from test_s3_recursive import bucket_listing


def shard_of(path, count):
    """The shard of `path` (below the root) among `count`: docs/s3.md's definition."""
    return int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "big") % count


# A modification time well before any object's LastModified: a rerun finds every object newer.
OLD = 1_500_000_000


def write_tree(root, names):
    """Files `names` below `root`, each holding its own name (so each has its own SHA-256),
    modified long ago."""
    hashes = {}
    for name in names:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = ("content of %s\n" % name).encode() * 3
        with open(path, "wb") as handle:
            handle.write(data)
        os.utime(path, (OLD, OLD))
        hashes[name] = hashlib.sha256(data).hexdigest()
    return hashes


# Names whose S3 order is also a file system's (no name extends a directory's name with a byte
# below `/`): SeaweedFS lists as a file system does, and a sync that found that out would start
# its join again, and could send a file twice (docs/s3.md).
NAMES = ["file %02d" % i for i in range(24)] + [
    "caf\u00e9", "cafe\u0301", "x%+#y z", "deep/er/one", "deep/er/two", "deep/three", "zz/last"]


def puts(proxy, prefix):
    """Keys below `prefix` of every PutObject the proxy saw, with how many times each."""
    found = collections.Counter()
    for action, method, path in list(proxy.requests):
        assert action != "part", "a file this small went as a multipart upload"
        if action == "put":
            assert path.startswith("/%s/%s" % (BUCKET, prefix)), path
            found[path[len("/%s/%s" % (BUCKET, prefix)):]] += 1
    return found


def test_four_shards_at_once_send_each_file_once(s3, env, fault_proxy, tmp_path):
    assert shutil.which("parallel"), "GNU parallel is missing: scripts/peers.sh (sluice_peers_install) installs it"
    proxy, proxied = fault_proxy
    root = str(tmp_path / "tree")
    tree = write_tree(root, NAMES)
    prefix = "shard-%s/" % uuid.uuid4().hex[:8]
    # Orphans in every shard: each shard's --delete takes only its own.
    orphans = ["orphan %d" % i for i in range(12)]
    for name in orphans:
        s3.put_object(Bucket=BUCKET, Key=prefix + name, Body=b"o")
    expected = {k: {name for name in tree if shard_of(name, 4) == k} for k in range(4)}
    assert all(expected.values()), expected
    target = "s3://%s/%s" % (BUCKET, prefix)

    # Each shard's dry run decides exactly the files and orphans of its shard.
    for k in range(4):
        proc = subprocess.run([sluice_bin(), "s3", "sync", root, target, "--delete", "--dryrun", "--shard", "%d/4" % k],
                              env=proxied, capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode()
        uploads = set(re.findall(r"^\(dryrun\) upload: .* to %s(.*)$" % re.escape(target), out, re.M))
        deletes = set(re.findall(r"^\(dryrun\) delete: %s(.*)$" % re.escape(target), out, re.M))
        assert uploads == expected[k], (k, out)
        assert deletes == {name for name in orphans if shard_of(name, 4) == k}, (k, out)
    assert not puts(proxy, prefix)

    command = [sluice_bin(), "s3", "sync", root, target, "--delete", "--shard", "{}/4", "--progress", "none",
               "--state", str(tmp_path / "state")]
    proc = subprocess.run(["parallel", "--tag", "-j4", *command, ":::", "0", "1", "2", "3"],
                          env=proxied, capture_output=True, timeout=600)
    out, err = proc.stdout.decode(), proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, (out, err)
    # Every file went once, in one PUT, across the four runs.
    sent = puts(proxy, prefix)
    assert sorted(sent) == sorted(tree) and set(sent.values()) == {1}, sent
    # Each run sent its shard's files and deleted its shard's orphans, and said so.
    for k in range(4):
        assert re.search(r"^%d\tsluice: %d files? sent, 0 unchanged, %d deleted, 0 failed" % (
            k, len(expected[k]), len([n for n in orphans if shard_of(n, 4) == k])), err, re.M), err
        deleted = set(re.findall(r"^%d\tdelete: %s(.*)$" % (k, re.escape(target)), out, re.M))
        assert deleted == {name for name in orphans if shard_of(name, 4) == k}, out
    assert bucket_listing(s3, prefix) == tree

    # Run again, the four find nothing to do.
    proxy.requests.clear()
    proc = subprocess.run(["parallel", "--tag", "-j4", *command, ":::", "0", "1", "2", "3"],
                          env=proxied, capture_output=True, timeout=600)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert not puts(proxy, prefix)
    assert len(re.findall(r"^\d\tsluice: 0 files sent", err, re.M)) == 4, err


def test_a_shard_killed_and_run_again_sends_only_what_it_lacks(s3, env, fault_proxy, tmp_path):
    """The proxy lets two PUTs through and holds the third; with one file in flight at a time
    the two are then stored and recorded, and the run is killed with SIGKILL there. The rerun of
    the same shard sends each file it lacks once, and nothing it had sent."""
    proxy, proxied = fault_proxy
    root = str(tmp_path / "tree")
    tree = write_tree(root, NAMES)
    shard = {name for name in tree if shard_of(name, 4) == 1}
    assert len(shard) >= 4, shard
    prefix = "shard-kill-%s/" % uuid.uuid4().hex[:8]
    target = "s3://%s/%s" % (BUCKET, prefix)
    lock, count, held, release = threading.Lock(), [0], threading.Event(), threading.Event()

    def hold_the_third(action, headers):
        if action != "put":
            return None
        with lock:
            count[0] += 1
            number = count[0]
        if number <= 2:
            return None
        held.set()
        release.wait(120)
        return (503, "SlowDown", "held while the client was killed")

    proxy.policy = hold_the_third
    command = [sluice_bin(), "s3", "sync", root, target, "--shard", "1/4", "--concurrency", "1", "--progress", "json",
               "--state", str(tmp_path / "state")]
    run = subprocess.Popen(command, env=proxied, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert held.wait(120), "the third PUT never came"
        run.send_signal(signal.SIGKILL)
        run.wait(60)
    finally:
        release.set()
        if run.poll() is None:
            run.kill()
            run.wait()
        run.stderr.close()
    proxy.wait_idle()
    proxy.policy = None
    stored = set(bucket_listing(s3, prefix))
    assert len(stored) == 2 and stored <= shard, stored

    proxy.requests.clear()
    command[command.index("json")] = "none"
    proc = subprocess.run(command, env=proxied, capture_output=True, timeout=300)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    sent = puts(proxy, prefix)
    assert sorted(sent) == sorted(shard - stored) and set(sent.values()) == {1}, (sent, stored)
    assert "sluice: %d files sent, 2 unchanged" % len(shard - stored) in err, err
    assert bucket_listing(s3, prefix) == {name: tree[name] for name in shard}


ODD = ["with space", "new\nline", "caf\u00e9", "cafe\u0301", "sub dir/x%+#y", "sub dir/deeper/z", "tab\there"]


@pytest.mark.parametrize("command", ["sync", "cp -r"])
def test_files_from_stdin_with_nul_separated_odd_names(s3, env, fault_proxy, tmp_path, command):
    proxy, proxied = fault_proxy
    root = str(tmp_path / "tree")
    tree = write_tree(root, ODD + ["not listed", "sub dir/not listed either"])
    prefix = "files-from-%s/" % uuid.uuid4().hex[:8]
    # Out of order, one named twice, one as ./x, one with a doubled /: still each file once.
    listed = list(reversed(ODD)) + ["./with space", "sub dir//x%+#y"]
    stdin = b"".join(name.encode() + b"\0" for name in listed)
    args = [sluice_bin(), "s3", *command.split(), root, "s3://%s/%s" % (BUCKET, prefix), "--files-from", "-", "--null",
            "--progress", "none"]
    proc = subprocess.run(args, env=proxied, input=stdin, capture_output=True, timeout=300)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert "sluice: %d files sent" % len(ODD) in err, err
    sent = puts(proxy, prefix)
    assert sorted(sent) == sorted(ODD) and set(sent.values()) == {1}, sent
    assert bucket_listing(s3, prefix) == {name: tree[name] for name in ODD}
    # Without --null the same list is refused in one line, nothing sent.
    proxy.requests.clear()
    proc = subprocess.run(args[:-3] + ["--progress", "none"], env=proxied, input=stdin, capture_output=True, timeout=300)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "the list holds a NUL byte" in err and "needs --null" in err, err
    assert not puts(proxy, prefix)


BAD = {
    "shard 5/4": (["--shard", "5/4"], 2, "--shard 5/4: K must be from 0 to N-1"),
    "shard 0/0": (["--shard", "0/0"], 2, "--shard 0/0: N must be from 1 to 1000000"),
    "shard -1/4": (["--shard", "-1/4"], 2, "--shard needs K/N"),
    "shard a/b": (["--shard", "a/b"], 2, "--shard needs K/N"),
    "shard huge": (["--shard", "1/99999999999999999999999"], 2, "N must be from 1 to 1000000"),
    "list missing": (["--files-from", "{tmp}/no-such-list"], 2, "cannot open it: no such file or directory"),
    "list names missing files": (["--files-from", "{tmp}/list"], 2, "nowhere: no such file or directory (and 1 more path not taken); nothing was sent"),
    "list and delete": (["--files-from", "{tmp}/list"], 2, "--delete does not go with --files-from"),
    "not a directory": (["--shard", "0/4"], 2, "is not a directory"),
    "no bucket": (["--shard", "0/4"], 1, "NoSuchBucket"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_sends_and_deletes_nothing(s3, env, fault_proxy, tmp_path, case):
    proxy, proxied = fault_proxy
    root = str(tmp_path / "tree")
    write_tree(root, ["f", "g"])
    (tmp_path / "list").write_text("f\nnowhere\nalso/nowhere\n" if case != "list and delete" else "f\n")
    prefix = "shard-bad-%s/" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=prefix + "orphan", Body=b"o")
    options, status, words = BAD[case]
    options = [option.replace("{tmp}", str(tmp_path)) for option in options]
    source = root + "/f" if case == "not a directory" else root
    bucket = "no-such-bucket-%s" % uuid.uuid4().hex[:8] if case == "no bucket" else BUCKET
    delete = [] if case.startswith("list") and case != "list and delete" else ["--delete"]
    proc = subprocess.run([sluice_bin(), "s3", "sync", source, "s3://%s/%s" % (bucket, prefix), *delete, *options],
                          env=proxied, capture_output=True, timeout=300)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == status, err
    assert len(err.splitlines()) == 1 and words in err and proc.stdout == b"", (proc.stdout, err)
    assert not puts(proxy, prefix)
    assert set(bucket_listing(s3, prefix)) == {"orphan"}
