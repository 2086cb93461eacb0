#!/usr/bin/env python3
"""Runs the upload benchmark (see upload.sh): interleaved rounds, medians, ratios to curl -T and
to plain URLSession, and a buffer sweep (`sluice upload --buffer-size N`) for both transports."""

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


def cpu_model():
    """The CPU's model name and L2 size per core, from /proc/cpuinfo and sysfs."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as handle:
            model += ", L2 " + handle.read().strip()
    except OSError:
        pass
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--size", default="2GiB")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rss-sizes", default="64MiB 1GiB 8GiB")
    parser.add_argument("--sweep", default="32KiB 64KiB 128KiB 256KiB 1MiB",
                        help="buffer sizes for `sluice upload --buffer-size`, both transports ('' to skip)")
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--cacert", help="https: the test CA; then only curl -T and sluice's curl transport, no sweep or RSS")
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
        # The same bytes from a pipe (unknown length, chunked): `cat FILE | ... -`.
        ("cat FILE | curl -T -", ["sh", "-c", 'cat "$0" | curl -sS -f -T - "$1"', path, args.url]),
        ("cat FILE | sluice upload -", ["sh", "-c", 'cat "$0" | "$2" upload - "$1" -X PUT --progress none', path, args.url, sluice]),
    ]
    sweep = args.sweep.split()
    if args.cacert:
        contenders = [
            ("curl -T", ["curl", "-sS", "-f", "--cacert", args.cacert, "-T", path, args.url]),
            ("sluice (curl transport)", [sluice, "upload", path, args.url, "-X", "PUT", "--cacert", args.cacert, "--progress", "none"]),
        ]
        sweep = []
        args.skip_rss = True
    for text in sweep:
        contenders.append(("sweep curl %s" % text, [sluice, "upload", path, args.url, "-X", "PUT", "--buffer-size", str(parse_size(text)),
                                                   "--progress", "none"]))
        contenders.append(("sweep urlsession %s" % text, [sluice, "upload", path, args.url, "-X", "PUT", "--transport", "urlsession",
                                                         "--buffer-size", str(parse_size(text)), "--progress", "none"]))
    load_before = os.getloadavg()
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
    us_runs = results.get("URLSession httpBodyStream (InputStream(fileAtPath:))")
    us_wall = statistics.median(r[0] for r in us_runs) if us_runs else float("nan")
    print()
    print("%s file to nginx `return 204` on loopback%s, %d interleaved runs, medians; ratios < 1 are faster than the peer" % (
        args.size, " over https (TLS, HTTP/1.1)" if args.cacert else "", args.runs))
    print()
    print("| uploader | wall / curl -T | CPU / curl -T | wall / URLSession stream | MB/s | peak RSS |")
    print("|---|---|---|---|---|---|")
    for name, _ in contenders:
        if name.startswith("sweep "):
            continue
        wall = statistics.median(r[0] for r in results[name])
        cpu = statistics.median(r[1] for r in results[name])
        rss = statistics.median(r[2] for r in results[name])
        print("| %s | %.2f | %.2f | %.2f | %.0f | %.1f MiB |" % (
            name, wall / base_wall, cpu / base_cpu, wall / us_wall, size / wall / 1e6, rss / 1024))

    pipe_runs = results.get("cat FILE | curl -T -")
    if pipe_runs:
        pipe_wall = statistics.median(r[0] for r in pipe_runs)
        pipe_cpu = statistics.median(r[1] for r in pipe_runs)
        runs = results["cat FILE | sluice upload -"]
        print()
        print("From stdin: `cat FILE | sluice upload - URL` / `cat FILE | curl -T - URL` (both chunked, cat's CPU included): "
              "wall %.2f, CPU %.2f" % (statistics.median(r[0] for r in runs) / pipe_wall, statistics.median(r[1] for r in runs) / pipe_cpu))

    if sweep:
        us_cpu = statistics.median(r[1] for r in results["URLSession httpBodyStream (InputStream(fileAtPath:))"])
        print()
        print("Buffer sweep (`--buffer-size N`): sluice's transports against curl -T and plain URLSession (InputStream(fileAtPath:))")
        print()
        print("| buffer | curl transport: wall / curl -T | CPU / curl -T | urlsession transport: wall / URLSession | CPU / URLSession | wall / curl -T |")
        print("|---|---|---|---|---|---|")
        for text in sweep:
            curl_runs = results["sweep curl %s" % text]
            us_runs = results["sweep urlsession %s" % text]
            print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                text,
                statistics.median(r[0] for r in curl_runs) / base_wall, statistics.median(r[1] for r in curl_runs) / base_cpu,
                statistics.median(r[0] for r in us_runs) / us_wall, statistics.median(r[1] for r in us_runs) / us_cpu,
                statistics.median(r[0] for r in us_runs) / base_wall))
    load_after = os.getloadavg()
    print()
    print("load average (1/5/15 min) before: %.2f %.2f %.2f, after: %.2f %.2f %.2f; %d CPUs; %s" % (
        load_before + load_after + (os.cpu_count(), cpu_model())))
    if args.skip_rss:
        return
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
