#!/usr/bin/env bash
# Upload benchmark: the same file to the same nginx location (/drop: `return 204`, reads and
# drops the body), interleaved runs, medians, as ratios against `curl -T`; then peak RSS for
# synthetic bodies from 64 MiB to 8 GiB. It also prints a buffer sweep (`sluice upload --buffer-size N`,
# both transports) with ratios against `curl -T` and plain URLSession, and the load average.
#
#   bash Benchmarks/upload.sh [--size 2GiB] [--runs 5] [--rss-sizes "64MiB 1GiB 8GiB"] [--skip-rss]
#                             [--sweep "32KiB 64KiB 128KiB 256KiB 1MiB"]   (buffer sweep, both transports; "" skips)
#
# Builds sluice and the URLSession baseline in release mode, starts nginx on a free loopback
# port (scripts/peers.sh), and stops it by PID on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

sluice_peers_install >&2
swift build -c release --product sluice >&2
swift build -c release --product urlsession-baseline >&2
BIN=$(swift build -c release --show-bin-path)
sluice_start_nginx "$TMP/nginx" >&2

python3 "$REPO/Benchmarks/upload.py" --bin "$BIN" --url "$SLUICE_NGINX_URL/drop" --workdir "$TMP" "$@"
