"""The CLI at its edges: credentials across a redirect to another origin, a response larger
than any in-memory cap streamed whole to stdout, stdout write errors, absurd option values,
--help, --version and the documented exit codes (2 usage, 1 failure, 130 SIGINT)."""

import hashlib
import json
import os
import random
import subprocess
import sys
import urllib.parse

import pytest

from conftest import REPO, need_env, run, sluice_bin, stop

TRANSPORTS = ["curl", "urlsession"]
CREDENTIAL_HEADERS = ["Authorization: Bearer X", "Cookie: s=X", "Proxy-Authorization: Basic cHJveHk6c2VjcmV0"]


def start_sink():
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "Tests", "Peers", "curl_sink.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = int(proc.stdout.readline())
    return proc, "http://127.0.0.1:%d" % port


@pytest.fixture(scope="module")
def sinks():
    """Two curl_sink.py servers: two origins (same host, different ports)."""
    first, first_url = start_sink()
    second, second_url = start_sink()
    try:
        yield first_url, second_url
    finally:
        stop(first)
        stop(second)


def redirect(origin, target):
    return origin + "/redirect307?to=" + urllib.parse.quote(target, safe="")


def header_args(headers):
    args = []
    for header in headers:
        args += ["-H", header]
    return args


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_credentials_do_not_follow_a_redirect_to_another_origin(sinks, transport):
    first, second = sinks
    url = redirect(first, second + "/sink/other")
    status, out, err = run("upload", "synthetic:100003", url, "-X", "PUT", "--transport", transport,
                           *header_args(CREDENTIAL_HEADERS + ["X-Other: kept"]), timeout=60)
    assert status == 0, err
    seen = json.loads(out.decode())
    assert seen["path"] == "/sink/other" and seen["count"] == 100003
    assert "authorization" not in seen["headers"] and "cookie" not in seen["headers"]
    assert "proxy-authorization" not in seen["headers"]
    assert seen["headers"]["x-other"] == "kept"
    # Same origin: kept.
    status, out, err = run("upload", "synthetic:100003", redirect(first, first + "/sink/same"), "--transport", transport,
                           *header_args(CREDENTIAL_HEADERS), timeout=60)
    assert status == 0, err
    assert json.loads(out.decode())["headers"]["authorization"] == "Bearer X"
    # --location-trusted: the user opts in.
    status, out, err = run("upload", "synthetic:100003", url, "--location-trusted", "--transport", transport,
                           *header_args(CREDENTIAL_HEADERS), timeout=60)
    assert status == 0, err
    seen = json.loads(out.decode())["headers"]
    assert seen["authorization"] == "Bearer X" and seen["cookie"] == "s=X"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_user_credentials_do_not_answer_another_origins_challenge(sinks, transport):
    first, second = sinks
    url = redirect(first, second + "/auth")
    status, out, err = run("upload", "synthetic:1000", url, "-u", "user:secret", "--transport", transport, timeout=60)
    assert status == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "401" in lines[0], err
    status, out, err = run("upload", "synthetic:1000", url, "-u", "user:secret", "--location-trusted",
                           "--transport", transport, timeout=60)
    assert status == 0, err
    assert json.loads(out.decode())["headers"]["authorization"].startswith("Basic ")


def expected_large(count, seed):
    """The body curl_sink.py's /large sends, hashed here independently of sluice."""
    generator = random.Random(seed)
    digest = hashlib.sha256()
    remaining = count
    while remaining:
        block = generator.randbytes(1 << 20)[:remaining]
        remaining -= len(block)
        digest.update(block)
    return digest.hexdigest()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_response_larger_than_16_mib_arrives_whole_on_stdout_with_bounded_memory(sinks, transport):
    first, _ = sinks
    count = (96 << 20) + 7
    cmd = ["/usr/bin/time", "-f", "%M", sluice_bin(), "upload", "synthetic:5",
           first + "/large?bytes=%d&seed=3" % count, "--transport", transport]
    # Read stdout slowly-ish through a pipe (not all at once) so a transport that queues the
    # body in memory would show it in its peak RSS.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    digest = hashlib.sha256()
    total = 0
    while True:
        block = proc.stdout.read(16384)
        if not block:
            break
        digest.update(block)
        total += len(block)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert total == count
    assert digest.hexdigest() == expected_large(count, 3)
    peak_kib = int(err.strip().splitlines()[-1])
    assert peak_kib < 80 * 1024, "peak RSS %.1f MiB for a %d MiB response" % (peak_kib / 1024, count >> 20)


