#!/usr/bin/env python3
"""Runs the engine benchmark (see engine.sh): interleaved rounds, medians, ratios."""

import argparse
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def load():
    return open("/proc/loadavg").read().split()[0]


def timed(cmd, stdin_path=None, shell=False):
    """Runs cmd under /usr/bin/time; returns (wall s, cpu s, peak RSS KiB, stdout)."""
    if shell:
        with tempfile.NamedTemporaryFile("r") as out:
            proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name, "bash", "-c", cmd],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            stats = out.read().strip().splitlines()[-1]
    else:
        proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        stats = proc.stderr.strip().splitlines()[-1]
    if proc.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s" % (proc.returncode, cmd if shell else " ".join(cmd), proc.stderr))
    wall, user, system, rss = stats.split()
    return float(wall), float(user) + float(system), int(rss), proc.stdout


def make_file(path, size):
    with open(path, "wb") as handle:
        left = size
        while left:
            block = os.urandom(min(left, 16 << 20))
            handle.write(block)
            left -= len(block)


def interleaved(contenders, runs):
    """contenders: [(name, cmd, shell)] -> {name: [(wall, cpu, rss, stdout)]}, one warm-up each."""
    results = {name: [] for name, _, _ in contenders}
    for name, cmd, shell in contenders:
        timed(cmd, shell=shell)
    for _ in range(runs):
        for name, cmd, shell in contenders:
            results[name].append(timed(cmd, shell=shell))
    return results


def median(values):
    return statistics.median(values)


