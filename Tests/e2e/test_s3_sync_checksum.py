"""`sluice s3 sync --checksum`: content-exact decisions, where the AWS CLI (the oracle of
test_s3_sync.py) compares size and time only.

Against SeaweedFS, one object of each kind sluice compares, each twice (one whose file was then
rewritten with its size and its old modification time kept, as `touch -r` or `cp -p` leave it,
and one left alone):
- a multipart object with a full-object CRC64NVME (`sluice s3 cp --checksum-algorithm crc64nvme`);
- a composite CRC32C object made by sluice with a part size that is not the default (6 MiB):
  recomputed with part 1's length (`HeadObject ?partNumber=1`);
- a single-part object by its ETag (the MD5 of its bytes, no request);
- an `aws s3 cp` multipart object (8 MiB parts) with its default composite CRC32, and one sent with
  no checksum at all, compared by its ETag (the MD5 of the parts' MD5s).
`aws s3 sync --dryrun` sends none of the rewritten files; `sluice s3 sync --checksum` sends
exactly them, and `--progress json` carries the same decisions.

Against moto (which keeps checksums, and an SSE-KMS object's encryption): an SSE-KMS object
with no stored checksum whose ETag does not match cannot be compared by content: it is compared
by size and time, and counted."""

import hashlib
import json
import os
import subprocess
import sys
import uuid

import boto3
import pytest
from botocore.config import Config

from conftest import sluice_bin
from test_s3_cli import BUCKET, MIB, env, moto_s3, s3, sluice, weed  # noqa: F401 (fixtures)
from test_s3_recursive import bucket_listing
from test_s3_sync import OLD, aws_sync, decisions, sluice_sync


def random_bytes(size, seed):
    out = bytearray()
    block = hashlib.sha256(b"seed %d" % seed).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:size])


