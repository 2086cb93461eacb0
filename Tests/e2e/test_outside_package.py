"""A package outside Sluice depends on it by path (`.package(path:)`) and uploads a file and a
directory with one call each: `S3Client()` configured as the AWS CLI is (a profile in
~/.aws/config and ~/.aws/credentials naming the SeaweedFS endpoint, picked by AWS_PROFILE),
`upload(file:to:)`, `upload(directory:to:)`. Every object is read back and compared by SHA-256.

The package (Tests/e2e/OutsidePackage) is built in debug under .build/outside-package (or
SLUICE_OUTSIDE_SCRATCH), so a run after the first rebuilds only what changed; SLUICE_SWIFT names
the swift to build with (e.g. a wrapper that holds a build slot)."""

import hashlib
import json
import os
import shlex
import subprocess
import time
import uuid

from test_s3_cli import BUCKET, object_sha256, s3, weed  # noqa: F401 (fixtures)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACKAGE = os.path.join(ROOT, "Tests", "e2e", "OutsidePackage")


def build_outside_package():
    """Builds the package in debug; returns its executable and the seconds the build took."""
    scratch = os.environ.get("SLUICE_OUTSIDE_SCRATCH", os.path.join(ROOT, ".build", "outside-package"))
    swift = shlex.split(os.environ.get("SLUICE_SWIFT", "swift"))
    environment = dict(os.environ, SLUICE_ROOT=ROOT)
    started = time.monotonic()
    build = subprocess.run([*swift, "build", "--package-path", PACKAGE, "--scratch-path", scratch, "--product", "OutsideApp"],
                           env=environment, capture_output=True, text=True, timeout=1500)
    seconds = time.monotonic() - started
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    path = subprocess.run([*swift, "build", "--package-path", PACKAGE, "--scratch-path", scratch, "--show-bin-path"],
                          env=environment, capture_output=True, text=True, check=True, timeout=300).stdout.strip()
    return os.path.join(path, "OutsideApp"), seconds


def test_a_package_outside_uploads_a_file_and_a_directory_in_one_call_each(weed, s3, tmp_path):
    executable, seconds = build_outside_package()
    print("the outside package built in %.1f s" % seconds)
    url, _, access, secret = weed
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text("[profile outside]\nregion = us-east-1\nendpoint_url = %s\n" % url)
    (home / ".aws" / "credentials").write_text("[outside]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (access, secret))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environment.update({"HOME": str(home), "AWS_PROFILE": "outside", "XDG_CACHE_HOME": str(tmp_path / "cache")})

    # A file of two parts (the default part size is 8 MiB) and a tree with nested folders.
    expected_file = os.urandom(9 << 20)
    (tmp_path / "big é.bin").write_bytes(expected_file)
    tree = tmp_path / "tree"
    expected_tree = {}
    for index in range(7):
        relative = "%s/f%d.bin" % (["a", "a/b", "ç d"][index % 3], index)
        data = os.urandom(index * 1009 + 1)
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_bytes(data)
        expected_tree[relative] = hashlib.sha256(data).hexdigest()

    prefix = "outside-%s/" % uuid.uuid4().hex[:8]
    run = subprocess.run([executable, str(tmp_path / "big é.bin"), str(tree), "s3://%s/%s" % (BUCKET, prefix)],
                         env=environment, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["key"] == prefix + "file/big é.bin"
    assert report["parts"] == 2 and report["eTag"].endswith("-2") and '"' not in report["eTag"]
    assert report["checksumAlgorithm"] == "CRC32C" and report["checksumType"] == "composite"
    assert report["uploaded"] == len(expected_tree) and report["failures"] == 0
    assert object_sha256(s3, prefix + "file/big é.bin") == (hashlib.sha256(expected_file).hexdigest(), len(expected_file))
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "tree/")["Contents"]
    assert sorted(item["Key"][len(prefix + "tree/"):] for item in listed) == sorted(expected_tree)
    for relative, digest in expected_tree.items():
        assert object_sha256(s3, prefix + "tree/" + relative)[0] == digest, relative
