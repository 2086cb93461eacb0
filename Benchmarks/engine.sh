#!/usr/bin/env bash
# Engine benchmark: parallel ranged upload vs curl -T, one loop vs one per core, peak RSS by
# part size, 64 concurrent uploads (RSS, threads), tus connections and wall time, stdin vs
# curl, the libcurl upload buffer, cancel latency. Interleaved runs, medians, ratios; the load
# average is printed with each section (the machine may be shared).
#
#   bash Benchmarks/engine.sh [--runs 5] [--only parts,loops,rss,concurrent,tus,tusparallel,stdin,buffer,cancel]
#                             [--old-bin DIR]   (a pre-engine release build of sluice, for tus "before")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-engine-bench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

sluice_peers_install >&2
swift build -c release --product sluice >&2
swift build -c release --product engine-bench >&2
BIN=$(swift build -c release --show-bin-path)
sluice_start_nginx "$TMP/nginx" >&2
sluice_start_tus "$TMP/tus" >&2

python3 "$REPO/Benchmarks/engine.py" --bin "$BIN" --nginx "$SLUICE_NGINX_URL" --tus "$SLUICE_TUS_URL" --tus-store "$SLUICE_TUS_STORE" --workdir "$TMP" "$@"
