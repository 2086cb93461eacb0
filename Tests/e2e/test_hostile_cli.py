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
