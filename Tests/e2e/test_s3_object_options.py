"""`sluice s3 cp` object options and checksums against SeaweedFS (the server of test_s3_cli),
read back with boto3; `sluice checksum --algorithm` against what the server reports."""

import base64
import os
import subprocess
import uuid

import pytest

from test_s3_cli import BUCKET, MIB, env, moto_s3, s3, sluice, weed, write_random  # noqa: F401 (fixtures)


def key():
    return "options/%s.bin" % uuid.uuid4().hex[:8]


def test_full_object_crc64nvme_equals_sluice_checksum_of_the_file(s3, env, tmp_path):
    path = tmp_path / "f.bin"
    write_random(path, 11 * MIB + 3, seed=64)
    name = key()
    code, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB",
                            "--checksum", "crc64nvme", "--progress", "none")
    assert code == 0, err
    head = s3.head_object(Bucket=BUCKET, Key=name, ChecksumMode="ENABLED")
    code, out, err = sluice(env, "checksum", "--algorithm", "crc64nvme", str(path))
    assert code == 0, err
    assert out.split() == [head["ChecksumCRC64NVME"], str(11 * MIB + 3)]
    assert head.get("ChecksumType") == "FULL_OBJECT"


def test_no_clobber_single_and_multipart(s3, env, tmp_path):
    name = key()
    small = tmp_path / "small.bin"
    write_random(small, 1000, seed=1)
    assert sluice(env, "s3", "cp", str(small), "s3://%s/%s" % (BUCKET, name), "--progress", "none")[0] == 0
    big = tmp_path / "big.bin"
    write_random(big, 11 * MIB, seed=2)
    for path in (small, big):
        code, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--no-clobber",
                                "--progress", "none")
        assert code != 0 and code != 2, err
        assert "exists, kept" in err and len(err.strip().splitlines()) == 1, err
    assert s3.head_object(Bucket=BUCKET, Key=name)["ContentLength"] == 1000
    assert not [u for u in s3.list_multipart_uploads(Bucket=BUCKET, Prefix=name).get("Uploads", []) if u["Key"] == name]


@pytest.mark.parametrize("size", [2000, 11 * MIB])
def test_attributes_tags_and_sse_c(s3, env, tmp_path, size):
    path = tmp_path / "page.bin"
    write_random(path, size, seed=3)
    key_file = tmp_path / "key"
    key_file.write_bytes(b"0123456789abcdef0123456789abcdef")
    name = key()
    code, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--content-type", "text/csv",
                            "--cache-control", "max-age=60", "--tag", "team=data", "--metadata", "owner=ops",
                            "--sse-c", "AES256", "--sse-c-key-file", str(key_file), "--part-size", "5MiB", "--progress", "none")
    assert code == 0, err
    assert "0123456789abcdef" not in out + err
    sse = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key_file.read_bytes()}
    head = s3.head_object(Bucket=BUCKET, Key=name, **sse)
    assert head["ContentType"] == "text/csv" and head["CacheControl"] == "max-age=60"
    assert head["Metadata"] == {"owner": "ops"}
    assert {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=BUCKET, Key=name)["TagSet"]} == {"team": "data"}
    assert s3.get_object(Bucket=BUCKET, Key=name, **sse)["Body"].read() == path.read_bytes()
    with pytest.raises(Exception):
        s3.head_object(Bucket=BUCKET, Key=name)
    with pytest.raises(Exception):
        s3.get_object(Bucket=BUCKET, Key=name)


