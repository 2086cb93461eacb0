#!/usr/bin/env python3
"""The torn-write probe (issue 37, item 4): a small file rewritten while `sluice s3 cp` puts it.

A writer (a process at real-time priority) rewrites one small file over and over, alternating two versions (A and B), each
rewrite two `pwrite`s (first half, then second half), in bursts with rests between them; beside
it, busy processes keep every core loaded. Each run starts the writer, runs `sluice s3 cp FILE`
to a local S3 stand-in that keeps the SHA-256 of each PutObject body, stops the writer, and sorts
the run:

  whole    exit 0 and the stored body is version A or B (bytes the file held at rest)
  mix at rest  exit 0 and the stored body is a half-rewritten file that sat between the
           writer's two pwrites for a tick of the kernel's coarse clock or more, as measured by
           the writer (it runs at real-time priority where it may, so this should be rare):
           bytes the file held at rest too
  refused  exit non-zero (sluice saw the change and did not count the upload)
  TORN     exit 0 and the stored body is neither: bytes the file never held at rest
  lost     exit 0 and nothing stored

TORN and lost must be 0. Bounded: --runs runs, each `sluice` killed after --timeout seconds.
Not part of CI's timed tests (it takes minutes); run it by hand:

    python3 Benchmarks/torn_probe.py --sluice .build/release/sluice --runs 1000
"""
import argparse
import ctypes
import hashlib
import os
import multiprocessing
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Peers"))
import s3_reset_server  # noqa: E402  (its handler's helpers and aws-chunked decoder)


class Store:
    def __init__(self):
        self.lock = threading.Lock()
        self.bodies = {}

    def put(self, key, digest):
        with self.lock:
            self.bodies[key] = digest

    def get(self, key):
        with self.lock:
            return self.bodies.get(key)


def make_handler(store):
    """PutObject keeps the SHA-256 of the body (aws-chunked decoded) by key and answers its MD5
    as the ETag; the reset server's answer and body helpers."""
    class Handler(s3_reset_server.Handler):
        def do_PUT(self):
            body = self.body()
            if self.headers.get("x-amz-content-sha256", "").startswith("STREAMING-"):
                digest = s3_reset_server.decode_aws_chunked(body)
            else:
                digest = hashlib.sha256(body).hexdigest()
            store.put(self.path.split("?")[0], digest)
            self.answer(200, headers=[("ETag", '"%s"' % hashlib.md5(body).hexdigest())])

        def do_HEAD(self):
            self.answer(404)

        do_GET = do_POST = do_HEAD

    return Handler


