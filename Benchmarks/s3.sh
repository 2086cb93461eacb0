#!/usr/bin/env bash
# S3 upload benchmark: `sluice s3 cp` against s5cmd, aws-cli and rclone, interleaved runs,
# medians, ratios (Benchmarks/s3.py does the runs and prints the tables).
#
#   (a) to SeaweedFS (`weed mini`, scripts/peers.sh): the same file, 16 MiB parts x 8;
#       wall time, CPU (user+sys) and peak RSS. The server on two cores is the limit here.
#   (b) to an nginx sink that answers CreateMultipartUpload / UploadPart / Complete with
#       canned XML and drops the bodies (no signature check): the client's own cost.
#   (c) sluice's peak RSS at part sizes 8, 64 and 512 MiB x concurrency 8, file and stdin, to
#       the sink; and from stdin to SeaweedFS at the part sizes up to 64 MiB.
#   (d) a directory of 10,000 files of 16 KiB and (e) one of 1,000 files of 1 MiB plus two of
#       1 GiB, to SeaweedFS and to the sink, as one command each: `sluice s3 cp --recursive`,
#       `s5cmd cp 'DIR/*'`, `aws s3 cp --recursive`, `rclone copy`; objects/s, MiB/s, wall, CPU,
#       peak RSS and the server's CPU, one interleaved run (--tree-runs). Each run's objects are
#       counted (listed back from SeaweedFS; the sink logs every PutObject and Complete) and
#       deleted. Under each table, when strace is installed, one more run of each tool under
#       `strace -f -c` gives its futex and stat calls per file (a trip to a thread pool is futex
#       calls; issue 37, item 11). --tree-scale 0.1 makes both trees a tenth (counts and the large files);
#       --tools sluice-sha256,... adds `--payload-signing sha256` to the tools compared.
#   (f) peak RSS of one job of 100,000 files of 1 KiB to the sink (--rss-files, --rss-file-size;
#       --rss-tools sluice,s5cmd to compare).
#   The `s3 sync` rows (memory against a listing of 1,000,000 objects; 10,000 files unchanged and
#   1 % changed, against aws s3 sync, s5cmd sync and rclone sync): Benchmarks/sync.sh.
#
#   bash Benchmarks/s3.sh [--size 4GiB] [--sink-size 4GiB] [--runs 3] [--only a,b,c] [--rss-size 2GiB] [--rss-parts 8,64,512] [--tools s5cmd,aws-cli,rclone]
#                         [--tree-files 10000] [--tree-scale 1] [--tree-big 1GiB,1GiB] [--tree-runs 1] [--tree-concurrency 8] [--tree-servers weed,sink] [--tree-dir DIR]
#                         [--rss-files 100000] [--rss-file-size 1KiB] [--rss-tools sluice]
#
# (a) deletes each object after its run and vacuums: SeaweedFS needs about twice the size under TMPDIR.
# (d), (e) and (f) keep their trees under the workdir (or --tree-dir) for the run: (e) at full size is 3 GiB, (f) 100,000 inodes.
#
# Builds sluice in release mode; starts SeaweedFS (unless SLUICE_S3_URL names one) and nginx on
# free loopback ports and stops them by PID on exit. Prints `uptime` before and after: other work on the machine skews time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
source "$REPO/scripts/peers.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-s3bench.XXXXXX")
cleanup() { sluice_stop_peers; rm -rf "$TMP"; }
trap cleanup EXIT

