"""The `s3 =` transfer settings of a profile in ~/.aws/config, applied as the AWS CLI applies
them (flags winning), on SeaweedFS: the part size a value means is the AWS CLI's own reading of
it (`awscli.customizations.s3.utils.human_readable_to_bytes`), seen in the object's part count;
`multipart_threshold` decides one PutObject or parts; a value the AWS CLI would refuse is one
line naming the file and the setting, exit 2, nothing sent."""

import math
import os
import subprocess
import uuid

import pytest
from awscli.customizations.s3.utils import human_readable_to_bytes

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, s3, weed  # noqa: F401 (fixtures)

MIB = 1 << 20


def configured(env, tmp_path, settings):
    config = tmp_path / "config"
    config.write_text("[default]\ns3 =\n" + "".join("  %s = %s\n" % item for item in settings.items()))
    return dict(env, AWS_CONFIG_FILE=str(config))


def source(tmp_path, size):
    path = tmp_path / "source"
    with open(path, "wb") as handle:
        handle.write(os.urandom(size))
    return str(path)


def parts(s3, key):
    """The object's part count from its ETag (`"…-N"`), 1 for a PutObject."""
    etag = s3.head_object(Bucket=BUCKET, Key=key)["ETag"].strip('"')
    return int(etag.split("-")[1]) if "-" in etag else 1


def run(env, *args):
    proc = subprocess.run([sluice_bin(), "s3", *args], env=env, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("chunk", ["16MB", "16MiB", "20mb", "6291456", "7 MB"])
def test_multipart_chunksize_is_the_part_size_the_aws_cli_reads(s3, env, tmp_path, chunk):
    path = source(tmp_path, 40 * MIB)
    key = "profile-%s" % uuid.uuid4().hex[:8]
    status, out, err = run(configured(env, tmp_path, {"multipart_chunksize": chunk}), "cp", path, "s3://%s/%s" % (BUCKET, key))
    assert status == 0, err
    assert parts(s3, key) == math.ceil(40 * MIB / human_readable_to_bytes(chunk.strip()))


def test_the_flag_wins_over_the_profile(s3, env, tmp_path):
    path = source(tmp_path, 40 * MIB)
    key = "profile-flag-%s" % uuid.uuid4().hex[:8]
    status, out, err = run(configured(env, tmp_path, {"multipart_chunksize": "16MB"}), "cp", path, "s3://%s/%s" % (BUCKET, key),
                           "--part-size", "8MiB")
    assert status == 0, err
    assert parts(s3, key) == 5


@pytest.mark.parametrize("threshold,expected", [("64MB", 1), ("20MB", 5)])
def test_multipart_threshold_decides_one_put_or_parts(s3, env, tmp_path, threshold, expected):
    path = source(tmp_path, 40 * MIB)
    key = "profile-threshold-%s" % uuid.uuid4().hex[:8]
    status, out, err = run(configured(env, tmp_path, {"multipart_threshold": threshold}), "cp", path, "s3://%s/%s" % (BUCKET, key))
    assert status == 0, err
    assert parts(s3, key) == expected


def test_a_directory_job_takes_the_profile_too(s3, env, tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    with open(root / "big", "wb") as handle:
        handle.write(os.urandom(40 * MIB))
    prefix = "profile-tree-%s/" % uuid.uuid4().hex[:8]
    settings = {"multipart_chunksize": "16MB", "max_concurrent_requests": "3", "max_bandwidth": "1GB/s"}
    status, out, err = run(configured(env, tmp_path, settings), "sync", str(root), "s3://%s/%s" % (BUCKET, prefix))
    assert status == 0, err
    assert parts(s3, prefix + "big") == 3


@pytest.mark.parametrize("name,value", [
    ("multipart_chunksize", "1MB"), ("multipart_chunksize", "abc"), ("multipart_chunksize", "1.5MB"),
    ("multipart_threshold", "0"), ("max_concurrent_requests", "0"), ("max_concurrent_requests", "many"),
    ("max_bandwidth", "-5MB/s"), ("max_bandwidth", "fast"), ("max_bandwidth", "1000"),
])
def test_a_value_the_aws_cli_refuses_is_one_line_and_nothing_sent(s3, env, tmp_path, name, value):
    path = source(tmp_path, 1024)
    key = "profile-bad-%s" % uuid.uuid4().hex[:8]
    status, out, err = run(configured(env, tmp_path, {name: value}), "cp", path, "s3://%s/%s" % (BUCKET, key))
    assert status == 2 and out == "" and len(err.splitlines()) == 1, (status, out, err)
    assert name in err and "config" in err, err
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=key).get("KeyCount", 0) == 0
