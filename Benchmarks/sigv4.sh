#!/usr/bin/env bash
# SigV4 benchmark: (1) the same file PUT to nginx /drop (`return 204`, reads and drops the body)
# header-signed with UNSIGNED-PAYLOAD (the raw body: the baseline), as signed aws-chunked
# (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, 64 KiB chunks) and as aws-chunked with an unsigned CRC32C
# trailer; interleaved runs, medians, throughput ratios against the baseline (goal for signed:
# >= 0.9). (2) CRC32C and CRC64NVME throughput at 64 KiB blocks, single thread (goal: > 5 GB/s). (3) SHA-256 of
# 64 KiB blocks, single thread, one at a time (OpenSSL) and two at a time as a signed aws-chunked
# body hashes its chunks (`sluice_sha256_pair`).
#
#   bash Benchmarks/sigv4.sh [--size BYTES] [--runs N]
#
# Builds Benchmarks/SigV4Bench (sigv4-bench) in release mode, starts nginx on a free loopback
# port (scripts/peers.sh) and stops it by PID on exit; prints `uptime` before and after, since
# on a 2-core machine other load changes the result.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

SIZE=$((2 << 30))
RUNS=5
while (($#)); do
    case $1 in
        --size) SIZE=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) echo "usage: bash Benchmarks/sigv4.sh [--size BYTES] [--runs N]" >&2; exit 2 ;;
    esac
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-sigv4-bench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

sluice_peers_install >&2
swift build -c release --product sigv4-bench >&2
BIN="$(swift build -c release --show-bin-path)/sigv4-bench"
sluice_start_nginx "$TMP/nginx" >&2
FILE="$TMP/body.bin"
head -c "$SIZE" /dev/urandom >"$FILE"
cat "$FILE" >/dev/null

echo "load before: $(uptime)"
RESULTS="$TMP/results.txt"
for ((run = 1; run <= RUNS; run++)); do
    for mode in unsigned signed trailer-crc32c; do
        line=$("$BIN" upload "$mode" "$FILE" "$SLUICE_NGINX_URL/drop")
        echo "upload $mode $line" >>"$RESULTS"
    done
    echo "crc32c $("$BIN" crc32c $((8 << 30)) 65536)" >>"$RESULTS"
    echo "crc64nvme $("$BIN" crc64nvme $((8 << 30)) 65536)" >>"$RESULTS"
    echo "sha256 $("$BIN" sha256 $((2 << 30)) 65536)" >>"$RESULTS"
done
echo "load after:  $(uptime)"

python3 - "$RESULTS" "$SIZE" "$RUNS" <<'PY'
import statistics, sys
path, size, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
crc = {"crc32c": [], "crc64nvme": []}
hardware = {}
sha = []
for line in open(path):
    fields = line.split()
    values = dict(f.split("=", 1) for f in fields if "=" in f)
    if fields[0] == "upload":
        times.setdefault(fields[1], []).append(float(values["seconds"]))
    elif fields[0] == "sha256":
        sha.append((int(values["bytes"]) / float(values["seconds"]), int(values["bytes"]) / float(values["pair_seconds"]), values["interleaved"]))
    else:
        crc[fields[0]].append(int(values["bytes"]) / float(values["seconds"]))
        hardware[fields[0]] = values["hardware"]
base = statistics.median(times["unsigned"])
print(f"PUT of {size} bytes to nginx /drop, curl transport, medians of {runs} interleaved runs:")
for mode, label in [("unsigned", "UNSIGNED-PAYLOAD (baseline)"), ("signed", "aws-chunked signed (STREAMING-AWS4-HMAC-SHA256-PAYLOAD)"),
                    ("trailer-crc32c", "aws-chunked + CRC32C trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER)")]:
    median = statistics.median(times[mode])
    print(f"  {label:70s} {median:7.3f} s  {size / median / 1e6:8.1f} MB/s  ratio {base / median:5.2f}")
for name, label in [("crc32c", "CRC32C"), ("crc64nvme", "CRC64NVME")]:
    print(f"{label}, 64 KiB blocks, one thread: median {statistics.median(crc[name]) / 1e9:.2f} GB/s "
          f"(runs: {', '.join(f'{c / 1e9:.2f}' for c in crc[name])}; carry-less multiply: {hardware[name]})")
one, two = statistics.median(s[0] for s in sha), statistics.median(s[1] for s in sha)
print(f"SHA-256, 64 KiB blocks, one thread: one at a time (OpenSSL) {one / 1e9:.2f} GB/s, two at a time {two / 1e9:.2f} GB/s "
      f"({two / one:.2f}x; interleaved with the SHA extensions: {sha[0][2]})")
PY
