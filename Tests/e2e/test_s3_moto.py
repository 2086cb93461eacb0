"""`sluice s3 cp` object options read back from moto (PyPI moto[server], in-process) with boto3:
HeadObject, GetObjectTagging, GetObjectAcl, GetObjectAttributes with checksums, object lock,
SSE-C, --no-clobber on both paths, and a bucket policy that requires SSE-KMS (enforced by
Tests/Peers/s3_proxy.py's require_sse_kms in front of moto, which evaluates no policy condition).

What moto does not do, and where it is checked instead: it serves an SSE-C object without the key
(SeaweedFS refuses: test_s3_object_options.py), keeps no object lock given on
CreateMultipartUpload, and Complete returns no checksum (SeaweedFS returns it and Sluice compares
it)."""

import base64
import datetime
import hashlib
import os
import sys
import uuid

import pytest

from conftest import REPO
from test_s3_cli import MIB, env, moto_s3, sluice, weed, write_random  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy, require_sse_kms  # noqa: E402

SIZES = [2000, 11 * MIB]  # one PutObject, one multipart upload of 3 parts


@pytest.fixture(scope="module")
def moto(moto_s3):
    """(url, boto3 client, bucket): a bucket of its own, and one with object lock."""
    url, client = moto_s3
    client.create_bucket(Bucket="options")
    client.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
    return url, client


def at(env, url):
    return dict(env, AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="AKIDMOTO", AWS_SECRET_ACCESS_KEY="moto")


def cp(env, path, bucket, name, *options):
    return sluice(env, "s3", "cp", str(path), "s3://%s/%s" % (bucket, name), "--part-size", "5MiB", "--progress", "none",
                  *options, timeout=300)


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