def writer(path, versions, stop, pause, mixes, report):
    """Rewrites `path` with the versions in turn, two pwrites each, until `stop` is set: in
    bursts of back-to-back rewrites (many within one timestamp tick, which leave the change
    time where it was) of up to `pause` seconds, each followed by a rest of up to `pause`.

    A process of its own at real-time priority (SCHED_FIFO, where it may): the load and sluice
    cannot preempt it between its two pwrites, so a half-rewritten file is not left at rest by
    the load. It sends back, by mix (the SHA-256 of the new first half and the old second half),
    the longest time it measured between the two pwrites."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (AttributeError, PermissionError, OSError):
        pass
    fd = os.open(path, os.O_WRONLY)
    half = len(versions[0]) // 2
    turn = 0
    gaps = {}
    try:
        while not stop.is_set():
            burst_end = time.monotonic() + random.uniform(0, pause)
            while time.monotonic() < burst_end:
                turn ^= 1
                new = versions[turn]
                os.pwrite(fd, new[:half], 0)
                first = time.monotonic()
                os.pwrite(fd, new[half:], half)
                gap = time.monotonic() - first
                mix = mixes[turn]
                gaps[mix] = max(gaps.get(mix, 0.0), gap)
            time.sleep(random.uniform(0, pause))
    finally:
        os.close(fd)
        report.send(gaps)


def coarse_tick():
    """The resolution of CLOCK_REALTIME_COARSE, the clock the kernel stamps change times with."""
    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]
    resolution = Timespec()
    ctypes.CDLL(None, use_errno=True).clock_getres(5, ctypes.byref(resolution))  # CLOCK_REALTIME_COARSE
    return resolution.tv_sec + resolution.tv_nsec / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sluice", default=".build/release/sluice")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=16384, help="file bytes (below 64 KiB: the snapshot read)")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy processes beside the runs")
    parser.add_argument("--pause", type=float, default=0.01, help="most seconds of a burst of rewrites, and of a rest after one")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()

    rng = random.Random(37)
    versions = [bytes(rng.getrandbits(8) for _ in range(args.size)) for _ in range(2)]
    held = {hashlib.sha256(v).hexdigest(): name for v, name in zip(versions, "AB")}
    half = args.size // 2
    mixes = [hashlib.sha256(versions[turn][:half] + versions[turn ^ 1][half:]).hexdigest() for turn in (0, 1)]
    tick = coarse_tick()

    store = Store()
    server = s3_reset_server.Server(("127.0.0.1", 0), make_handler(store))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = "http://127.0.0.1:%d" % server.server_address[1]

    work = tempfile.mkdtemp(prefix="torn-probe-")
    path = os.path.join(work, "small.bin")
    with open(path, "wb") as f:
        f.write(versions[0])
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDPROBE", AWS_SECRET_ACCESS_KEY="probesecret", AWS_REGION="us-east-1")

    # The load: busy processes, each ending by itself when the probe has gone.
    burners = [subprocess.Popen([sys.executable, "-c", "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"])
               for _ in range(args.load)]
    counts = {"whole": 0, "refused": 0, "TORN": 0, "lost": 0, "mix at rest": 0}
    refusals = {}
    started = time.monotonic()
    try:
        for run in range(args.runs):
            key = "/probe/run%05d" % run
            stop = multiprocessing.Event()
            receiver, report = multiprocessing.Pipe(duplex=False)
            process = multiprocessing.Process(target=writer, args=(path, versions, stop, args.pause, mixes, report))
            process.start()
            try:
                done = subprocess.run(
                    [args.sluice, "s3", "cp", path, "s3://probe" + key[len("/probe"):], "--endpoint-url", endpoint,
                     "--progress", "none", "--state", os.path.join(work, "state")],
                    env=env, capture_output=True, text=True, timeout=args.timeout)
                code, err = done.returncode, done.stderr.strip()
            except subprocess.TimeoutExpired:
                code, err = -1, "timed out"
            stop.set()
            gaps = receiver.recv()
            process.join()
            stored = store.get(key)
            if code != 0:
                counts["refused"] += 1
                reason = err.splitlines()[-1] if err else "exit %d" % code
                reason = reason.split(": ", 1)[-1][:100]
                refusals[reason] = refusals.get(reason, 0) + 1
            elif stored is None:
                counts["lost"] += 1
            elif stored in held:
                counts["whole"] += 1
            elif gaps.get(stored, 0.0) >= tick:
                # The writer sat between its two pwrites for a tick or more (an interrupt, or no
                # real-time priority): the file held this mix at rest.
                counts["mix at rest"] += 1
            else:
                counts["TORN"] += 1
                print("run %d: exit 0 but the stored body (sha256 %s) is neither version" % (run, stored), flush=True)
            if (run + 1) % 100 == 0:
                print("%d runs: %s (%.0f s)" % (run + 1, counts, time.monotonic() - started), flush=True)
    finally:
        for burner in burners:
            burner.send_signal(signal.SIGTERM)
        for burner in burners:
            burner.wait()
        server.shutdown()
    print("runs %d, load %d busy processes, file %d bytes, tick %.1f ms: whole %d, mix at rest %d, refused %d, TORN %d, lost %d" % (
        args.runs, args.load, args.size, tick * 1000, counts["whole"], counts["mix at rest"], counts["refused"],
        counts["TORN"], counts["lost"]))
    for reason, count in sorted(refusals.items(), key=lambda item: -item[1]):
        print("  refused %d: %s" % (count, reason))
    return 1 if counts["TORN"] or counts["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
