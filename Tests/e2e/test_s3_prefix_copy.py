"""`sluice s3 cp -r s3://B/P/ s3://B/Q/` and `sluice s3 sync s3://B/P/ s3://B/Q/`: the objects of
a prefix copied below another by the store (SeaweedFS), side by side with the AWS CLI: the same
objects end up at the destination (SHA-256 read back, content type and metadata kept), the lines
on stdout are the AWS CLI's (`copy: … to …`, `delete: …`, `(dryrun) …`; the order of parallel
copies is not compared), a sync copies only what is missing, of another size or newer, and
`--delete` removes what has no source, never after a failed copy."""

import hashlib
import os
import subprocess
import sys
import threading
import uuid

import pytest

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, s3, weed  # noqa: F401 (fixtures)

MIB = 1 << 20


def sluice(env, *args, stdin=None):
    proc = subprocess.run([sluice_bin(), "s3", *args], env=env, capture_output=True, timeout=300, input=stdin)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")


def aws(env, *args):
    proc = subprocess.run([sys.executable, "-m", "awscli", "s3", *args, "--no-progress", "--endpoint-url", env["AWS_ENDPOINT_URL"]],
                          env=dict(env, PYTHONIOENCODING="utf-8"), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    return proc.stdout.decode("utf-8")


def url(prefix):
    return "s3://%s/%s" % (BUCKET, prefix)


def listing(s3, prefix):
    """{relative key: (size, sha256)} of every object below `prefix`."""
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
            found[item["Key"][len(prefix):]] = (item["Size"], hashlib.sha256(body).hexdigest())
    return found


def lines(out, prefix):
    """`out`'s lines with the destination prefix named Q, sorted."""
    return sorted(line.replace(url(prefix), url("Q/")) for line in out.splitlines())


def fresh(name):
    return "%s-%s/" % (name, uuid.uuid4().hex[:8])


def rewrite_later(s3, key, body, than):
    """Writes `key` until its LastModified is later than `than`'s (SeaweedFS keeps whole
    seconds): a wait on the condition itself, bounded."""
    before = s3.head_object(Bucket=BUCKET, Key=than)["LastModified"]
    for _ in range(400):
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        if s3.head_object(Bucket=BUCKET, Key=key)["LastModified"] > before:
            return
        threading.Event().wait(0.01)
    raise AssertionError("%s never got a LastModified later than %s" % (key, than))


SOURCE = {"a": 10, "sub/b": 2000, "sub/deep/c d": 3, "d-y": 5, "d/x": 7, "big": 20 * MIB}


def source(s3, sizes=SOURCE, marker=True):
    prefix = fresh("src")
    for key, size in sizes.items():
        s3.put_object(Bucket=BUCKET, Key=prefix + key, Body=os.urandom(size), ContentType="image/png", Metadata={"k": key.replace(" ", "_")})
    if marker:
        # A console's folder: passed over, as the AWS CLI passes it over.
        s3.put_object(Bucket=BUCKET, Key=prefix + "folder/", Body=b"")
    return prefix


def test_cp_recursive_copies_every_object_as_the_aws_cli_does(s3, env):
    prefix = source(s3)
    outputs = {}
    for tool in ("aws", "sluice"):
        destination = fresh("cpr-" + tool)
        if tool == "aws":
            out = aws(env, "cp", "--recursive", url(prefix), url(destination))
        else:
            status, out, err = sluice(env, "cp", "-r", url(prefix), url(destination), "--part-size", "8MiB")
            assert status == 0, err
            assert "%d objects copied" % len(SOURCE) in err, err
        outputs[tool] = (lines(out, destination), listing(s3, destination))
    assert outputs["sluice"] == outputs["aws"]
    source_objects = listing(s3, prefix)
    del source_objects["folder/"]
    assert outputs["sluice"][1] == source_objects
    # The multipart copy keeps what a CopyObject keeps.
    copied = [key for key in outputs["sluice"][0] if "big" in key]
    assert copied, outputs
    for line in outputs["sluice"][0]:
        assert line.startswith("copy: %s" % url(prefix)), line


def test_the_copies_keep_content_type_and_metadata(s3, env):
    prefix = source(s3, {"small": 100, "large": 20 * MIB}, marker=False)
    destination = fresh("meta")
    status, out, err = sluice(env, "cp", "-r", url(prefix), url(destination), "--part-size", "8MiB")
    assert status == 0, err
    for key in ("small", "large"):
        head = s3.head_object(Bucket=BUCKET, Key=destination + key)
        assert head["ContentType"] == "image/png" and head["Metadata"] == {"k": key}, head
    assert s3.head_object(Bucket=BUCKET, Key=destination + "large")["ETag"].strip('"').endswith("-3")


def test_a_prefix_without_a_slash_is_the_same_prefix(s3, env):
    prefix = source(s3, {"x": 1, "y/z": 2}, marker=False)
    destination = fresh("noslash")
    status, out, err = sluice(env, "cp", "--recursive", url(prefix.rstrip("/")), url(destination.rstrip("/")))
    assert status == 0, err
    assert sorted(listing(s3, destination)) == ["x", "y/z"]


@pytest.mark.parametrize("dryrun", [False, True], ids=["copied", "dryrun"])
def test_sync_copies_what_is_missing_differs_or_is_newer_and_deletes_as_the_aws_cli(s3, env, dryrun):
    prefix = source(s3, {"same": 10, "grown": 10, "newer": 10, "new": 10, "sub/same": 4})
    results = {}
    for tool in ("aws", "sluice"):
        destination = fresh("sync-" + tool)
        # The destination's state: written now, so later than the source (unchanged)...
        for key in ("same", "grown", "newer", "sub/same"):
            s3.copy_object(Bucket=BUCKET, Key=destination + key, CopySource={"Bucket": BUCKET, "Key": prefix + key})
        s3.put_object(Bucket=BUCKET, Key=destination + "orphan", Body=b"o")
        s3.put_object(Bucket=BUCKET, Key=destination + "folder/", Body=b"")
        results[tool] = destination
    # ... then the source changes: one grows, one is written again after its copy.
    s3.put_object(Bucket=BUCKET, Key=prefix + "grown", Body=os.urandom(11))
    for destination in results.values():
        rewrite_later(s3, prefix + "newer", os.urandom(10), than=destination + "newer")
    outputs = {}
    for tool, destination in results.items():
        args = ["sync", url(prefix), url(destination), "--delete"] + (["--dryrun"] if dryrun else [])
        if tool == "aws":
            out = aws(env, *args)
        else:
            status, out, err = sluice(env, *args)
            assert status == 0, err
            summary = "3 objects %s, 2 unchanged, 1 %s" % (("to copy", "to delete") if dryrun else ("copied", "deleted"))
            assert summary in err, err
        outputs[tool] = lines(out, destination)
    assert outputs["sluice"] == outputs["aws"]
    expected = {"(dryrun) " * dryrun + "copy: %s%s to %s%s" % (url(prefix), key, url("Q/"), key) for key in ("grown", "newer", "new")}
    expected.add("(dryrun) " * dryrun + "delete: %sorphan" % url("Q/"))
    assert set(outputs["sluice"]) == expected
    after = listing(s3, results["sluice"])
    if dryrun:
        assert "orphan" in after and "new" not in after
    else:
        source_objects = listing(s3, prefix)
        del source_objects["folder/"]
        # The folder marker of the destination is kept, as the AWS CLI keeps it.
        assert after == dict(source_objects, **{"folder/": (0, hashlib.sha256(b"").hexdigest())})
        status, out, err = sluice(env, "sync", url(prefix), url(results["sluice"]), "--delete")
        assert status == 0 and out == "" and "0 objects copied, 5 unchanged, 0 deleted" in err, err


def test_size_only_and_checksum_decide_as_they_say(s3, env):
    prefix = source(s3, {"k": 100}, marker=False)
    destination = fresh("cmp")
    s3.copy_object(Bucket=BUCKET, Key=destination + "k", CopySource={"Bucket": BUCKET, "Key": prefix + "k"})
    body = s3.get_object(Bucket=BUCKET, Key=prefix + "k")["Body"].read()
    rewrite_later(s3, prefix + "k", body, than=destination + "k")  # newer, the same bytes: the same MD5 ETag
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--size-only", "--dryrun")
    assert status == 0 and out == "", (out, err)
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--checksum", "--dryrun")
    assert status == 0 and out == "" and "compared by ETag 1" in err, (out, err)
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--dryrun")
    assert status == 0 and out == "(dryrun) copy: %sk to %sk\n" % (url(prefix), url(destination)), (out, err)
    s3.put_object(Bucket=BUCKET, Key=prefix + "k", Body=os.urandom(100))  # other bytes, the same size
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--checksum")
    assert status == 0 and out == "copy: %sk to %sk\n" % (url(prefix), url(destination)), (out, err)
    assert listing(s3, destination) == listing(s3, prefix)


def test_a_failed_copy_holds_every_deletion_back(s3, env):
    # A key that fits below the source's prefix but not below the destination's (S3's 1,024 bytes).
    long_key = ("k" * 240 + "/") * 4 + "z"  # 965 bytes, in names a file system takes
    prefix = source(s3, {"ok": 3, long_key: 3}, marker=False)
    destination = fresh("x" * 60)
    s3.put_object(Bucket=BUCKET, Key=destination + "orphan", Body=b"o")
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--delete")
    assert status == 1, err
    assert "1 object with no source not deleted: 1 object could not be copied" in err, err
    assert "1,024" in err or "1024" in err, err
    assert "orphan" in listing(s3, destination) and "ok" in listing(s3, destination)
    assert "delete:" not in out


def test_max_delete_holds_deletions_back(s3, env):
    prefix = source(s3, {"a": 1}, marker=False)
    destination = fresh("maxdel")
    for key in ("o1", "o2"):
        s3.put_object(Bucket=BUCKET, Key=destination + key, Body=b"o")
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--delete", "--max-delete", "1")
    assert status == 1 and "2 objects with no source, more than --max-delete 1: none deleted" in err, err
    assert {"o1", "o2", "a"} <= set(listing(s3, destination))


def test_filters_take_what_the_aws_clis_take(s3, env):
    prefix = source(s3, {"a.txt": 1, "b.log": 2, "sub/c.txt": 3, "sub/d.log": 4}, marker=False)
    outputs = {}
    for tool in ("aws", "sluice"):
        destination = fresh("flt-" + tool)
        args = ["cp", "--recursive", url(prefix), url(destination), "--exclude", "*.log", "--include", "sub/*"]
        if tool == "aws":
            out = aws(env, *args)
        else:
            status, out, err = sluice(env, *args)
            assert status == 0, err
        outputs[tool] = (lines(out, destination), sorted(listing(s3, destination)))
    assert outputs["sluice"] == outputs["aws"]
    assert outputs["sluice"][1] == ["a.txt", "sub/c.txt", "sub/d.log"]


def test_shards_split_the_objects_with_nothing_twice(s3, env):
    sizes = {"o%02d" % index: index + 1 for index in range(24)}
    prefix = source(s3, sizes, marker=False)
    destination = fresh("shard")
    seen = []
    for index in range(3):
        status, out, err = sluice(env, "cp", "-r", url(prefix), url(destination), "--shard", "%d/3" % index)
        assert status == 0, err
        seen += [line.split(" to ")[1] for line in out.splitlines()]
    assert len(seen) == len(set(seen)) == len(sizes)
    assert listing(s3, destination) == listing(s3, prefix)


def test_files_from_names_keys_below_the_prefix(s3, env):
    prefix = source(s3, {"a": 1, "b c": 2, "d/e": 3, "f": 4}, marker=False)
    destination = fresh("list")
    status, out, err = sluice(env, "cp", "-r", url(prefix), url(destination), "--files-from", "-", stdin=b"d/e\nb c\n\nd/e\n")
    assert status == 0, err
    assert sorted(listing(s3, destination)) == ["b c", "d/e"]
    assert "2 objects copied" in err, err
    status, out, err = sluice(env, "cp", "-r", url(prefix), url(destination), "--files-from", "-", "--null", stdin=b"f\0nothing\0")
    assert status == 1 and "%snothing: no such object" % url(prefix) in err, err
    assert out == "copy: %sf to %sf\n" % (url(prefix), url(destination))
    status, out, err = sluice(env, "sync", url(prefix), url(destination), "--files-from", "-", "--delete", stdin=b"a\n")
    assert status == 2 and err.count("\n") == 1, err
    status, out, err = sluice(env, "cp", "-r", url(prefix), url(destination), "--files-from", "-", stdin=b"k" * 1100 + b"\n")
    assert status == 2 and err.count("\n") == 1 and "nothing was copied" in err, err


@pytest.mark.parametrize("args,expected", [
    (["cp", "-r", "s3://no-such-bucket-here/P/", "{dest}"], "the source s3://no-such-bucket-here/P/"),
    (["sync", "{src}", "s3://no-such-bucket-here/Q/"], "the destination s3://no-such-bucket-here/Q/"),
    (["cp", "-r", "{src}", "{dest}", "--no-follow-symlinks"], "--no-follow-symlinks"),
    (["cp", "{src}", "{dest}", "--exclude", "a"], "--recursive"),
    (["cp", "-r", "{src}", "{src}sub/"], "lies within the source"),
    (["sync", "{src}sub", "{src}", "--delete"], "holds the source"),
    (["sync", "{src}", "{src}"], "is the source"),
    # A source option naming the same store: refused by the library before any request.
    (["cp", "-r", "{src}", "{src}sub/", "--source-region", "us-east-1"], "lies within the source"),
], ids=["no source bucket", "no destination bucket", "no symlinks", "filter without -r", "destination within", "destination holds",
        "destination is", "same store by a source option"])
def test_a_refusal_is_one_line_and_copies_nothing(s3, env, args, expected):
    prefix = source(s3, {"a": 1}, marker=False)
    destination = fresh("refused")
    status, out, err = sluice(env, *[arg.format(src=url(prefix), dest=url(destination)) for arg in args])
    assert status in (1, 2) and err.count("\n") == 1 and expected in err, err
    assert out == "" and listing(s3, destination) == {}
    assert sorted(listing(s3, prefix)) == ["a"]


def test_counts_add_up_in_a_file_system_s_listing_order(s3, env):
    # SeaweedFS lists `d/x` before `d-y` (a file system's order): the run starts again in it
    # and what its first pass copied is counted copied, each object once.
    names = {"d-y": 1, "d/x": 2, "d/z": 3, "e": 4}
    prefix = source(s3, names, marker=False)
    destination = fresh("order")
    status, out, err = sluice(env, "sync", url(prefix), url(destination))
    assert status == 0, err
    assert "4 objects copied, 0 unchanged" in err, err
    assert len(out.splitlines()) == 4 and len(set(out.splitlines())) == 4, out
    assert listing(s3, destination) == listing(s3, prefix)
