#!/usr/bin/env bash
# Sluice's whole test run: peers, build (warnings are errors), every test, the DocC build
# (scripts/docs.sh), the stream tests under ThreadSanitizer, a package outside Sluice that depends
# on it by path (Tests/e2e/OutsidePackage), the CLI end-to-end tests, and
# swift-format's lint (scripts/lint.sh; `bash scripts/lint.sh --fix` formats the tree).
#
#   bash scripts/test.sh
#
# On a fresh Debian machine (as root) it first installs what is missing: nginx-light, curl,
# libssl-dev, python3 + pip, zsh, fish, man-db, groff-base, and the Python packages tuspyserver, uvicorn, tuspy,
# python-multipart and pytest. It starts, on 127.0.0.1 and free ports, nginx (a config of its
# own in a temporary directory) and a tus 1.0 server (tuspyserver under uvicorn), and exports
# for the tests:
#   SLUICE_NGINX_URL   http://127.0.0.1:PORT  (/dav/... stores PUT bodies; /drop reads and drops;
#                      /drop-read answers only after the last byte; see scripts/peers.sh)
#   SLUICE_NGINX_ROOT  the directory /dav/... is stored under (PUT /dav/a -> $SLUICE_NGINX_ROOT/dav/a)
#   SLUICE_TUS_URL     http://127.0.0.1:PORT/files/   (tus creation endpoint)
#   SLUICE_TUS_STORE   the directory tus uploads are stored in (file name = last URL component)
#   SLUICE_FAULT_URL   http://127.0.0.1:PORT  (Tests/Peers/fault_server.py)
#   SLUICE_S3_URL      http://127.0.0.1:PORT  SeaweedFS's S3 API, with SLUICE_S3_ACCESS_KEY,
#                      SLUICE_S3_SECRET_KEY, SLUICE_S3_BUCKET, SLUICE_S3_REGION (scripts/peers.sh)
#   SLUICE_BIN         the sluice executable just built (for Tests/e2e)
# Every server it started is stopped by PID on exit, whatever happens.
#
# Environment: SLUICE_SKIP_TSAN=1 skips the ThreadSanitizer step; SLUICE_KEEP_TMP=1 keeps the
# temporary directory (configs, logs, stored files); SLUICE_SCRATCH_PATH and
# SLUICE_TSAN_SCRATCH_PATH choose the build directories (default .build and .build-tsan), and
# SLUICE_OUTSIDE_SCRATCH the outside package's (default SCRATCH/outside-package).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
# shellcheck source=scripts/peers.sh
source "$REPO/scripts/peers.sh"

SCRATCH=(--scratch-path "${SLUICE_SCRATCH_PATH:-.build}")
TSAN_SCRATCH=(--scratch-path "${SLUICE_TSAN_SCRATCH_PATH:-.build-tsan}")
STARTED_AT=$SECONDS
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX")
# What the tests leave in a temporary directory (tus stores, receiver stores, pytest's
# tmp_path: hundreds of MiB per run) goes under $TMP and is removed with it at exit.
mkdir -p "$TMP/tmp"
export TMPDIR="$TMP/tmp"
RESULTS=()
FAILED=0
SWIFT_CLOSING=""

say() { printf '\n=== %s\n' "$*" >&2; }

