#!/usr/bin/env bash
# Copy benchmark, by the store (issue 38): `sluice s3 cp s3://… s3://…` and `sluice s3 cp -r` of a
# prefix against `aws s3 cp`, `s5cmd cp` and `rclone copyto`/`copy` on the same SeaweedFS
# (Benchmarks/copies.py does the runs and prints the tables; each run timed by /usr/bin/time:
# wall, user+sys CPU, peak RSS).
#
#   (o) one object of --size (default 1GiB) copied within the bucket, part size 16 MiB x 8
#       (UploadPartCopy; the server copies, no byte through the client).
#   (p) a prefix of --objects objects of --object-size (default 1,000 of 16 KiB) copied below
#       another prefix.
#   (x) the object of (o) streamed between two endpoint names of the SeaweedFS (127.0.0.1 and
#       localhost: two stores to each tool, so the bytes go through it), against `rclone copyto`.
#   Interleaved runs (--runs, default 3), medians, sluice's ratios to each peer's.
#
#   bash Benchmarks/copies.sh [--only o,p,x] [--size 1GiB] [--objects 1000] [--object-size 16384] [--runs 3]
#                           [--tools s5cmd,aws-cli,rclone] [--concurrency 8] [--base OTHER-SLUICE]
#
# --base runs another sluice binary (a release build of the commit a change started from) beside
# this one as `sluice-base`, interleaved, so a change's rows are measured against its start in
# the same run.
# Builds sluice in release mode; starts SeaweedFS (unless SLUICE_S3_URL names one) and stops it
# by PID on exit. Prints `uptime` before and after: other work on the machine skews time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-copybench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

echo "uptime before: $(uptime)"
BIN=$(sluice_bench_build)
sluice_bench_weed "$TMP/weed"
python3 "$REPO/Benchmarks/copies.py" --sluice "$BIN/sluice" --workdir "$TMP" "$@"
echo "uptime after: $(uptime)"
