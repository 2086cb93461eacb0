"""`sluice tus` against a real tus 1.0 server (tuspyserver under uvicorn, started by
scripts/test.sh): a run killed with SIGKILL mid-upload resumes at the server's offset when run
again, sends no byte twice, and ends byte-exact; termination; a changed source is refused."""

import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import checksum, make_file, need_env, run, sha256_file, sluice_bin


@pytest.fixture(scope="module")
def tus():
    return need_env("SLUICE_TUS_URL"), need_env("SLUICE_TUS_STORE")


def stored_path(store, upload_url):
    return os.path.join(store, upload_url.rstrip("/").rsplit("/", 1)[-1])


def test_sigkill_mid_upload_then_rerun_resumes_without_resending(tus, tmp_path):
    endpoint, store = tus
    spec = "synthetic:1GiB:77"
    state = str(tmp_path / "state")
    cmd = [sluice_bin(), "tus", spec, endpoint, "--state", state, "--chunk-size", "16MiB", "--progress", "none"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Gate: the resume record names the upload; kill once the server holds part of it.
    killed_at = None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            records = [f for f in os.listdir(state) if f.endswith(".json")] if os.path.isdir(state) else []
            if records:
                try:
                    record = json.load(open(os.path.join(state, records[0])))
                except ValueError:
                    record = {}
                if "uploadURL" in record:
                    path = stored_path(store, record["uploadURL"])
                    if os.path.exists(path) and os.path.getsize(path) >= 64 << 20:
                        proc.send_signal(signal.SIGKILL)
                        killed_at = os.path.getsize(path)
                        break
            time.sleep(0.01)
    finally:
        proc.wait(timeout=30)
    if killed_at is None:
        pytest.fail("the upload ended before it could be killed: %s" % proc.stderr.read().decode())
    assert proc.returncode == -signal.SIGKILL
    status, out, err = run("tus", spec, endpoint, "--state", state, "--chunk-size", "16MiB", "--progress", "none", timeout=300)
    assert status == 0, err
    upload_url = out.decode().strip()
    summary = err.strip().splitlines()[-1]
    assert "resumed" in summary, summary
    assert " 0 re-sent" in summary, summary
    resumed_from = int(re.search(r"from (\d+)", summary).group(1)) if re.search(r"from (\d+)", summary) else None
    assert resumed_from is None or resumed_from > 0
    digest, count = checksum(spec)
    stored = stored_path(store, upload_url)
    assert os.path.getsize(stored) == count
    assert sha256_file(stored) == digest
    # Done: the record is gone, so a third run starts a new upload rather than resuming.
    assert not os.listdir(state)


def test_changed_source_refuses_to_resume_then_delete_terminates(tus, tmp_path_factory, tmp_path):
    endpoint, store = tus
    path = make_file(tmp_path_factory, 64 << 20, seed=8)
    state = str(tmp_path / "state")
    proc = subprocess.Popen([sluice_bin(), "tus", path, endpoint, "--state", state, "--chunk-size", "1MiB", "--progress", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None and not (os.path.isdir(state) and os.listdir(state)):
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    if proc.returncode == 0:
        pytest.skip("finished before it could be interrupted")
    assert proc.returncode == 130, proc.stderr.read().decode()
    with open(path, "r+b") as handle:  # change the last MiB: the fingerprint changes
        handle.seek(-10, os.SEEK_END)
        handle.write(b"0123456789")
    status, _, err = run("tus", path, endpoint, "--state", state, "--progress", "none", timeout=60)
    assert status == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "changed" in lines[0], err
    upload_url = re.search(r"(http://\S+/files/[0-9a-f]+)", lines[0]).group(1)
    status, _, err = run("tus", "--delete", upload_url, "--state", state, timeout=60)
    assert status == 0, err
    assert not os.path.exists(stored_path(store, upload_url))


def test_bad_tus_input_is_one_line(tus):
    endpoint, _ = tus
    for args, code in ((["tus", "-", endpoint], 1), (["tus", "/no/such/file", endpoint], 1), (["tus", "synthetic:1", "ftp://x"], 2),
                       (["tus", "synthetic:1", endpoint, "--metadata", "novalue"], 2),
                       (["tus", "synthetic:1", endpoint, "--chunk-size", "0"], 2),
                       (["tus", "synthetic:1", endpoint, "--retries", "1e9"], 2),
                       (["tus", "--delete", "not a url"], 2)):
        status, _, err = run(*args, timeout=30)
        assert status == code and len(err.strip().splitlines()) == 1, (args, err)