def write_old(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    os.utime(path, (OLD, OLD))


def rewrite_keeping_size_and_time(path):
    """One byte changed in the middle; the size and the (old) modification time put back."""
    with open(path, "r+b") as handle:
        handle.seek(os.path.getsize(path) // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, (OLD, OLD))


def upload(env, how, path, url):
    if how.startswith("aws"):
        aws_env = dict(env)
        if how == "aws-no-checksum":
            aws_env["AWS_REQUEST_CHECKSUM_CALCULATION"] = "when_required"
        proc = subprocess.run([sys.executable, "-m", "awscli", "s3", "cp", path, url, "--endpoint-url", env["AWS_ENDPOINT_URL"]],
                              env=aws_env, capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
        return
    options = {"sluice-crc64nvme": ["--checksum-algorithm", "crc64nvme", "--part-size", "5MiB"],
               "sluice-composite": ["--checksum", "crc32c", "--part-size", "6MiB"],  # s3 cp's --checksum, kept
               "sluice-single": []}[how]
    code, _, err = sluice(env, "s3", "cp", path, url, "--progress", "none", *options, timeout=300)
    assert code == 0, err


# kind -> (size, how it is uploaded)
KINDS = {
    "full-crc64nvme": (6 * MIB + 3, "sluice-crc64nvme"),
    "composite-crc32c-6MiB": (7 * MIB + 5, "sluice-composite"),
    "single-md5": (70_000, "sluice-single"),
    "awscli-crc32": (9 * MIB + 1, "aws"),
    "awscli-md5-of-md5s": (9 * MIB + 7, "aws-no-checksum"),
}


def test_checksum_sends_the_same_size_edits_the_aws_cli_misses(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    prefix = "sync-checksum-%s/" % uuid.uuid4().hex[:8]
    target = "s3://%s/%s" % (BUCKET, prefix)
    for seed, (kind, (size, how)) in enumerate(KINDS.items()):
        for state in ["edited", "same"]:
            path = os.path.join(root, kind, state)
            write_old(path, random_bytes(size, seed))
            upload(env, how, path, target + kind + "/" + state)
    for kind in KINDS:
        rewrite_keeping_size_and_time(os.path.join(root, kind, "edited"))
    cwd = str(tmp_path)
    edited = {("upload", os.path.join(root, kind, "edited"), prefix + kind + "/edited") for kind in KINDS}

    # The oracle misses every edit (aws-cli #8377), and so does sluice by its rule.
    assert decisions(aws_sync(env, cwd, "tree", target, "--dryrun"), cwd) == set()
    status, out, err = sluice_sync(env, cwd, "tree", target, "--dryrun")
    assert status == 0 and out == "", (out, err)

    status, out, err = sluice_sync(env, cwd, "tree", target, "--dryrun", "--checksum", "--progress", "json")
    assert status == 0, err
    assert decisions(out, cwd) == edited, (out, err)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert {(line["decision"], line["path"], line["url"], line["reason"], line["dryrun"]) for line in lines} == \
        {("upload", path, "s3://%s/%s" % (BUCKET, key), "contentDiffers", True) for _, path, key in edited}, err
    assert "by content 10, by size and time only 0" in err, err

    status, out, err = sluice_sync(env, cwd, "tree", target, "--checksum", "--progress", "json")
    assert status == 0, err
    assert "5 files sent, 5 unchanged" in err, err
    # A real run's decisions are in the JSON lines too, as they are made.
    lines = [json.loads(line) for line in err.splitlines() if line.startswith('{"decision"')]
    assert {(line["path"], line["reason"], line["dryrun"]) for line in lines} == \
        {(path, "contentDiffers", False) for _, path, _ in edited}, err
    expected = {}
    for kind in KINDS:
        for state in ["edited", "same"]:
            with open(os.path.join(root, kind, state), "rb") as handle:
                expected[kind + "/" + state] = hashlib.sha256(handle.read()).hexdigest()
    assert bucket_listing(s3, prefix) == expected
    status, out, err = sluice_sync(env, cwd, "tree", target, "--dryrun", "--checksum")
    assert status == 0 and out == "", (out, err)


def test_an_object_with_nothing_to_compare_is_counted(moto_s3, env, tmp_path):
    url, _ = moto_s3
    # A client that sends no checksum it is not asked for (botocore's default sends a CRC32).
    client = boto3.client("s3", endpoint_url=url, aws_access_key_id="AKIDMOTO", aws_secret_access_key="moto", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required"))
    client.create_bucket(Bucket="sync-checksum")
    moto_env = dict(env, AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="AKIDMOTO", AWS_SECRET_ACCESS_KEY="moto")
    root = str(tmp_path / "tree")
    data = random_bytes(4000, 1)
    # SSE-KMS objects (their ETag is no MD5 on S3) with no checksum stored, and objects sluice
    # made with a composite CRC32C (moto returns it with neither its -N nor its type).
    for name in ["kms", "kms-same"]:
        client.put_object(Bucket="sync-checksum", Key="p/" + name, Body=data, ServerSideEncryption="aws:kms", SSEKMSKeyId="alias/k")
        write_old(os.path.join(root, name), data)
    assert "ChecksumCRC32" not in client.head_object(Bucket="sync-checksum", Key="p/kms", ChecksumMode="ENABLED")
    for name in ["composite", "composite-same"]:
        write_old(os.path.join(root, name), random_bytes(11 * MIB, 2))
        code, _, err = sluice(moto_env, "s3", "cp", os.path.join(root, name), "s3://sync-checksum/p/" + name,
                              "--part-size", "5MiB", "--progress", "none", timeout=300)
        assert code == 0, err
    rewrite_keeping_size_and_time(os.path.join(root, "kms"))
    rewrite_keeping_size_and_time(os.path.join(root, "composite"))
    status, out, err = sluice_sync(moto_env, str(tmp_path), "tree", "s3://sync-checksum/p/", "--dryrun", "--checksum")
    assert status == 0, err
    # The rewritten SSE-KMS object: no MD5 to trust, no checksum: size and time (old): kept, and
    # counted. The other one's ETag is its MD5 (moto's; S3's would not be, and it would be
    # counted too).
    assert out == "(dryrun) upload: tree/composite to s3://sync-checksum/p/composite\n", (out, err)
    assert "by content 3, by size and time only 1" in err, err


@pytest.mark.parametrize("args, message", [
    (["--checksum", "crc32c"], "s3 sync --checksum compares files by content and takes no value; "
                               "the upload's checksum algorithm is --checksum-algorithm crc32c"),
    (["--checksum=sha256"], "the upload's checksum algorithm is --checksum-algorithm sha256"),
    (["--checksum", "--size-only"], "--size-only and --checksum exclude each other"),
])
def test_checksum_with_a_value_is_one_clear_line(env, tmp_path, args, message):
    os.makedirs(str(tmp_path / "tree"))
    proc = subprocess.run([sluice_bin(), "s3", "sync", str(tmp_path / "tree"), "s3://b/p/", *args], env=env,
                          capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and message in err, err
