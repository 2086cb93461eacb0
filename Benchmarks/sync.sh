#!/usr/bin/env bash
# `s3 sync` benchmark: `sluice s3 sync` against `aws s3 sync`, `s5cmd sync` and `rclone sync`
# (Benchmarks/sync.py does the runs and prints the tables; every run timed by os.wait4: wall,
# user+sys CPU, peak RSS).
#
#   (m) memory: a tree of 100,000 files against a prefix of 1,000,000 objects that
#       Tests/Peers/listing_server.py lists (the tree's files unchanged, the rest without a
#       file): a plain sync and --delete --dryrun, each tool bounded by --timeout.
#   (s) speed: 10,000 files unchanged (only the listing and the walk) and with 1 % changed,
#       against the listing server (uploads dropped and counted) and SeaweedFS; interleaved
#       runs, medians, sluice's wall and CPU as ratios to the fastest peer's.
#
#       One directory of 1,000,000 files (issue 37.7): --per-directory 10000000 --files 1000000
#       --memory-modes dryrun [--tree DIR, a tree made before by listing_server.write_tree].
#
#   bash Benchmarks/sync.sh [--only m,s] [--objects 1000000] [--files 100000] [--memory-tools sluice,s5cmd,aws-cli,rclone]
#                           [--memory-modes plain,delete-dryrun,dryrun] [--per-directory 1000] [--tree DIR]
#                           [--speed-files 10000] [--changed 0.01] [--servers listing,weed] [--runs 3] [--timeout 600]
#                           [--tools s5cmd,aws-cli,rclone]
#
# Builds sluice in release mode; starts SeaweedFS for (s) (unless SLUICE_S3_URL names one, or
# --servers leaves it out) and stops it by PID on exit. Trees are made under a temporary
# directory and removed. Prints `uptime` before and after: other work on the machine skews time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-syncbench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

echo "uptime before: $(uptime)"
BIN=$(sluice_bench_build)
ONLY=m,s
SERVERS=listing,weed
for ((i = 1; i <= $#; i++)); do
    case "${!i}" in
        --only=*) ONLY=${!i#--only=} ;;
        --only) j=$((i + 1)); ONLY=${!j} ;;
        --servers=*) SERVERS=${!i#--servers=} ;;
        --servers) j=$((i + 1)); SERVERS=${!j} ;;
    esac
done
if [[ $ONLY == *s* && $SERVERS == *weed* ]]; then
    sluice_bench_weed "$TMP/weed"
fi
python3 "$REPO/Benchmarks/sync.py" --sluice "$BIN/sluice" --workdir "$TMP" "$@"
echo "uptime after: $(uptime)"
