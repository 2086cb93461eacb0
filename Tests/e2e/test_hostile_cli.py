"""Hostile input, round two (issue 18): what a server sends is read with a bound, nothing waits
for ever, no password reaches a message, file-system errors are said in Sluice's words, nothing
is done before a refusal, and the lines say what is true. Every case ends by itself quickly:
the right result, or one `sluice: ...` line and a non-zero status.

Against the real peers (SeaweedFS through test_s3_cli.py's fixtures, tuspyserver, the fault
server) and, where a server must lie, Tests/Peers/s3_proxy.py's FaultProxy or a small server here."""

import os
import subprocess
import sys
import urllib.parse

import pytest

from conftest import REPO, need_env, sluice_bin
from test_s3_cli import BUCKET, MIB, env, key, s3, sluice, weed  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy  # noqa: E402

SECRET = "SECRETPW"


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def run(*args, env=None, stdin=None, input_bytes=None, timeout=60):
    proc = subprocess.run([sluice_bin(), *args], env=env, stdin=stdin, input=input_bytes, capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


# --- 3. Passwords in URLs never reach a message ---


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
def test_a_redirect_to_a_url_with_a_password_is_reported_without_it(transport):
    fault = need_env("SLUICE_FAULT_URL")
    port = urllib.parse.urlsplit(fault).port
    target = "http://user:%s@127.0.0.1:%d/sink" % (SECRET, port)
    # stdin cannot be replayed: the line names the redirect's target.
    status, _, err = run("upload", "-", "%s/redirect-307?to=%s" % (fault, urllib.parse.quote(target, safe="")),
                         "--transport", transport, input_bytes=os.urandom(3 * MIB))
    assert status == 1 and one_line(err), (status, err)
    assert SECRET not in err, err
    if transport == "curl":
        assert "user:***@127.0.0.1" in err, err


def test_a_password_in_the_tus_endpoint_is_not_printed(tmp_path):
    source = tmp_path / "f.bin"
    source.write_bytes(b"x" * 1000)
    status, _, err = run("tus", str(source), "http://user:%s@127.0.0.1:1/files/" % SECRET, "--retries", "0",
                         "--state", str(tmp_path / "state"))
    assert status == 1 and one_line(err), (status, err)
    assert SECRET not in err and "user:***@127.0.0.1:1" in err, err


def test_an_s3_redirect_with_a_password_is_reported_without_it(s3, weed, env):
    proxy = FaultProxy(weed[1])
    try:
        proxy.rewrite["put"] = lambda s, h, b: (307, [("Location", "http://user:%s@127.0.0.1:1/elsewhere" % SECRET)], b"")
        status, out, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port),
                                  "s3", "cp", "synthetic:1000", "s3://%s/%s" % (BUCKET, key()), timeout=60)
    finally:
        proxy.close()
    assert status == 1 and one_line(err), (status, err)
    assert SECRET not in err and "user:***@127.0.0.1:1" in err, err


# --- 4. File-system errors in Sluice's words; 5. nothing done before a refusal ---


def unusable_states(tmp_path):
    """(--state value, words the line must hold): a file, a path under a file, under /proc, /sys."""
    plain = tmp_path / "a-file"
    plain.write_text("not a directory")
    return [(str(plain), "exists and is not a directory"), (str(plain / "below"), "exists and is not a directory"),
            ("/proc/sluice-state", "no such file or directory"), ("/sys/sluice-state", "permission denied")]


def tus_store_files():
    return set(os.listdir(need_env("SLUICE_TUS_STORE")))


def test_tus_with_an_unusable_state_directory_is_refused_before_it_creates_an_upload(tmp_path):
    endpoint = need_env("SLUICE_TUS_URL")
    source = tmp_path / "f.bin"
    source.write_bytes(os.urandom(100000))
    for state, words in unusable_states(tmp_path):
        before = tus_store_files()
        status, out, err = run("tus", str(source), endpoint, "--state", state)
        assert status == 1 and out == "" and one_line(err), (state, status, err)
        assert "resume state directory" in err and words in err, (state, err)
        assert "Error Domain" not in err and "UserInfo" not in err, err
        # Before: the upload was created, then the record could not be written: an orphan each run.
        assert tus_store_files() == before, (state, tus_store_files() - before)