@pytest.mark.parametrize("size", SIZES)
def test_attributes_tags_acl_and_kms_read_back(moto, env, tmp_path, size):
    url, client = moto
    path = tmp_path / "report.csv"
    write_random(path, size, seed=size)
    name = "attributes/%s.csv" % uuid.uuid4().hex[:8]
    code, out, err = cp(at(env, url), path, "options", name,
                        "--cache-control", "max-age=60", "--content-disposition", 'attachment; filename="r.csv"',
                        "--content-encoding", "identity", "--content-language", "fr", "--expires", "2030-01-31T12:00:00Z",
                        "--metadata", "owner=ops", "--metadata", "build=42", "--storage-class", "STANDARD_IA",
                        "--sse", "aws:kms", "--sse-kms-key-id", "alias/data", "--tag", "team=data ops", "--tag", "tier=a=b",
                        "--acl", "public-read", "--expected-bucket-owner", "123456789012")
    assert code == 0, err
    head = client.head_object(Bucket="options", Key=name)
    assert head["ContentLength"] == size
    assert head["ContentType"] == "text/csv"  # guessed from the name
    assert (head["CacheControl"], head["ContentDisposition"], head["ContentEncoding"], head["ContentLanguage"]) == \
        ("max-age=60", 'attachment; filename="r.csv"', "identity", "fr")
    assert head["Expires"] == datetime.datetime(2030, 1, 31, 12, 0, tzinfo=datetime.timezone.utc)
    assert head["Metadata"] == {"owner": "ops", "build": "42"}
    assert head["StorageClass"] == "STANDARD_IA"
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", "alias/data")
    tags = client.get_object_tagging(Bucket="options", Key=name)["TagSet"]
    assert {t["Key"]: t["Value"] for t in tags} == {"team": "data ops", "tier": "a=b"}
    grants = client.get_object_acl(Bucket="options", Key=name)["Grants"]
    assert {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"}, "Permission": "READ"} in grants
    attributes = client.get_object_attributes(Bucket="options", Key=name, ObjectAttributes=["StorageClass", "ObjectSize"])
    assert (attributes["StorageClass"], attributes["ObjectSize"]) == ("STANDARD_IA", size)


@pytest.mark.parametrize("size", SIZES[:1])  # moto keeps no lock of a multipart upload (the headers go on its Create)
def test_object_lock_read_back(moto, env, tmp_path, size):
    url, client = moto
    path = tmp_path / "held.bin"
    write_random(path, size, seed=3)
    name = "lock/%s.bin" % uuid.uuid4().hex[:8]
    code, out, err = cp(at(env, url), path, "locked", name, "--object-lock-mode", "GOVERNANCE",
                        "--object-lock-retain-until", "2030-01-31T12:00:00Z", "--object-lock-legal-hold", "ON")
    assert code == 0, err
    head = client.head_object(Bucket="locked", Key=name)
    assert (head["ObjectLockMode"], head["ObjectLockLegalHoldStatus"]) == ("GOVERNANCE", "ON")
    assert head["ObjectLockRetainUntilDate"].astimezone(datetime.timezone.utc) == \
        datetime.datetime(2030, 1, 31, 12, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("algorithm, checksum_type", [
    ("crc64nvme", None), ("crc32", "full-object"), ("crc32c", "full-object"), ("crc32c", None), ("sha256", None), ("sha1", None),
])
@pytest.mark.parametrize("size", SIZES)
def test_get_object_attributes_shows_the_checksum(moto, env, tmp_path, algorithm, checksum_type, size):
    url, client = moto
    path = tmp_path / "data.bin"
    write_random(path, size, seed=11)
    name = "checksums/%s.bin" % uuid.uuid4().hex[:8]
    options = ["--checksum", algorithm] + (["--checksum-type", checksum_type] if checksum_type else [])
    code, out, err = cp(at(env, url), path, "options", name, *options)
    assert code == 0, err
    attributes = client.get_object_attributes(Bucket="options", Key=name, ObjectAttributes=["Checksum", "ObjectParts", "ObjectSize"])
    stored = attributes["Checksum"]["Checksum" + algorithm.upper()]
    whole = size < 5 * MIB or algorithm == "crc64nvme" or checksum_type == "full-object"
    if whole:
        # The object's checksum is the file's own: sluice checksum prints it without a download.
        code, out, err = sluice(env, "checksum", "--algorithm", algorithm, str(path))
        assert code == 0, err
        assert out.split() == [stored, str(size)]
        if size >= 5 * MIB:
            assert attributes["Checksum"]["ChecksumType"] == "FULL_OBJECT"
    else:
        # Composite: the checksum of the parts' checksums (moto shows it without the "-3").
        data = path.read_bytes()
        parts = [data[i:i + 5 * MIB] for i in range(0, size, 5 * MIB)]
        assert stored.split("-")[0] == composite(algorithm, parts), attributes
        assert attributes["Checksum"]["ChecksumType"] == "COMPOSITE"


def composite(algorithm, parts):
    """S3's composite checksum: the algorithm over the parts' binary checksums, base64."""
    if algorithm == "crc32c":
        import crc32c
        digest = lambda data: crc32c.crc32c(data).to_bytes(4, "big")  # noqa: E731
    else:
        digest = lambda data: hashlib.new(algorithm, data).digest()  # noqa: E731
    return base64.b64encode(digest(b"".join(digest(part) for part in parts))).decode()


@pytest.mark.parametrize("size", SIZES)
def test_sse_c_upload_carries_the_key_on_every_request(moto, env, tmp_path, size):
    # moto accepts it and serves it with the key (and without it, too: SeaweedFS is where a
    # read without the key is refused, test_s3_object_options.py).
    url, client = moto
    path = tmp_path / "secret.bin"
    write_random(path, size, seed=5)
    key = os.urandom(32)
    key_file = tmp_path / "key"
    key_file.write_bytes(key)
    name = "ssec/%s.bin" % uuid.uuid4().hex[:8]
    code, out, err = cp(at(env, url), path, "options", name, "--sse-c", "AES256", "--sse-c-key-file", str(key_file))
    assert code == 0, err
    assert client.get_object(Bucket="options", Key=name, SSECustomerAlgorithm="AES256", SSECustomerKey=key)["Body"].read() == path.read_bytes()


def test_no_clobber_is_refused_on_both_paths_and_nothing_is_left_billed(moto, env, tmp_path):
    url, client = moto
    name = "clobber/%s.bin" % uuid.uuid4().hex[:8]
    client.put_object(Bucket="options", Key=name, Body=b"older")
    for size in SIZES:
        path = tmp_path / ("f%d" % size)
        write_random(path, size, seed=7)
        code, out, err = cp(at(env, url), path, "options", name, "--no-clobber")
        assert code == 1 and one_line(err) and "exists, kept" in err, (size, code, err)
    assert client.get_object(Bucket="options", Key=name)["Body"].read() == b"older"
    assert not [u for u in client.list_multipart_uploads(Bucket="options").get("Uploads", []) if u["Key"] == name]
    # Where no object has the key, the same command writes it.
    fresh = name + ".new"
    assert cp(at(env, url), tmp_path / ("f%d" % SIZES[1]), "options", fresh, "--no-clobber")[0] == 0
    assert client.head_object(Bucket="options", Key=fresh)["ContentLength"] == SIZES[1]


@pytest.mark.parametrize("size", SIZES)
def test_a_bucket_policy_requiring_sse_kms_refuses_without_and_accepts_with_it(moto, env, tmp_path, size):
    url, client = moto
    proxy = FaultProxy(int(url.rsplit(":", 1)[1]))
    proxy.policy = require_sse_kms
    path = tmp_path / "upload.bin"
    write_random(path, size, seed=13)
    name = "policy/%s.bin" % uuid.uuid4().hex[:8]
    through = at(env, "http://127.0.0.1:%d" % proxy.port)
    try:
        code, out, err = cp(through, path, "options", name)
        assert code == 1 and out == "" and one_line(err), (code, err)
        assert "403 access denied (AccessDenied)" in err, err
        assert proxy.refused == ["put" if size < 5 * MIB else "create"] and "part" not in proxy.actions, proxy.actions
        for sse in (["--sse", "AES256"], ["--sse", "aws:kms:dsse"]):
            assert cp(through, path, "options", name, *sse)[0] == 1
        code, out, err = cp(through, path, "options", name, "--sse", "aws:kms")
        assert code == 0, err
    finally:
        proxy.close()
    head = client.head_object(Bucket="options", Key=name)
    assert head["ServerSideEncryption"] == "aws:kms" and head["ContentLength"] == size