def run_to(stdout, *args, timeout=60):
    """Runs sluice with stdout going to `stdout` (a file object, or None for a closed fd 1)."""
    if stdout is None:
        proc = subprocess.run([sluice_bin(), *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout,
                              preexec_fn=lambda: os.close(1))
    else:
        proc = subprocess.run([sluice_bin(), *args], stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
                              timeout=timeout)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def one_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stdout_full_or_closed_is_one_line_and_exit_1_after_an_upload(receiver, transport):
    args = ("upload", "synthetic:1MiB", receiver + "full", "--transport", transport, "--progress", "none")
    with open("/dev/full", "wb") as full:
        status, err = run_to(full, *args)
    assert status == 1, err  # not 0, not a signal (negative)
    assert "cannot write to stdout" in one_line(err) and "No space left" in err
    status, err = run_to(None, *args)
    assert status == 1, err
    assert "cannot write to stdout" in one_line(err)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_reader_that_goes_away_is_one_line_and_exit_1(sinks, transport):
    first, _ = sinks
    proc = subprocess.Popen([sluice_bin(), "upload", "synthetic:5", first + "/large?bytes=%d" % (64 << 20),
                             "--transport", transport], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(1000)
    proc.stdout.close()  # EPIPE from here on; SIGPIPE is ignored
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1, err
    assert "Broken pipe" in one_line(err)


@pytest.mark.parametrize("args", [("checksum", "synthetic:1MiB"), ("--version",), ("upload", "--help"), ("--help",),
                                  ("s3", "presign", "s3://bucket/key")])
def test_other_stdout_writes_fail_clearly(args, monkeypatch):
    # Made-up credentials: presign signs locally and sends nothing.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with open("/dev/full", "wb") as full:
        status, err = run_to(full, *args)
    assert status == 1, err
    assert "cannot write to stdout" in one_line(err)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["upload", "synthetic:1", "URL", "--stall-timeout", "inf"], "--stall-timeout"),
        (["upload", "synthetic:1", "URL", "--stall-timeout", "1e300"], "--stall-timeout"),
        (["upload", "synthetic:1", "URL", "--stall-timeout", "9.3e18"], "--stall-timeout"),
        (["upload", "synthetic:1", "URL", "--stall-timeout", "nan"], "--stall-timeout"),
        (["upload", "synthetic:1", "URL", "--stall-timeout", "-1"], "--stall-timeout"),
        (["upload", "synthetic:1", "URL", "--stall-timeout", "0"], "--stall-timeout"),
        (["upload", "synthetic:1", "http://127.0.0.1:99999/x"], "port 99999"),
        (["upload", "synthetic:1", "http://127.0.0.1:0/x"], "port 0"),
        (["upload", "synthetic:1", "URL", "-X", "HEAD"], "HEAD"),
        (["upload", "/etc/hostname", "URL", "-X", "HEAD"], "HEAD"),
        (["upload", "synthetic:1", "URL", "-X", "GE T"], "method 'GE T'"),
        (["upload", "synthetic:1", "URL", "--buffer-size", "99999999999999999999999"], "too large"),
        (["upload", "synthetic:1", "URL", "--buffer-size", "1TiB"], "--buffer-size"),
        (["upload", "synthetic:1", "URL", "--buffer-size", "-5"], "invalid size"),
        (["upload", "synthetic:1", ""], "invalid URL"),
        (["upload", "synthetic:1", "URL\r\nX-Injected: 1"], "control character"),
        (["upload", "synthetic:1", "URL", "-H", "X-A: 1\nX-Injected: 2"], "CR, LF"),
        (["upload", "synthetic:1", "URL", "-u", "nocolon"], "USER:PASS"),
        (["upload", "--form", "novalue", "URL"], "no '='"),
        (["upload", "--form", "f=@-", "URL"], "stdin"),
        (["tus", "--delete", "not a url"], "invalid URL"),
        (["tus", "synthetic:1", "URL", "--chunk-size", "0"], "--chunk-size"),
        (["tus", "synthetic:1", "URL", "--retries", "1e9"], "--retries"),
        (["tus", "synthetic:1", "URL", "--retries", "-1"], "--retries"),
        (["tus", "synthetic:1", "URL", "--stall-timeout", "inf"], "--stall-timeout"),
        (["s3", "cp", "synthetic:1", "s3://bucket/k", "--stall-timeout", "0"], "--stall-timeout"),
        (["s3", "abort", "s3://bucket/k", "--stall-timeout", "nan"], "--stall-timeout"),
        (["receive", "--port", "99999"], "--port"),
        (["demo", "--seed", "-1"], "--seed"),
        (["demo", "--size", "1e999"], "invalid size"),
        (["--bogus"], "unknown option"),
        (["help", "nosuch"], "no command 'nosuch'"),
        (["upload", "synthetic:1", "URL", "-X", ""], "method ''"),
        (["upload", "synthetic:1", "http:///x"], "invalid URL"),
        (["upload", "synthetic:1", "URL", "-H", ":v"], "header name ''"),
        (["upload", "synthetic:99999999999999999999", "URL"], "too large"),
        (["upload", "synthetic:1", "URL", "--chunked=yes"], "takes no value"),
        (["tus", "synthetic:1", "URL", "--chunk-size", "1e30"], "invalid size"),
    ],
)
def test_absurd_values_are_usage_errors(receiver, args, fragment):
    args = [a.replace("URL", receiver + "x") for a in args]
    status, out, err = run(*args, timeout=30)
    assert status == 2, err
    assert fragment in one_line(err)
    assert out == b""


