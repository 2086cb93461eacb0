"""`bash scripts/local-peers.sh`, the README's way to a local S3 store and tus server: it starts
both, prints the lines to paste, an upload with them is stored byte-exact (read back by boto3),
and Ctrl-C stops both."""

import hashlib
import os
import signal
import socket
import subprocess
import time

import boto3
from botocore.config import Config

from conftest import REPO, checksum, sluice_bin


def listening(url):
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, int(port))) == 0


def test_local_peers_serve_the_readme_examples_until_ctrl_c(tmp_path):
    script = os.path.join(REPO, "scripts", "local-peers.sh")
    proc = subprocess.Popen(["bash", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True, env=dict(os.environ, TMPDIR=str(tmp_path)))
    exports = {}
    tus = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and ("AWS_ENDPOINT_URL" not in exports or tus is None):
            line = proc.stdout.readline()
            assert line, "local-peers.sh ended before printing its lines (exit %s)" % proc.poll()
            if line.startswith("export "):
                for pair in line.split()[1:]:
                    name, _, value = pair.partition("=")
                    exports[name] = value
            elif line.startswith("sluice tus "):
                tus = line.split()[-1]
        endpoint, bucket = exports["AWS_ENDPOINT_URL"], None
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(exports, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), AWS_CONFIG_FILE="/dev/null",
                   AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        # The bucket the printed example names.
        status = subprocess.run([sluice_bin(), "s3", "cp", "synthetic:3MiB:5", "s3://sluice-test/readme.bin", "--progress", "none"],
                                env=env, capture_output=True, text=True, timeout=120)
        assert status.returncode == 0, status.stderr
        bucket = "sluice-test"
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=exports["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=exports["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1",
                              config=Config(s3={"addressing_style": "path"}))
        body = client.get_object(Bucket=bucket, Key="readme.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == checksum("synthetic:3MiB:5")[0]
        tus_status = subprocess.run([sluice_bin(), "tus", "synthetic:1MiB:6", tus, "--progress", "none", "--state", str(tmp_path / "tus")],
                                    capture_output=True, text=True, timeout=120)
        assert tus_status.returncode == 0, tus_status.stderr
    finally:
        os.killpg(proc.pid, signal.SIGINT) if proc.poll() is None else None
        status = proc.wait(timeout=60)
    assert status == 130
    assert not listening(endpoint) and not listening(tus)
