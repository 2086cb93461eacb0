#!/usr/bin/env bash
# --limit-rate on a whole job: how close the achieved rate comes to the cap (issue 19 asks for
# within 5 % on a job, the cap shared by every connection).
#
#   bash Benchmarks/limit_rate.sh [RATES [RUNS]]     (default: 2M,4M,8M and 2 runs each)
#
# To SeaweedFS (scripts/peers.sh; it keeps up with these rates on two cores): a tree of 40 files
# of 1 MiB and one of 24 MiB (five 5 MiB parts, --concurrency 8: small files and parts share the
# cap), as one `sluice s3 cp -r`, and the 24 MiB file alone as one multipart upload. The rate is
# bytes / wall time of the command (process start and the job's first and last requests
# included, so a kept cap reads a little under 1.00; the first tenth of a second's burst pushes
# the other way); the ratio is rate / cap. Builds sluice in release mode; stops what it started
# by PID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

RATES=${1:-2M,4M,8M}
RUNS=${2:-2}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ratebench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

swift build -c release --product sluice >&2
BIN="$(swift build -c release --show-bin-path)/sluice"
if [[ -z ${SLUICE_S3_URL:-} ]]; then
    sluice_start_weed "$TMP/weed" >&2
fi
export AWS_ACCESS_KEY_ID=$SLUICE_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SLUICE_S3_SECRET_KEY AWS_REGION=$SLUICE_S3_REGION
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null

mkdir -p "$TMP/tree/small"
for i in $(seq 1 40); do head -c 1048576 /dev/urandom >"$TMP/tree/small/f$i"; done
head -c $((24 << 20)) /dev/urandom >"$TMP/tree/big"

echo "uptime before: $(uptime)"
python3 - "$BIN" "$TMP" "$RATES" "$RUNS" <<'PY'
import os, subprocess, sys, time
binary, tmp, rates, runs = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
endpoint, bucket = os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"]
units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
cases = [("41 files (64 MiB), -r", 64 << 20, ["-r", os.path.join(tmp, "tree")], "/"),
         ("24 MiB, 5 parts at once", 24 << 20, [os.path.join(tmp, "tree", "big")], "")]
print("%-6s %-26s %10s %10s %8s" % ("cap", "what", "wall s", "MiB/s", "ratio"))
for rate in rates:
    cap = float(rate[:-1]) * units[rate[-1].upper()] if rate[-1].upper() in units else float(rate)
    for run in range(runs):
        for label, size, source, slash in cases:
            key = "ratebench-%s-%d-%d%s" % (rate, run, time.monotonic_ns(), slash)
            started = time.monotonic()
            proc = subprocess.run([binary, "s3", "cp", *source, "s3://%s/%s" % (bucket, key), "--endpoint-url", endpoint,
                                   "--state", os.path.join(tmp, "state-" + key.strip("/")), "--progress", "none",
                                   "--part-size", "5MiB", "--concurrency", "8", "--limit-rate", rate],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            wall = time.monotonic() - started
            if proc.returncode != 0:
                sys.exit("failed: %s" % proc.stderr.decode(errors="replace"))
            achieved = size / wall
            # Wall time includes the process's start and the job's first and last requests, so
            # a ratio a little under 1.00 is the cap kept; over 1.05 would be the cap broken.
            print("%-6s %-26s %10.2f %10.2f %8.3f" % (rate, label, wall, achieved / (1 << 20), achieved / cap), flush=True)
PY
echo "uptime after: $(uptime)"