def test_after_double_dash_everything_is_positional(receiver):
    # "-h" is SOURCE here: a file that does not exist, not a request for help.
    status, out, err = run("upload", "--", "-h", receiver + "x", timeout=30)
    assert status == 1 and out == b"", err
    assert "-h: no such file" in one_line(err)


def test_version():
    for flag in ("--version", "-V"):
        status, out, err = run(flag)
        assert status == 0, err
        assert out.decode().startswith("sluice ") and len(out.decode().splitlines()) == 1


@pytest.mark.parametrize(
    "command, options",
    [
        ("upload", ["--form", "--method", "--header", "--user", "--location-trusted", "--transport", "--chunked",
                    "--buffer-size", "--progress", "--cacert", "--insecure", "--stall-timeout", "--"]),
        ("receive", ["--port", "--host", "--store"]),
        ("checksum", ["SOURCE"]),
        ("demo", ["--size", "--seed", "--transport", "--progress"]),
        ("tus", ["--chunk-size", "--metadata", "--state", "--retries", "--restart", "--no-checksum", "--header",
                 "--delete", "--transport", "--progress", "--stall-timeout"]),
        ("s3", ["presign", "--expires", "--method", "--endpoint-url", "--region", "--profile"]),
    ],
)
def test_each_command_lists_its_options(command, options):
    for args in ([command, "--help"], [command, "-h"], ["help", command]):
        status, out, err = run(*args)
        assert status == 0, err
        text = out.decode()
        assert text.startswith("usage: sluice " + command), text
        for option in options:
            assert option in text, (option, text)


def test_tus_upload_url_to_a_full_stdout_is_one_line_and_exit_1(tmp_path):
    endpoint = need_env("SLUICE_TUS_URL")
    with open("/dev/full", "wb") as full:
        status, err = run_to(full, "tus", "synthetic:1MiB:5", endpoint, "--state", str(tmp_path), "--progress", "none")
    assert status == 1, err
    line = [l for l in err.splitlines() if l.strip()][0]
    assert "cannot write to stdout" in line and "uploaded to http" in line, err