class CountingProxy:
    """Forwards 127.0.0.1:<port> to target, counting accepted connections."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(128)
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            client, _ = self.server.accept()
            self.accepted += 1
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(1 << 20)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--old-bin", help="a sluice release binary from before the engine, for tus 'before'")
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--tus", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--tus-store", help="the tus server's file directory, to check --parallel byte for byte")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="parts,loops,rss,concurrent,tus,tusparallel,stdin,buffer,cancel")
    args = parser.parse_args()
    only = set(args.only.split(","))
    sluice = os.path.join(args.bin, "sluice")
    bench = os.path.join(args.bin, "engine-bench")
    drop = args.nginx + "/drop"
    big = os.path.join(args.workdir, "2g.bin")
    if only & {"parts", "loops", "rss"}:
        make_file(big, 2 << 30)

    if "parts" in only:
        print("== parallel ranged upload, 2 GiB file, 16 MiB parts x 8, to nginx /drop (load %s)" % load())
        res = interleaved([
            ("curl -T", ["curl", "-sS", "-f", "-T", big, drop], False),
            ("sluice parts 16MiB x8", [bench, "parts", big, drop, "16MiB", "8"], False),
        ], args.runs)
        curl = median([r[0] for r in res["curl -T"]])
        parts = median([r[0] for r in res["sluice parts 16MiB x8"]])
        print("  curl -T            wall %.2f s  %.0f MB/s" % (curl, (2 << 30) / curl / 1e6))
        print("  parts 16MiB x8     wall %.2f s  %.0f MB/s" % (parts, (2 << 30) / parts / 1e6))
        print("  throughput ratio parts/curl: %.2f   (load now %s)" % (curl / parts, load()))

    if "loops" in only:
        print("== one loop vs one per core (%d), same parallel upload (load %s)" % (os.cpu_count(), load()))
        res = interleaved([
            ("1 loop", [bench, "parts", big, drop, "16MiB", "8", "1"], False),
            ("per core", [bench, "parts", big, drop, "16MiB", "8", str(os.cpu_count())], False),
        ], args.runs)
        one = median([r[0] for r in res["1 loop"]])
        per = median([r[0] for r in res["per core"]])
        cpu_one = median([r[1] for r in res["1 loop"]])
        cpu_per = median([r[1] for r in res["per core"]])
        print("  1 loop     wall %.2f s  cpu %.2f s  %.0f MB/s" % (one, cpu_one, (2 << 30) / one / 1e6))
        print("  per core   wall %.2f s  cpu %.2f s  %.0f MB/s" % (per, cpu_per, (2 << 30) / per / 1e6))
        print("  wall ratio per-core/1-loop: %.2f   (load now %s)" % (per / one, load()))

    if "rss" in only:
        print("== peak RSS of the parallel upload by part size, 8 in flight (load %s)" % load())
        res = interleaved([
            ("16MiB", [bench, "parts", big, drop, "16MiB", "8"], False),
            ("256MiB", [bench, "parts", big, drop, "256MiB", "8"], False),
        ], max(3, args.runs // 2))
        a = median([r[2] for r in res["16MiB"]])
        b = median([r[2] for r in res["256MiB"]])
        print("  16 MiB parts: %.1f MiB   256 MiB parts: %.1f MiB   difference %.1f MiB" % (a / 1024, b / 1024, abs(a - b) / 1024))

    if "concurrent" in only:
        print("== 64 concurrent 16 MiB uploads to nginx /drop (load %s)" % load())
        res = interleaved([("64x16MiB", [bench, "concurrent", drop, "64", "16MiB"], False)], max(3, args.runs // 2))
        runs = res["64x16MiB"]
        info = [json.loads(r[3]) for r in runs]
        print("  wall %.2f s  peak RSS %.1f MiB  threads before %d, peak %d (sluice-* %d)  connections %d" % (
            median([r[0] for r in runs]), median([r[2] for r in runs]) / 1024, info[-1]["threads_before"],
            max(i["threads_peak"] for i in info), max(i["sluice_threads_peak"] for i in info), info[-1]["connections"]))

    if "tus" in only:
        print("== tus 512 MiB in 4 MiB chunks (load %s)" % load())
        binaries = [("after", sluice)] + ([("before", os.path.join(args.old_bin, "sluice"))] if args.old_bin else [])
        proxy = CountingProxy(int(args.tus.rsplit(":", 1)[1].split("/")[0]))
        proxied = "http://127.0.0.1:%d/files/" % proxy.port
        for name, binary in binaries:
            state = tempfile.mkdtemp(dir=args.workdir)
            before = proxy.accepted
            timed([binary, "tus", "synthetic:512MiB:7", proxied, "--chunk-size", "4MiB", "--progress", "none", "--state", state])
            print("  %-6s connections opened: %d" % (name, proxy.accepted - before))
        contenders = []
        for name, binary in binaries:
            state = tempfile.mkdtemp(dir=args.workdir)
            contenders.append((name, "%s tus synthetic:512MiB:$RANDOM %s --chunk-size 4MiB --progress none --state %s --restart"
                               % (binary, args.tus, state), True))
        res = interleaved(contenders, args.runs)
        for name, _ in binaries:
            print("  %-6s wall %.2f s" % (name, median([r[0] for r in res[name]])))
        if args.old_bin:
            print("  wall ratio after/before: %.2f" % (median([r[0] for r in res["after"]]) / median([r[0] for r in res["before"]])))

    if "tusparallel" in only:
        print("== sluice tus --parallel 4 vs --parallel 1, 512 MiB in 4 MiB chunks, tuspyserver (load %s)" % load())
        contenders = []
        for count in ("1", "4"):
            state = tempfile.mkdtemp(dir=args.workdir)
            contenders.append((count, "%s tus synthetic:512MiB:11 %s --chunk-size 4MiB --parallel %s --progress none --state %s --restart"
                               % (sluice, args.tus, count, state), True))
        res = interleaved(contenders, args.runs)
        one = median([r[0] for r in res["1"]])
        four = median([r[0] for r in res["4"]])
        print("  --parallel 1 wall %.2f s   --parallel 4 wall %.2f s   ratio 4/1: %.2f" % (one, four, four / one))
        if args.tus_store:
            digest = subprocess.run([sluice, "checksum", "synthetic:512MiB:11"], stdout=subprocess.PIPE, text=True).stdout.split()[0]
            for count in ("1", "4"):
                url = res[count][-1][3].strip()
                path = os.path.join(args.tus_store, url.rstrip("/").rsplit("/", 1)[-1])
                with open(path, "rb") as handle:
                    got = hashlib.sha256()
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        got.update(block)
                print("  --parallel %s stored object: %s" % (count, "byte-exact" if got.hexdigest() == digest else "DIFFERENT"))

    if "stdin" in only:
        gig = os.path.join(args.workdir, "1g.bin")
        make_file(gig, 1 << 30)
        print("== stdin: cat 1 GiB | ... to nginx /drop (load %s)" % load())
        res = interleaved([
            ("curl", "cat %s | curl -sS -f -T - %s" % (gig, drop), True),
            ("sluice", "cat %s | %s upload - %s -X PUT --progress none" % (gig, sluice, drop), True),
        ], args.runs)
        for name in ("curl", "sluice"):
            print("  %-7s wall %.2f s  cpu %.2f s" % (name, median([r[0] for r in res[name]]), median([r[1] for r in res[name]])))
        print("  sluice/curl: wall %.2f  cpu %.2f" % (
            median([r[0] for r in res["sluice"]]) / median([r[0] for r in res["curl"]]),
            median([r[1] for r in res["sluice"]]) / median([r[1] for r in res["curl"]])))

    if "buffer" in only:
        gig = os.path.join(args.workdir, "1g.bin")
        if not os.path.exists(gig):
            make_file(gig, 1 << 30)
        print("== sluice upload FILE (1 GiB) by libcurl upload buffer, vs curl -T (load %s)" % load())
        contenders = [("curl -T", ["curl", "-sS", "-f", "-T", gig, drop], False),
                      ("default", [sluice, "upload", gig, drop, "-X", "PUT", "--progress", "none"], False)]
        for size in ("64KiB", "128KiB"):
            contenders.append((size, [sluice, "upload", gig, drop, "-X", "PUT", "--progress", "none", "--buffer-size", size], False))
        res = interleaved(contenders, args.runs)
        curl = median([r[0] for r in res["curl -T"]])
        for name, _, _ in contenders[1:]:
            print("  %-8s sluice/curl wall %.2f" % (name, median([r[0] for r in res[name]]) / curl))

    if "cancel" in only:
        print("== cancel latency of an 8-part upload in flight (load %s)" % load())
        values = [json.loads(timed([bench, "cancel", drop])[3])["ms"] for _ in range(args.runs)]
        print("  median %.1f ms, max %.1f ms" % (median(values), max(values)))


if __name__ == "__main__":
    sys.exit(main())