cleanup() {
    local status=$?
    sluice_stop_peers
    if [[ ${SLUICE_KEEP_TMP:-0} == 1 ]]; then
        printf 'test.sh: kept %s\n' "$TMP" >&2
    else
        rm -rf "$TMP"
    fi
    return $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs one step; records "name: ok|FAILED (Ns)".
step() {
    local name=$1 started=$SECONDS status
    shift
    say "$name: $*"
    "$@"
    status=$?
    if ((status == 0)); then
        RESULTS+=("$name ok ($((SECONDS - started))s)")
    else
        RESULTS+=("$name FAILED (exit $status, $((SECONDS - started))s)")
        FAILED=1
    fi
    return $status
}

skip() { RESULTS+=("$1 skipped ($2)"); }

summary() {
    local result
    say "summary"
    for result in "${RESULTS[@]}"; do printf '  %s\n' "$result"; done
    [[ -n $SWIFT_CLOSING ]] && printf '  swift test: %s\n' "$SWIFT_CLOSING"
    if ((FAILED)); then
        printf 'test.sh: FAILED after %ds: %s\n' "$((SECONDS - STARTED_AT))" "$(IFS=';'; echo "${RESULTS[*]}")"
    else
        printf 'test.sh: PASSED in %ds: %s\n' "$((SECONDS - STARTED_AT))" "$(IFS=';'; echo "${RESULTS[*]}")"
    fi
}

start_peers() {
    sluice_start_nginx "$TMP/nginx" || return 1
    sluice_start_tus "$TMP" || return 1
    sluice_start_fault "$TMP" || return 1
    if [[ -n ${SLUICE_S3_URL:-} ]]; then
        # A SeaweedFS already running (with SLUICE_S3_ACCESS_KEY, _SECRET_KEY, _BUCKET,
        # _REGION), instead of starting one.
        sluice_log "using the SeaweedFS at $SLUICE_S3_URL (bucket ${SLUICE_S3_BUCKET:?})"
        sluice_wait_weed_bucket || return 1
    else
        sluice_start_weed "$TMP/weed" || return 1
    fi
    sluice_check_peers
}

swift_tests() {
    local log="$TMP/swift-test.log"
    # Bounded: a stall fails the step with a message instead of hanging CI.
    timeout -k 30 "${SLUICE_SWIFT_TEST_TIMEOUT:-1200}" swift test "${SCRATCH[@]}" --skip-build 2>&1 | tee "$log"
    local status=${PIPESTATUS[0]}
    # The runners' closing lines (Swift Testing, then XCTest if any ran).
    SWIFT_CLOSING=$(grep -E 'Test run with [0-9]+ tests? |Executed [1-9][0-9]* tests?, with' "$log" \
        | tail -n 2 | sed -E 's/^[[:space:]]+//' | paste -sd ' ' -)
    return "$status"
}

# The threaded code under ThreadSanitizer: the stream pairs and pump, the receiver, the engine
# (loops, lifecycle, parallel parts and their progress, producers), the aws-chunked read-ahead
# on the loops and the S3 stream pool with parts reset and retried, the blocking-call pool and the
# state machines (PartTrackerState, AWSChunkReadAheadState, BlockingPool.State). A report does not change
# `swift test`'s exit status, so the output is searched for reports too.
tsan_tests() {
    local log="$TMP/tsan.log" status reports
    # The instrumented build has its own bound: on a loaded machine it alone took 1057 s, and
    # left the tests too little of a shared one.
    timeout -k 30 "${SLUICE_TSAN_BUILD_TIMEOUT:-1800}" swift build --build-tests --sanitize=thread "${TSAN_SCRATCH[@]}" \
        || return 1
    timeout -k 30 "${SLUICE_SWIFT_TEST_TIMEOUT:-1200}" swift test --skip-build --sanitize=thread "${TSAN_SCRATCH[@]}" \
        --filter 'ByteRing|BoundStream|InputStreamSource|FoundationStreamChannel|LoopbackReceiver|FileLifetime|SpecialFile|AWSChunked|TransferEngine|EngineLifecycle|ParallelUpload|PartProgress|PartScheduler|PartTracker|CurlProducer|ReadAheadEngine|S3StreamPool|S3StreamRetry|RequestBudget|JobJournal|BlockingPool|AWSChunkReadAhead' 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    reports=$(grep -c 'WARNING: ThreadSanitizer' "$log")
    if ((reports > 0)); then
        printf 'test.sh: %d ThreadSanitizer report(s); first:\n' "$reports" >&2
        grep -m 1 -A 3 'WARNING: ThreadSanitizer' "$log" >&2
        return 1
    fi
    return "$status"
}

e2e_tests() {
    timeout -k 30 "${SLUICE_E2E_TIMEOUT:-1500}" "$SLUICE_PYTHON" -m pytest -q Tests/e2e
}

# A package outside Sluice that depends on it by path (Tests/e2e/OutsidePackage), built once in
# debug in a build directory of its own beside Sluice's (kept between runs like it, so a run
# rebuilds only what changed); Tests/e2e/test_outside_package.py runs it against SeaweedFS, and
# its own build there is then a no-op.
case ${SLUICE_SCRATCH_PATH:-.build} in
    /*) SLUICE_OUTSIDE_SCRATCH=${SLUICE_OUTSIDE_SCRATCH:-${SLUICE_SCRATCH_PATH}/outside-package} ;;
    *) SLUICE_OUTSIDE_SCRATCH=${SLUICE_OUTSIDE_SCRATCH:-$REPO/${SLUICE_SCRATCH_PATH:-.build}/outside-package} ;;
esac
export SLUICE_OUTSIDE_SCRATCH
outside_package() {
    timeout -k 30 "${SLUICE_OUTSIDE_TIMEOUT:-1200}" swift build --package-path Tests/e2e/OutsidePackage \
        --scratch-path "$SLUICE_OUTSIDE_SCRATCH" --product OutsideApp
}

has_e2e_tests() {
    compgen -G "Tests/e2e/test_*.py" >/dev/null || compgen -G "Tests/e2e/*_test.py" >/dev/null
}

build() {
    swift build "${SCRATCH[@]}" --build-tests -Xswiftc -warnings-as-errors || return 1
    # For the end-to-end tests: the CLI just built.
    SLUICE_BIN="$(swift build "${SCRATCH[@]}" --show-bin-path)/sluice"
    export SLUICE_BIN
}

if step "install" sluice_peers_install \
    && step "peers" start_peers; then
    if step "build" build; then
        step "swift test" swift_tests
        # The DocC catalog, built by the toolchain's docc with warnings as errors; fails on a
        # broken link or an undocumented public symbol of the library.
        step "docs" timeout -k 30 "${SLUICE_DOCS_TIMEOUT:-900}" bash scripts/docs.sh --output "$TMP/docs"
        if [[ ${SLUICE_SKIP_TSAN:-0} == 1 ]]; then
            skip "tsan" "SLUICE_SKIP_TSAN=1"
        else
            step "tsan" tsan_tests
        fi
        step "outside package" outside_package
        if has_e2e_tests; then
            step "e2e" e2e_tests
        else
            skip "e2e" "no tests in Tests/e2e"
        fi
    else
        skip "swift test" "build failed"
        skip "docs" "build failed"
        skip "tsan" "build failed"
        skip "outside package" "build failed"
        skip "e2e" "build failed"
    fi
fi
# swift-format with the checked-in .swift-format: the tree stays as formatted.
step "lint" bash scripts/lint.sh
summary
exit "$FAILED"
