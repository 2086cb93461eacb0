#!/usr/bin/env python3
"""Runs the upload benchmark (see upload.sh): interleaved rounds, medians, ratios to curl -T."""

import argparse
import os
import re
import statistics
import subprocess
import sys


def parse_size(text):
    match = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB|TiB)?", text)
    if not match:
        raise SystemExit("bad size %r" % text)
    return int(match.group(1)) * {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[match.group(2)]


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (wall s, cpu s, peak RSS KiB)."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    last = proc.stderr.strip().splitlines()[-1]
    if proc.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s" % (proc.returncode, " ".join(cmd), proc.stderr))
    wall, user, system, rss = last.split()
    return float(wall), float(user) + float(system), int(rss)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--size", default="2GiB")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rss-sizes", default="64MiB 1GiB 8GiB")
    args = parser.parse_args()

    size = parse_size(args.size)
    path = os.path.join(args.workdir, "bench.bin")
    with open(path, "wb") as handle:
        left = size
        while left:
            block = os.urandom(min(left, 16 << 20))
            handle.write(block)
            left -= len(block)
    sluice = os.path.join(args.bin, "sluice")
    baseline = os.path.join(args.bin, "urlsession-baseline")
    contenders = [
        ("curl -T", ["curl", "-sS", "-f", "-T", path, args.url]),
        ("sluice (curl transport)", [sluice, "upload", path, args.url, "-X", "PUT", "--progress", "none"]),
        ("sluice --transport urlsession", [sluice, "upload", path, args.url, "-X", "PUT", "--transport", "urlsession", "--progress", "none"]),
        ("URLSession httpBodyStream (InputStream(fileAtPath:))", [baseline, "stream", path, args.url]),
        ("URLSession uploadTask(fromFile:)", [baseline, "file", path, args.url]),
    ]
    results = {name: [] for name, _ in contenders}
    for name, cmd in contenders:  # warm-up (page cache, nginx)
        timed(cmd)
    for round_index in range(args.runs):
        order = contenders[round_index % len(contenders):] + contenders[:round_index % len(contenders)]
        for name, cmd in order:
            results[name].append(timed(cmd))
        print("round %d of %d done" % (round_index + 1, args.runs), file=sys.stderr)

    base_wall = statistics.median(r[0] for r in results["curl -T"])
    base_cpu = statistics.median(r[1] for r in results["curl -T"])
    us_wall = statistics.median(r[0] for r in results["URLSession httpBodyStream (InputStream(fileAtPath:))"])
    print()
    print("%s file to nginx `return 204` on loopback, %d interleaved runs, medians; ratios < 1 are faster than the peer" % (args.size, args.runs))
    print()
    print("| uploader | wall / curl -T | CPU / curl -T | wall / URLSession stream | MB/s | peak RSS |")
    print("|---|---|---|---|---|---|")
    for name, _ in contenders:
        wall = statistics.median(r[0] for r in results[name])
        cpu = statistics.median(r[1] for r in results[name])
        rss = statistics.median(r[2] for r in results[name])
        print("| %s | %.2f | %.2f | %.2f | %.0f | %.1f MiB |" % (
            name, wall / base_wall, cpu / base_cpu, wall / us_wall, size / wall / 1e6, rss / 1024))

    print()
    print("Peak RSS by body size (synthetic source, same location)")
    print()
    sizes = args.rss_sizes.split()
    print("| transport | " + " | ".join(sizes) + " | growth |")
    print("|---|" + "---|" * (len(sizes) + 1))
    for transport in ("curl", "urlsession"):
        peaks = []
        for text in sizes:
            _, _, rss = timed([sluice, "upload", "synthetic:%s:1" % text, args.url, "-X", "PUT", "--transport", transport, "--progress", "none"])
            peaks.append(rss)
        print("| %s | %s | %+.1f MiB |" % (transport, " | ".join("%.1f MiB" % (p / 1024) for p in peaks), (peaks[-1] - peaks[0]) / 1024))


if __name__ == "__main__":
    main()
