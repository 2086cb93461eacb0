"""`sluice s3 cp s3://A/K s3://B/K2`: an object copied by the store on SeaweedFS, no byte of it
through sluice. One CopyObject below the multipart threshold, UploadPartCopy in parallel above;
the copy equals the source (SHA-256 read back), keeps its content type and user metadata, and
the line on stdout is the AWS CLI's (`copy: … to …`, run beside `aws`)."""

import hashlib
import os
import subprocess
import sys
import uuid

import pytest

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, fault_proxy, s3, weed  # noqa: F401 (fixtures)

MIB = 1 << 20


def run(env, *args):
    proc = subprocess.run([sluice_bin(), "s3", "cp", *args], env=env, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode("utf-8", "replace")


def sha256(s3, key):
    return hashlib.sha256(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()).hexdigest()


@pytest.mark.parametrize("size,parts", [(0, None), (100_000, None), (40 * MIB, 5)], ids=["empty", "CopyObject", "UploadPartCopy"])
def test_a_copy_is_the_source_with_its_type_and_metadata(s3, env, size, parts):
    source = "copy-src-%s" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(size), ContentType="image/png", Metadata={"owner": "ada", "n": "1"})
    destination = "copy-dst-%s/%s" % (uuid.uuid4().hex[:8], source)
    status, out, err = run(env, "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, destination), "--part-size", "8MiB")
    assert status == 0, err
    assert out == "copy: s3://%s/%s to s3://%s/%s\n" % (BUCKET, source, BUCKET, destination), out
    assert ("in %d parts (UploadPartCopy)" % parts if parts else "in one CopyObject") in err, err
    assert sha256(s3, destination) == sha256(s3, source)
    head = s3.head_object(Bucket=BUCKET, Key=destination)
    assert head["ContentLength"] == size and head["ContentType"] == "image/png", head
    assert head["Metadata"] == {"owner": "ada", "n": "1"}, head
    assert head["ETag"].strip('"').endswith("-%d" % parts) if parts else "-" not in head["ETag"]


def stored_sha256(s3, key):
    digest = hashlib.sha256()
    for chunk in s3.get_object(Bucket=BUCKET, Key=key)["Body"].iter_chunks(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.parametrize("size,parts", [(MIB, None), (320 * MIB, 40)], ids=["1MiB", "320MiB"])
def test_the_store_copies_with_under_2_mib_sent_by_sluice(s3, fault_proxy, tmp_path, size, parts):
    """Issue 38's done-when: every byte sluice sends to the store (request lines, headers, XML
    bodies), counted by a proxy in front of SeaweedFS, stays under 2 MiB for a 320 MiB object."""
    proxy, env = fault_proxy
    path = tmp_path / "src.bin"
    with open(path, "wb") as handle:
        for _ in range(size // MIB):
            handle.write(os.urandom(MIB))
    source = "copy-big-%s" % uuid.uuid4().hex[:8]
    s3.upload_file(str(path), BUCKET, source, ExtraArgs={"ContentType": "video/mp4", "Metadata": {"owner": "ada"}})
    destination = source + "-copy"
    before = proxy.received
    status, out, err = run(env, "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, destination), "--progress", "none")
    assert status == 0, err
    sent = proxy.received - before
    assert 0 < sent < 2 * MIB, sent
    assert ("in %d parts (UploadPartCopy)" % parts if parts else "in one CopyObject") in err, err
    assert stored_sha256(s3, destination) == hashlib.sha256(path.read_bytes()).hexdigest()
    head = s3.head_object(Bucket=BUCKET, Key=destination)
    assert (head["ContentLength"], head["ContentType"], head["Metadata"]) == (size, "video/mp4", {"owner": "ada"}), head


def test_a_prefix_destination_takes_the_key_s_name_as_the_aws_cli_does(s3, env, tmp_path):
    source = "copy-name-%s/inner/object.bin" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=source, Body=b"named")
    lines = {}
    for tool in ("aws", "sluice"):
        prefix = "copy-to-%s-%s/" % (tool, uuid.uuid4().hex[:8])
        args = ["s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, prefix)]
        if tool == "aws":
            proc = subprocess.run([sys.executable, "-m", "awscli", "s3", "cp", *args, "--no-progress", "--endpoint-url", env["AWS_ENDPOINT_URL"]],
                                  env=env, capture_output=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
            out = proc.stdout.decode()
        else:
            status, out, err = run(env, *args)
            assert status == 0, err
        lines[tool] = out.replace(prefix, "P/")
        assert s3.get_object(Bucket=BUCKET, Key=prefix + "object.bin")["Body"].read() == b"named"
    assert lines["sluice"] == lines["aws"], lines


def test_what_cannot_be_copied_is_one_line(s3, env):
    target = "s3://%s/copy-none-%s" % (BUCKET, uuid.uuid4().hex[:8])
    status, out, err = run(env, "s3://%s/no-such-%s" % (BUCKET, uuid.uuid4().hex[:8]), target)
    assert status == 1 and out == "" and len(err.splitlines()) == 1 and "no such object" in err, (status, out, err)
    # A prefix with no object copies nothing, as `aws s3 cp --recursive` (test_s3_prefix_copy.py).
    status, out, err = run(env, "s3://%s/no-such-prefix-%s" % (BUCKET, uuid.uuid4().hex[:8]), target, "--recursive")
    assert status == 0 and out == "" and "0 objects copied" in err, (status, out, err)
    status, out, err = run(env, "s3://%s" % BUCKET, target)
    assert status == 2 and "KEY" in err and len(err.splitlines()) == 1, (status, out, err)
    # A dry run says what it would copy and sends nothing.
    status, out, err = run(env, "s3://%s/whatever" % BUCKET, target, "--dryrun")
    assert status == 0 and out.startswith("(dryrun) copy: "), (status, out, err)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=target.split("/", 3)[3]).get("KeyCount", 0) == 0


@pytest.mark.parametrize("asked", [False, True], ids=["default", "--checksum-algorithm"])
def test_a_multipart_copy_asks_the_store_for_a_checksum_only_when_one_is_named(s3, env, asked):
    # A store computing CRC32C for each UploadPartCopy copies at half speed (Benchmarks/copies.sh),
    # and no byte passes through sluice for it to prove: as aws s3 cp, none unless named.
    source = "copy-ck-src-%s" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(20 * MIB))
    destination = source.replace("src", "dst")
    status, out, err = run(env, "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, destination), "--part-size", "8MiB",
                           *(["--checksum-algorithm", "crc32c"] if asked else []))
    assert status == 0 and "in 3 parts" in err, err
    head = s3.head_object(Bucket=BUCKET, Key=destination, ChecksumMode="ENABLED")
    assert ("ChecksumCRC32C" in head) == asked, head
    assert sha256(s3, destination) == sha256(s3, source)
