#!/usr/bin/env bash
# Multipart upload: Sluice's streaming body against `curl -F`, same parts, same server.
#
#   bash Benchmarks/multipart.sh [SIZE ...]        default: 64MiB 1GiB 4GiB
#
# For each SIZE it writes a sparse file of that size (reads cost no disk; both tools read
# the same file) and sends, ROUNDS times interleaved, the same three parts:
#   --form 'title=benchmark'  --form 'note=<NOTE'  --form 'file=@FILE;type=application/octet-stream'
# with `sluice upload --form ...` and `/usr/bin/curl -F ...` to nginx's /drop location
# (reads and discards the body, see scripts/peers.sh). It prints, per size, the median wall
# time of each tool, their ratio (sluice / curl: below 1 is faster), and the peak RSS of
# each (/usr/bin/time -v). Flat Sluice RSS across sizes is the point.
#
# Environment: ROUNDS (default 3), SLUICE_BIN (default: a release build made here),
# KEEP_TMP=1 keeps the temporary directory. Servers started here are stopped by PID.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
# shellcheck source=scripts/peers.sh
source "$REPO/scripts/peers.sh"

ROUNDS=${ROUNDS:-3}
SIZES=("$@")
((${#SIZES[@]})) || SIZES=(64MiB 1GiB 4GiB)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-multipart-bench.XXXXXX")

cleanup() {
    sluice_stop_peers
    if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

if [[ -z ${SLUICE_BIN:-} ]]; then
    echo "building sluice (release)..." >&2
    swift build -c release --product sluice -Xswiftc -warnings-as-errors >&2 || exit 1
    SLUICE_BIN="$(swift build -c release --show-bin-path)/sluice"
fi
if ! "$SLUICE_BIN" upload --help 2>&1 | grep -q -- '--form'; then
    echo "$SLUICE_BIN has no 'upload --form' yet" >&2
    exit 1
fi

sluice_start_nginx "$TMP/nginx" || exit 1
URL="$SLUICE_NGINX_URL/drop"

# Bytes as a number: 64MiB -> 67108864.
bytes_of() {
    python3 -c '
import re, sys
m = re.fullmatch(r"(\d+)(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?", sys.argv[1])
if not m: sys.exit(f"bad size {sys.argv[1]}")
units = {None: 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
print(int(m[1]) * units[m[2]])' "$1"
}

# Runs a command under /usr/bin/time -v; prints "SECONDS RSS_KB"; fails if the command fails.
measure() {
    local log=$TMP/time.log
    /usr/bin/time -v "$@" >"$TMP/out" 2>"$log" || { echo "failed: $*" >&2; tail -5 "$log" >&2; return 1; }
    awk -F': ' '
        /Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i] }
        /Maximum resident set size/ { rss = $2 }
        END { printf "%.3f %d\n", s, rss }' "$log"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf 'note for the note= part\n' >"$TMP/note.txt"
printf '%-8s %10s %10s %8s %14s %14s\n' size sluice_s curl_s ratio sluice_rss_MiB curl_rss_MiB
for size in "${SIZES[@]}"; do
    file="$TMP/part-$size.bin"
    truncate -s "$(bytes_of "$size")" "$file" || exit 1
    forms=(title=benchmark "note=<$TMP/note.txt" "file=@$file;type=application/octet-stream")
    sluice_args=() curl_args=()
    for form in "${forms[@]}"; do sluice_args+=(--form "$form"); curl_args+=(-F "$form"); done
    : >"$TMP/sluice.txt"; : >"$TMP/curl.txt"
    for ((round = 0; round < ROUNDS; round++)); do
        measure "$SLUICE_BIN" upload "${sluice_args[@]}" --progress none "$URL" >>"$TMP/sluice.txt" || exit 1
        measure /usr/bin/curl -sS --fail -o /dev/null "${curl_args[@]}" "$URL" >>"$TMP/curl.txt" || exit 1
    done
    s_time=$(cut -d' ' -f1 "$TMP/sluice.txt" | median); c_time=$(cut -d' ' -f1 "$TMP/curl.txt" | median)
    s_rss=$(cut -d' ' -f2 "$TMP/sluice.txt" | sort -n | tail -1); c_rss=$(cut -d' ' -f2 "$TMP/curl.txt" | sort -n | tail -1)
    awk -v size="$size" -v s="$s_time" -v c="$c_time" -v sr="$s_rss" -v cr="$c_rss" 'BEGIN {
        printf "%-8s %10.3f %10.3f %8.2f %14.1f %14.1f\n", size, s, c, (c > 0 ? s / c : 0), sr / 1024, cr / 1024 }'
    rm -f "$file"
done
