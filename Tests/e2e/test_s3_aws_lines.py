"""aws-cli's output contract, side by side with the AWS CLI on SeaweedFS: the per-file lines of
`s3 cp`, `s3 cp --recursive` and `s3 sync` (`upload: ./f to s3://b/k`, `delete: s3://b/k`) and of
their `--dryrun` (`(dryrun) upload: …`) are the lines `aws` prints for the same command in the
same directory (the two write under prefixes of their own, swapped for one name before the
lines are compared; the order of parallel uploads is not compared). `--quiet` and
`--only-show-errors` print nothing on success; a failure is still named, and stdout that cannot
take a line ends the run with 1 once the files are stored."""

import os
import subprocess
import sys
import uuid

import pytest

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, s3, weed  # noqa: F401 (fixtures)


def tree(root):
    """A small tree: files at the top, below, and a name with a space."""
    for relative, data in {"a": b"a", "sub/b": b"bb", "sub/deep/c d": b"ccc", "f": b"f"}.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        # Older than any object: a sync run after the first finds every file unchanged (the
        # AWS CLI compares the file's time with LastModified, which SeaweedFS keeps in seconds).
        os.utime(path, (1_500_000_000, 1_500_000_000))


def aws(env, cwd, *args):
    proc = subprocess.run([sys.executable, "-m", "awscli", "s3", *args, "--no-progress", "--endpoint-url", env["AWS_ENDPOINT_URL"]],
                          env=dict(env, PYTHONIOENCODING="utf-8"), cwd=cwd, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    return proc.stdout.decode("utf-8")


def sluice(env, cwd, *args):
    proc = subprocess.run([sluice_bin(), "s3", *args], env=env, cwd=cwd, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")


def keys(s3, prefix):
    return [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]


def lines(out, prefix):
    """The lines of `out`, their prefix named P, sorted (parallel uploads end in any order)."""
    return sorted(line.replace("s3://%s/%s" % (BUCKET, prefix), "s3://%s/P/" % BUCKET) for line in out.splitlines())


# (working directory below the test's directory, arguments with {root} for the tree's absolute
# path and {dest} for the prefix's URL)
COMMANDS = {
    "cp file": ("w/tree", ["cp", "f", "{dest}k"]),
    "cp ./file": ("w/tree", ["cp", "./f", "{dest}k"]),
    "cp file below": ("w", ["cp", "tree/sub/b", "{dest}k"]),
    "cp absolute file": ("w", ["cp", "{root}/a", "{dest}k"]),
    "cp file from elsewhere": ("w/tree/sub", ["cp", "../a", "{dest}k"]),
    "cp file to prefix/": ("w", ["cp", "tree/f", "{dest}dir/"]),
    "cp -r": ("w", ["cp", "tree", "{dest}", "--recursive"]),
    "cp -r dir/": ("w", ["cp", "tree/", "{dest}", "--recursive"]),
    "cp -r .": ("w/tree", ["cp", ".", "{dest}", "--recursive"]),
    "cp -r absolute": ("w/tree/sub", ["cp", "{root}", "{dest}", "--recursive"]),
    "cp -r filtered": ("w", ["cp", "tree", "{dest}", "--recursive", "--exclude", "sub/*"]),
    "sync": ("w", ["sync", "tree", "{dest}"]),
    "sync .": ("w/tree", ["sync", ".", "{dest}"]),
}


@pytest.mark.parametrize("dryrun", [False, True], ids=["sent", "dryrun"])
@pytest.mark.parametrize("name", list(COMMANDS), ids=list(COMMANDS))
def test_per_file_lines_equal_the_aws_clis(s3, env, tmp_path, name, dryrun):
    root = str(tmp_path / "w" / "tree")
    tree(root)
    directory, template = COMMANDS[name]
    cwd = str(tmp_path / directory)
    run = "lines-%s/" % uuid.uuid4().hex[:8]
    outputs = {}
    for tool in ("aws", "sluice"):
        prefix = run + tool + "/"
        args = [item.format(root=root, dest="s3://%s/%s" % (BUCKET, prefix)) for item in template] + (["--dryrun"] if dryrun else [])
        if tool == "aws":
            outputs[tool] = lines(aws(env, cwd, *args), prefix)
        else:
            status, out, err = sluice(env, cwd, *args)
            assert status == 0, err
            outputs[tool] = lines(out, prefix)
    assert outputs["sluice"] == outputs["aws"], outputs
    # The oracle said something: every case sends at least one file.
    assert outputs["aws"] and all(line.startswith("(dryrun) upload: " if dryrun else "upload: ") for line in outputs["aws"])


@pytest.mark.parametrize("dryrun", [False, True], ids=["sent", "dryrun"])
def test_sync_delete_lines_equal_the_aws_clis(s3, env, tmp_path, dryrun):
    """A sync that uploads a new file and deletes the object of a file removed: both tools from
    the same state of their own prefix."""
    root = str(tmp_path / "w" / "tree")
    tree(root)
    cwd = str(tmp_path / "w")
    run = "delete-%s/" % uuid.uuid4().hex[:8]
    outputs = {}
    for tool in ("aws", "sluice"):
        prefix = run + tool + "/"
        dest = "s3://%s/%s" % (BUCKET, prefix)
        aws(env, cwd, "sync", "tree", dest)
        s3.put_object(Bucket=BUCKET, Key=prefix + "gone", Body=b"gone")
        s3.put_object(Bucket=BUCKET, Key=prefix + "sub/gone too", Body=b"gone")
        with open(os.path.join(root, "new-%s" % tool), "wb") as handle:
            handle.write(b"new")
        os.utime(os.path.join(root, "new-%s" % tool), (1_500_000_000, 1_500_000_000))
        args = ["sync", "tree", dest, "--delete", "--exclude", "new-aws" if tool == "sluice" else "new-sluice"]
        args += ["--dryrun"] if dryrun else []
        if tool == "aws":
            out = aws(env, cwd, *args)
        else:
            status, out, err = sluice(env, cwd, *args)
            assert status == 0, err
        outputs[tool] = lines(out.replace("new-" + tool, "new"), prefix)
    assert outputs["sluice"] == outputs["aws"], outputs
    assert len(outputs["aws"]) == 3, outputs["aws"]
    if not dryrun:
        listed = keys(s3, run + "sluice/")
        assert run + "sluice/gone" not in listed and run + "sluice/new-sluice" in listed, listed


@pytest.mark.parametrize("quiet", ["--quiet", "--only-show-errors"])
@pytest.mark.parametrize("command", ["cp", "cp -r", "sync"])
def test_quiet_modes_print_nothing_on_success(s3, env, tmp_path, quiet, command):
    root = str(tmp_path / "tree")
    tree(root)
    prefix = "quiet-%s/" % uuid.uuid4().hex[:8]
    dest = "s3://%s/%s" % (BUCKET, prefix)
    args = {"cp": ["cp", root + "/a", dest + "a"], "cp -r": ["cp", root, dest, "-r"], "sync": ["sync", root, dest]}[command]
    status, out, err = sluice(env, str(tmp_path), *args, quiet, "--progress", "bar")
    assert status == 0 and out == "" and err == "", (status, out, err)
    listed = keys(s3, prefix)
    assert listed == ([prefix + "a"] if command == "cp" else sorted(prefix + k for k in ["a", "f", "sub/b", "sub/deep/c d"]))


@pytest.mark.parametrize("quiet", ["--quiet", "--only-show-errors"])
def test_quiet_modes_still_name_a_failure(s3, env, tmp_path, quiet):
    """A file whose key is over S3's 1,024 bytes fails; the others are sent and the failure is
    named on stderr, with the exit status 1."""
    root = str(tmp_path / "tree")
    tree(root)
    deep = os.path.join(root, *(["d" * 200] * 6))
    os.makedirs(deep)
    with open(os.path.join(deep, "long"), "wb") as handle:
        handle.write(b"x")
    prefix = "quietfail-%s/" % uuid.uuid4().hex[:8]
    status, out, err = sluice(env, str(tmp_path), "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix), quiet)
    assert status == 1 and out == "", (status, out, err)
    assert "long" in err and "1,024" in err.replace("1024", "1,024"), err
    listed = keys(s3, prefix)
    assert len(listed) == 4, listed


def test_a_closed_stdout_ends_a_recursive_copy_with_1_after_storing_every_file(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    tree(root)
    prefix = "closed-%s/" % uuid.uuid4().hex[:8]
    proc = subprocess.run([sluice_bin(), "s3", "cp", "-r", root, "s3://%s/%s" % (BUCKET, prefix)], env=env,
                          stderr=subprocess.PIPE, timeout=300, preexec_fn=lambda: os.close(1))
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1 and "stdout" in err, (proc.returncode, err)
    assert len(keys(s3, prefix)) == 4


def test_dryrun_sends_nothing_and_names_what_cannot_be_sent(s3, env, tmp_path):
    root = str(tmp_path / "tree")
    tree(root)
    prefix = "dry-%s/" % uuid.uuid4().hex[:8]
    dest = "s3://%s/%s" % (BUCKET, prefix)
    for args in (["cp", root + "/a", dest + "a"], ["cp", root, dest, "-r"]):
        status, out, err = sluice(env, str(tmp_path), *args, "--dryrun")
        assert status == 0 and out.startswith("(dryrun) upload: "), (status, out, err)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("KeyCount", 0) == 0
    status, out, err = sluice(env, str(tmp_path), "cp", root + "/missing", dest + "m", "--dryrun")
    assert status == 1 and out == "" and len(err.splitlines()) == 1 and "no such file" in err, (status, out, err)
    status, out, err = sluice(env, str(tmp_path), "cp", root, dest + "d", "--dryrun")
    assert status == 1 and "--recursive" in err, (status, out, err)
    # A dry run keeps no record: no journal under the state directory.
    assert not os.path.exists(os.path.join(env["XDG_CACHE_HOME"], "sluice", "jobs")) or \
        os.listdir(os.path.join(env["XDG_CACHE_HOME"], "sluice", "jobs")) == []


def test_lines_faster_than_a_tick_come_whole_and_before_the_summary(s3, env, tmp_path):
    # 600 files end within a tick or two: their lines are held and written together
    # (`Terminal.line`); on one stream with stderr each must still be whole, once, and before
    # the summary that follows them.
    root = tmp_path / "many"
    root.mkdir()
    for number in range(600):
        (root / ("f%03d" % number)).write_bytes(b"x" * (number % 7))
    prefix = "held-%s/" % uuid.uuid4().hex[:8]
    proc = subprocess.run([sluice_bin(), "s3", "cp", "-r", "many", "s3://%s/%s" % (BUCKET, prefix)], env=env,
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    out = proc.stdout.decode("utf-8", "replace").splitlines()
    assert proc.returncode == 0, out[-5:]
    expected = ["upload: many/f%03d to s3://%s/%sf%03d" % (n, BUCKET, prefix, n) for n in range(600)]
    assert sorted(out[:-1]) == expected, [line for line in out if line not in expected][:5]
    assert out[-1].startswith("sluice: 600 files sent"), out[-3:]
    assert len(keys(s3, prefix)) == 600