def test_s3_cp_with_an_unusable_state_directory_says_why_in_a_few_words(s3, env, tmp_path):
    for state, words in unusable_states(tmp_path):
        status, out, err = sluice(env, "s3", "cp", "synthetic:11MiB", "s3://%s/%s" % (BUCKET, key()), "--part-size", "5MiB",
                                  "--state", state, timeout=60)
        assert status == 1 and out == "" and one_line(err), (state, status, err)
        assert words in err and "Error Domain" not in err and "UserInfo" not in err, (state, err)


def test_s3_cp_without_credentials_touches_nothing(env, tmp_path):
    # $HOME does not exist: before, sluice created $HOME/.cache/sluice/s3, then found no credentials.
    home = tmp_path / "no-such-home"
    bare = {k: v for k, v in env.items() if not k.startswith("AWS_") and k != "XDG_CACHE_HOME"}
    bare.update(HOME=str(home), AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null", AWS_ENDPOINT_URL=env["AWS_ENDPOINT_URL"])
    for spec in ["synthetic:11MiB", "synthetic:10"]:
        status, out, err = sluice(bare, "s3", "cp", spec, "s3://%s/%s" % (BUCKET, key()), "--part-size", "5MiB", timeout=60)
        assert status == 2 and out == "" and one_line(err) and "no AWS credentials" in err, (status, err)
        assert not home.exists(), list(home.rglob("*"))
    status, _, err = sluice(bare, "s3", "abort", "s3://%s/%s" % (BUCKET, key()), timeout=60)
    assert status != 0 and one_line(err) and "no AWS credentials" in err, (status, err)
    assert not home.exists()


def test_a_resume_record_that_is_a_symlink_to_dev_zero_is_named_as_such(s3, env, tmp_path):
    source = tmp_path / "src.bin"
    source.write_bytes(os.urandom(11 * MIB))
    name = key()
    args = ["s3", "cp", str(source), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB"]
    # A first run leaves a record (its upload is refused at Complete by a proxy that fails it).
    proxy = FaultProxy(need_weed_port(env))
    try:
        proxy.rewrite["complete"] = lambda s, h, b: (403, [("Content-Type", "application/xml")],
                                                     b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>")
        status, _, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port), *args, timeout=60)
        assert status == 1, err
    finally:
        proxy.close()
    records = [os.path.join(root, f) for root, _, files in os.walk(env["XDG_CACHE_HOME"]) for f in files if f.endswith(".json")]
    assert len(records) == 1, records
    os.unlink(records[0])
    os.symlink("/dev/zero", records[0])
    status, out, err = sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port), *args, timeout=30)
    assert status == 1 and one_line(err), (status, err)
    assert "not a regular file (a character device)" in err and "permission" not in err.lower(), err


def need_weed_port(env):
    return urllib.parse.urlsplit(env["AWS_ENDPOINT_URL"]).port


# --- 10. Configuration files are read up to a cap ---


@pytest.mark.parametrize("which", ["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"])
def test_a_huge_aws_config_file_is_refused_in_one_line_naming_it(env, tmp_path, which):
    path = tmp_path / "huge"
    with open(path, "wb") as handle:
        handle.write(b"[default]\nregion = us-east-1\n# " + b"x" * (8 * MIB) + b"\n")
    status, out, err = sluice(dict(env, **{which: str(path)}), "s3", "cp", "synthetic:10", "s3://%s/%s" % (BUCKET, key()), timeout=20)
    assert status == 2 and out == "" and one_line(err), (status, err)
    assert str(path) in err and "larger than" in err, err