@pytest.mark.parametrize("arguments, words", [
    (["--sse-c", "AES256", "--sse", "AES256", "--sse-c-key-file", "KEY"], "exclude"),
    (["--sse-c", "AES256", "--sse-c-key-file", "SHORT"], "32 bytes"),
    (["--tag", "a=1", "--tag", "b=2", "--tag", "c=3", "--tag", "d=4", "--tag", "e=5", "--tag", "f=6", "--tag", "g=7",
      "--tag", "h=8", "--tag", "i=9", "--tag", "j=10", "--tag", "k=11"], "11 tags"),
    (["--no-clobber", "--if-match", "abc"], "exclude"),
    (["--checksum", "crc64nvme", "--checksum-type", "composite"], "full-object only"),
    (["--metadata", "name=caf\u00e9"], "RFC 2047"),
    (["--sse-kms-key-id", "k"], "aws:kms"),
])
def test_bad_combinations_are_usage_errors_before_any_request(env, tmp_path, arguments, words):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    (tmp_path / "KEY").write_bytes(b"k" * 32)
    (tmp_path / "SHORT").write_bytes(b"k" * 31)
    arguments = [str(tmp_path / a) if a in ("KEY", "SHORT") else a for a in arguments]
    blocked = dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:9")  # nothing listens: a request would fail otherwise
    code, out, err = sluice(blocked, "s3", "cp", str(path), "s3://%s/x" % BUCKET, *arguments)
    assert code == 2, err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_recursive_no_clobber_counts_existing_objects_as_kept(s3, env, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (tree / name).write_bytes(name.encode() * 10)
    prefix = "kept-%s/" % uuid.uuid4().hex[:8]
    s3.put_object(Bucket=BUCKET, Key=prefix + "b.txt", Body=b"older")
    code, out, err = sluice(env, "s3", "cp", "-r", str(tree), "s3://%s/%s" % (BUCKET, prefix), "--no-clobber", "--progress", "none")
    assert code == 0, err
    assert "2 files sent" in err + out and "1 exists, kept" in err + out, err
    assert s3.get_object(Bucket=BUCKET, Key=prefix + "b.txt")["Body"].read() == b"older"


# --- Content-Type guessed from the file's name, as the AWS CLI guesses it ---

GUESS_NAMES = ["page.HTML", "data.json", "archive.tar.gz", "photo.JPG", "README", ".hidden", "notes.md", "big.csv"]
# What SeaweedFS stores when no Content-Type is sent and the bytes are random (it sniffs them).
SNIFFED_BINARY = "application/octet-stream"


def python_guess(path):
    """The type the AWS CLI sends for `path` (awscli's guess_content_type of its absolute path)."""
    from awscli.customizations.s3.utils import guess_content_type
    return guess_content_type(os.path.abspath(str(path)))


def test_content_type_is_guessed_from_the_name_as_the_aws_cli_does(s3, env, tmp_path):
    prefix = "guess-%s/" % uuid.uuid4().hex[:8]
    expected = {}
    for name in GUESS_NAMES:
        path = tmp_path / name
        # One multipart upload among them: the type goes on CreateMultipartUpload.
        write_random(path, 11 * MIB if name == "big.csv" else 100, seed=len(name))
        code, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/%s%s" % (BUCKET, prefix, name), "--part-size", "5MiB",
                                "--progress", "none")
        assert code == 0, err
        expected[name] = python_guess(path) or SNIFFED_BINARY
    got = {name: s3.head_object(Bucket=BUCKET, Key=prefix + name)["ContentType"] for name in GUESS_NAMES}
    assert got == expected
    assert expected["archive.tar.gz"] == "application/x-tar" and expected["README"] == SNIFFED_BINARY


def test_recursive_guesses_each_file_and_the_explicit_type_wins(s3, env, tmp_path):
    tree = tmp_path / "site"
    (tree / "css").mkdir(parents=True)
    names = ("index.html", "css/site.CSS", "logo.svg", "LICENSE")
    for name in names:
        write_random(tree / name, 100, seed=len(name))
    prefix = "guess-r-%s/" % uuid.uuid4().hex[:8]
    assert sluice(env, "s3", "cp", "-r", str(tree), "s3://%s/%s" % (BUCKET, prefix), "--progress", "none")[0] == 0
    got = {name: s3.head_object(Bucket=BUCKET, Key=prefix + name)["ContentType"] for name in names}
    assert got == {name: python_guess(tree / name) or SNIFFED_BINARY for name in names}
    assert got["css/site.CSS"] == "text/css"
    # --content-type wins over the guess for every file.
    prefix2 = prefix + "given/"
    assert sluice(env, "s3", "cp", "-r", str(tree), "s3://%s/%s" % (BUCKET, prefix2), "--content-type", "text/x-given",
                  "--progress", "none")[0] == 0
    for name in names:
        assert s3.head_object(Bucket=BUCKET, Key=prefix2 + name)["ContentType"] == "text/x-given", name


@pytest.mark.parametrize("size", [100, 11 * MIB])
def test_no_guess_mime_type_sends_none(moto_s3, env, tmp_path, size):
    # moto, which stores its default (binary/octet-stream) for an object sent without a type
    # (SeaweedFS guesses one of its own from the key).
    url, client = moto_s3
    env = dict(env, AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="AKIDMOTO", AWS_SECRET_ACCESS_KEY="moto")
    path = tmp_path / "page.html"
    write_random(path, size, seed=9)
    types = []
    for extra in ([], ["--no-guess-mime-type"]):
        name = "guess-none-%s/page.html" % uuid.uuid4().hex[:8]
        code, out, err = sluice(env, "s3", "cp", str(path), "s3://opaque-keys/" + name, *extra, "--part-size", "5MiB",
                                "--progress", "none")
        assert code == 0, err
        types.append(client.head_object(Bucket="opaque-keys", Key=name)["ContentType"])
    assert types == ["text/html", "binary/octet-stream"]
