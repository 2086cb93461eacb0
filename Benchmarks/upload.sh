#!/usr/bin/env bash
# Upload benchmark: the same file to the same nginx location (/drop: `return 204`, reads and
# drops the body), interleaved runs, medians, as ratios against `curl -T`; then peak RSS for
# synthetic bodies from 64 MiB to 8 GiB. It also prints a buffer sweep (`sluice upload --buffer-size N`,
# both transports) with ratios against `curl -T` and plain URLSession, and the load average.
#
#   bash Benchmarks/upload.sh [--size 2GiB] [--runs 5] [--rss-sizes "64MiB 1GiB 8GiB"] [--skip-rss]
#                             [--sweep "32KiB 64KiB 128KiB 256KiB 1MiB"]   (buffer sweep, both transports; "" skips)
#   bash Benchmarks/upload.sh --tls [--size 2GiB] [--runs 5]
#       https instead: its own test CA and an nginx with `ssl` (HTTP/1.1, /drop `return 204`) started
#       here; `sluice upload FILE https://127.0.0.1:PORT/drop --cacert CA` against
#       `curl -T FILE --cacert CA https://...` (the urlsession transport cannot take --cacert).
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

TLS=0
ARGS=()
for arg in "$@"; do
    if [[ $arg == --tls ]]; then TLS=1; else ARGS+=("$arg"); fi
done

sluice_peers_install >&2
swift build -c release --product sluice >&2
swift build -c release --product urlsession-baseline >&2
BIN=$(swift build -c release --show-bin-path)

if (( TLS == 0 )); then
    sluice_start_nginx "$TMP/nginx" >&2
    python3 "$REPO/Benchmarks/upload.py" --bin "$BIN" --url "$SLUICE_NGINX_URL/drop" --workdir "$TMP" ${ARGS[@]+"${ARGS[@]}"}
    exit
fi

# A test CA and a server certificate for IP:127.0.0.1 (as Tests/e2e/test_tls.py makes them).
T=$TMP/tls
mkdir -p "$T/logs" "$T/body"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Sluice Bench CA" -keyout "$T/ca.key" -out "$T/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$T/server.key" -out "$T/server.csr" 2>/dev/null
echo "subjectAltName=IP:127.0.0.1" >"$T/ext"
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
    -extfile "$T/ext" -out "$T/server.pem" 2>/dev/null

bench_launch_tls_nginx() {
    cat >"$T/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $T/nginx.pid;
error_log $T/logs/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $T/body; proxy_temp_path $T/body; fastcgi_temp_path $T/body;
    uwsgi_temp_path $T/body; scgi_temp_path $T/body;
    client_max_body_size 0;
    server {
        listen 127.0.0.1:$1 ssl;
        ssl_certificate $T/server.pem; ssl_certificate_key $T/server.key;
        location = /drop { return 204; }
    }
}
CONF
    /usr/sbin/nginx -c "$T/nginx.conf" -p "$T" -e "$T/logs/error.log" >/dev/null 2>>"$T/logs/error.log" &
    SLUICE_LAUNCHED_PID=$!
}
sluice_start_on_free_port nginx-tls 10 "$T/logs/error.log" bench_launch_tls_nginx >&2
python3 "$REPO/Benchmarks/upload.py" --bin "$BIN" --url "https://127.0.0.1:$SLUICE_STARTED_PORT/drop" --workdir "$TMP" \
    --cacert "$T/ca.pem" ${ARGS[@]+"${ARGS[@]}"}
