"""`sluice tus` against a real tus 1.0 server (tuspyserver under uvicorn, started by
scripts/test.sh), through a counting proxy (Tests/Peers/tus_counting_proxy.py) that holds an
upload mid-body on cue: a run killed with SIGKILL mid-upload resumes at the server's offset when
run again, and the proxy sees no byte sent twice; termination; a changed source (also one edited
in the middle with its modification time restored) is refused."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import REPO, checksum, make_file, need_env, run, sha256_file, sluice_bin, stop


@pytest.fixture(scope="module")
def tus():
    return need_env("SLUICE_TUS_URL"), need_env("SLUICE_TUS_STORE")


def stored_path(store, upload_url):
    return os.path.join(store, upload_url.rstrip("/").rsplit("/", 1)[-1])


class CountingProxy:
    """Tests/Peers/tus_counting_proxy.py in front of the tus server: counts body bytes at the
    network, per request, and holds one upload mid-body after `hold_after` bytes."""

    def __init__(self, endpoint, hold_after=None):
        target = re.match(r"http://([^/]+)/", endpoint).group(1)
        cmd = [sys.executable, os.path.join(REPO, "Tests", "Peers", "tus_counting_proxy.py"), "--target", target]
        if hold_after is not None:
            cmd += ["--hold-after", str(hold_after)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        port = int(self.proc.stdout.readline().decode().split()[1])
        self.endpoint = "http://127.0.0.1:%d/files/" % port
        self.requests = []
        self.held = threading.Event()
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            with self.changed:
                if line.startswith("REQUEST "):
                    self.requests.append(json.loads(line[len("REQUEST "):]))
                elif line.startswith("HELD "):
                    self.held.set()
                self.changed.notify_all()

    def wait_for(self, predicate, timeout=30):
        with self.changed:
            return self.changed.wait_for(lambda: predicate(list(self.requests)), timeout=timeout)

    def drop(self):
        self.proc.stdin.write(b"drop\n")
        self.proc.stdin.flush()

    def stop(self):
        stop(self.proc)


@pytest.fixture()
def proxy_factory(tus):
    started = []

    def make(hold_after=None):
        proxy = CountingProxy(tus[0], hold_after)
        started.append(proxy)
        return proxy

    yield make
    for proxy in started:
        proxy.stop()


def state_record(state):
    (name,) = [f for f in os.listdir(state) if f.endswith(".json")]
    with open(os.path.join(state, name)) as handle:
        return json.load(handle)


def server_offset(upload_url):
    request = urllib.request.Request(upload_url, method="HEAD", headers={"Tus-Resumable": "1.0.0"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.headers["Upload-Offset"])


def settled_offset(upload_url, store):
    """Gate: the server has finished with the cut request: its offset and the stored file's
    size agree and stay the same across several looks."""
    path = stored_path(store, upload_url)
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline:
        offset = server_offset(upload_url)
        size = os.path.getsize(path) if os.path.exists(path) else -1
        seen = (seen + [(offset, size)])[-5:]
        if len(seen) == 5 and len(set(seen)) == 1 and offset == size:
            return offset
        time.sleep(0.05)
    pytest.fail("the tus server's offset never settled: %r" % seen)


def kill_while_held(proxy, args):
    """Runs `sluice ARGS`, SIGKILLs it once the proxy holds the upload mid-body (the client is
    stalled, not finished), then lets the proxy drop what it held."""
    proc = subprocess.Popen([sluice_bin(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proxy.held.wait(timeout=60), "the upload was never held: %r" % (proc.poll(),)
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    proxy.drop()


def test_sigkill_mid_upload_then_rerun_resumes_without_resending(tus, proxy_factory, tmp_path):
    """Counted at the network, not by the client: after the resume, the body bytes the server
    was sent are exactly the ones it did not have, in contiguous PATCHes."""
    endpoint, store = tus
    spec = "synthetic:256MiB:77"
    length = 256 << 20
    proxy = proxy_factory(hold_after=64 << 20)
    state = str(tmp_path / "state")
    args = ["tus", spec, proxy.endpoint, "--state", state, "--chunk-size", "16MiB", "--progress", "none"]
    kill_while_held(proxy, args)
    assert proxy.wait_for(lambda requests: any(not r["complete"] for r in requests)), "the cut request was not seen"
    upload_url = state_record(state)["uploadURL"]
    held_at = settled_offset(upload_url, store)
    assert 0 < held_at < length
    first_run = len(proxy.requests)

    status, out, err = run(*args, timeout=300)
    assert status == 0, err
    assert out.decode().strip() == upload_url
    summary = err.strip().splitlines()[-1]
    assert "resumed" in summary and " 0 re-sent" in summary, summary
    sent = [r for r in proxy.requests[first_run:] if r["method"] in ("PATCH", "POST") and r["length"]]
    assert sent and all(r["complete"] and r["method"] == "PATCH" for r in sent), sent
    assert sent[0]["offset"] == held_at, sent
    for before, after in zip(sent, sent[1:]):
        assert after["offset"] == before["offset"] + before["forwarded"], sent
    assert sum(r["forwarded"] for r in sent) == length - held_at, sent
    assert sent[-1]["offset"] + sent[-1]["forwarded"] == length
    digest, count = checksum(spec)
    stored = stored_path(store, upload_url)
    assert os.path.getsize(stored) == count == length
    assert sha256_file(stored) == digest
    # Done: the record is gone, so a third run starts a new upload rather than resuming.
    assert not os.listdir(state)


@pytest.mark.parametrize("edit", ["last-mib", "middle-mtime-restored"])
def test_changed_source_refuses_to_resume_then_delete_terminates(tus, proxy_factory, tmp_path_factory, tmp_path, edit):
    endpoint, store = tus
    path = make_file(tmp_path_factory, 64 << 20, seed=8)
    proxy = proxy_factory(hold_after=8 << 20)
    state = str(tmp_path / "state")
    proc = subprocess.Popen([sluice_bin(), "tus", path, proxy.endpoint, "--state", state, "--chunk-size", "1MiB",
                             "--progress", "none"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Gate: held mid-upload, so the interrupt always lands before the end.
        assert proxy.held.wait(timeout=60), "the upload was never held"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, proc.stderr.read().decode()
    proxy.drop()
    saved = os.stat(path)
    with open(path, "r+b") as handle:
        if edit == "last-mib":
            handle.seek(-10, os.SEEK_END)
        else:
            handle.seek(32 << 20)  # outside the first and last MiB
        handle.write(b"0123456789")
    if edit == "middle-mtime-restored":
        os.utime(path, ns=(saved.st_atime_ns, saved.st_mtime_ns))  # touch -r
        assert os.stat(path).st_mtime_ns == saved.st_mtime_ns
    status, _, err = run("tus", path, proxy.endpoint, "--state", state, "--progress", "none", timeout=60)
    assert status == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "changed" in lines[0], err
    if edit == "middle-mtime-restored":
        assert "ctime" in lines[0], err
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


def test_parallel_sigkill_then_rerun_resumes_each_partial(tus, proxy_factory, tmp_path):
    """`--parallel 4` (concatenation): SIGKILL while one partial upload is held mid-body; the
    rerun resumes every partial upload at its server offset, sends no byte twice, joins them,
    and the final upload holds the source byte for byte."""
    endpoint, store = tus
    spec = "synthetic:96MiB:79"
    length = 96 << 20
    proxy = proxy_factory(hold_after=40 << 20)
    state = str(tmp_path / "state")
    args = ["tus", spec, proxy.endpoint, "--state", state, "--chunk-size", "4MiB", "--parallel", "4", "--progress", "none"]
    kill_while_held(proxy, args)
    records = [f for f in os.listdir(state) if f.endswith(".json")]
    assert len(records) == 4, records
    held = 0
    for name in records:
        with open(os.path.join(state, name)) as handle:
            held += settled_offset(json.load(handle)["uploadURL"], store)
    assert 0 < held < length

    status, out, err = run(*args, timeout=300)
    assert status == 0, err
    summary = err.strip().splitlines()[-1]
    assert "resumed" in summary and " 0 re-sent" in summary, summary
    final_url = out.decode().strip()
    digest, count = checksum(spec)
    stored = stored_path(store, final_url)
    assert os.path.getsize(stored) == count == length
    assert sha256_file(stored) == digest
    assert not [f for f in os.listdir(state) if f.endswith(".json")]