# nginx answering S3's multipart calls with canned XML, bodies read and dropped.
sluice_write_s3_sink_conf() {
    local dir=$1 port=$2
    mkdir -p "$dir/body" "$dir/logs"
    cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
# 512: (c) runs 256 parts at once; at 256 nginx ran out of connections and parts were retried
# (56-99 retries of 410 parts, now and then one failed after 6 attempts).
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/body;
    fastcgi_temp_path $dir/body;
    uwsgi_temp_path $dir/body;
    scgi_temp_path $dir/body;
    client_max_body_size 0;
    keepalive_requests 100000;
    default_type application/xml;
    # One line per object stored (PutObject, CompleteMultipartUpload): (d) and (e) count them.
    log_format objects '\$s3kind \$status';
    map "\$request_method \$arg_uploadId" \$s3object {
        default 0;
        "PUT " 1;
        "~^POST ." 1;
    }
    map "\$request_method \$arg_uploadId" \$s3kind {
        default other;
        "~^POST \$" create;
        "~^POST ." complete;
        "~^PUT " put;
        "~^(GET|HEAD) " missing;
    }
    server {
        listen 127.0.0.1:$port;
        access_log $dir/logs/objects.log objects if=\$s3object;
        location / {
            if (\$s3kind = create) {
                return 200 '<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>bench</Bucket><Key>k</Key><UploadId>sink-upload-1</UploadId></InitiateMultipartUploadResult>';
            }
            if (\$s3kind = complete) {
                return 200 '<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Location>sink</Location><Bucket>bench</Bucket><Key>k</Key><ETag>"sinketag"</ETag></CompleteMultipartUploadResult>';
            }
            if (\$s3kind = put) {
                add_header ETag '"d41d8cd98f00b204e9800998ecf8427e"' always;
                return 200;
            }
            if (\$s3kind = missing) {
                return 404 '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>';
            }
            return 204;
        }
    }
}
CONF
}

sluice_launch_s3_sink() {
    sluice_write_s3_sink_conf "$SLUICE_S3_SINK_DIR" "$1"
    /usr/sbin/nginx -p "$SLUICE_S3_SINK_DIR" -c "$SLUICE_S3_SINK_DIR/nginx.conf" -e "$SLUICE_S3_SINK_DIR/logs/error.log" \
        >>"$SLUICE_S3_SINK_DIR/logs/stdout.log" 2>&1 &
    SLUICE_LAUNCHED_PID=$!
}

echo "uptime before: $(uptime)"
sluice_peers_install >&2
swift build -c release --product sluice >&2
BIN=$(swift build -c release --show-bin-path)
ONLY=a,b,c
TREE_SERVERS=weed,sink
for ((i = 1; i <= $#; i++)); do
    case "${!i}" in
        --only=*) ONLY=${!i#--only=} ;;
        --only) j=$((i + 1)); ONLY=${!j} ;;
        --tree-servers=*) TREE_SERVERS=${!i#--tree-servers=} ;;
        --tree-servers) j=$((i + 1)); TREE_SERVERS=${!j} ;;
    esac
done
# SeaweedFS only when a run uses it: an idle `weed mini` takes a few % of a core, which
# moves the CPU figures measured against the sink.
NEEDS_WEED=0
if [[ $ONLY == *[ac]* ]] || [[ $ONLY == *[de]* && $TREE_SERVERS == *weed* ]]; then NEEDS_WEED=1; fi
if [[ $NEEDS_WEED == 1 && -n ${SLUICE_S3_URL:-} ]]; then
    echo "using the SeaweedFS at $SLUICE_S3_URL (bucket ${SLUICE_S3_BUCKET:?})"
    sluice_wait_weed_bucket
elif [[ $NEEDS_WEED == 1 ]]; then
    sluice_start_weed "$TMP/weed" >&2
else
    # The sink checks no signature: any key pair will do.
    export SLUICE_S3_ACCESS_KEY=AKIDBENCH SLUICE_S3_SECRET_KEY=benchsecret
fi
SLUICE_S3_SINK_DIR="$TMP/sink"
mkdir -p "$SLUICE_S3_SINK_DIR/logs"
sluice_start_on_free_port "s3 sink" 10 "$SLUICE_S3_SINK_DIR/logs/error.log" sluice_launch_s3_sink >&2
export SLUICE_S3_SINK_URL="http://127.0.0.1:$SLUICE_STARTED_PORT" SLUICE_S3_SINK_PID=$SLUICE_STARTED_PID SLUICE_S3_SINK_DIR

python3 "$REPO/Benchmarks/s3.py" --sluice "$BIN/sluice" --workdir "$TMP" "$@"
echo "uptime after: $(uptime)"
