#!/usr/bin/env bash
# Installs, starts and stops the pinned MinIO server that the S3 tests run against.
#
#   scripts/minio.sh install            build the pinned server from the Go module proxy (cached)
#   eval "$(scripts/minio.sh start)"    start it on a free loopback port; prints the env to export
#                                       (AWS_ENDPOINT_URL and credentials too, so that medallion and
#                                       a config without s3.endpoint use it)
#   scripts/minio.sh stop               stop the server started by `start` and delete its data
#   scripts/minio.sh run -- CMD...      start, run CMD with the env set, always stop; CMD's exit code
#
# The server has a webhook notification target arn:minio:sqs::PRIMARY:webhook that posts to
# http://$MEDALLION_TEST_WEBHOOK_ADDR/s3-events with `Authorization: Bearer
# $MEDALLION_TEST_WEBHOOK_TOKEN`, for the event-driven ingestion test, and a second one,
# arn:minio:sqs::OTHERTEAM:webhook, that nothing listens to: another team's rule, which
# subscribing must keep.
#
# The server is built with `go install` at a pinned pseudo-version (about 6 minutes on 2 cores the
# first time, then cached under $MEDALLION_CACHE). That version answers `If-None-Match: *` with 412,
# which the commit protocol relies on.
#
# MinIO refuses every write once its drive is about 99% full (HTTP 507, XMinioStorageFull), which
# the tests would report as hundreds of unrelated failures; `start` refuses first, naming the data
# directory, when less than $MEDALLION_MINIO_MIN_FREE_MB (default 4096) MiB is free there.
set -euo pipefail

MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
CACHE="${MEDALLION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medallion}"
BIN_DIR="$CACHE/minio-$MINIO_VERSION"
BIN="$BIN_DIR/minio"
STATE="${MEDALLION_MINIO_STATE:-${TMPDIR:-/tmp}/medallion-minio.state}"
USER_NAME="medallion"
PASSWORD="medallion-test-secret"
WEBHOOK_TOKEN="medallion-test-webhook-token"

log() { echo "minio.sh: $*" >&2; }
# shellcheck source=scripts/server.sh
. "$(dirname "${BASH_SOURCE[0]}")/server.sh"

# Fails with a clear message when the filesystem of $1 has too little room for MinIO to accept
# writes (it keeps about 1% of the drive free) plus what a test run writes.
check_free_space() {
  local dir=$1 want_mb=${MEDALLION_MINIO_MIN_FREE_MB:-4096} free_kb size_kb
  read -r size_kb free_kb < <(df -Pk "$dir" | awk 'NR==2 {print $2, $4}')
  if (( free_kb / 1024 < want_mb )); then
    log "only $((free_kb / 1024)) MiB free of $((size_kb / 1024)) MiB on the filesystem of $dir:"
    log "MinIO refuses writes on a nearly full drive (XMinioStorageFull); free space there,"
    log "point TMPDIR elsewhere, or lower MEDALLION_MINIO_MIN_FREE_MB (now $want_mb)"
    return 1
  fi
}

install() {
  if [[ -x "$BIN" ]]; then
    return 0
  fi
  log "building MinIO $MINIO_VERSION from the Go module proxy into $BIN_DIR (takes a few minutes once)"
  mkdir -p "$BIN_DIR"
  # Build outside any module so the project's go.mod does not interfere.
  (cd "$(mktemp -d)" && GOFLAGS= GOBIN="$BIN_DIR" go install "github.com/minio/minio@$MINIO_VERSION") >&2
  [[ -x "$BIN" ]] || { log "install failed: $BIN missing"; exit 1; }
}

start() {
  install
  local port data pid webhook
  port=$(free_port)
  # A webhook notification target (arn:minio:sqs::PRIMARY:webhook) pointing at a port reserved
  # for the event-driven ingestion test, which listens there; MinIO tolerates it being down.
  webhook="127.0.0.1:$(free_port)"
  data=$(mktemp -d "${TMPDIR:-/tmp}/medallion-minio.XXXXXX")
  check_free_space "$data" || { rm -rf "$data"; exit 1; }
  MINIO_ROOT_USER="$USER_NAME" MINIO_ROOT_PASSWORD="$PASSWORD" MINIO_BROWSER=off \
    MINIO_UPDATE=off MINIO_CI_CD=1 \
    MINIO_NOTIFY_WEBHOOK_ENABLE_PRIMARY=on \
    MINIO_NOTIFY_WEBHOOK_ENDPOINT_PRIMARY="http://$webhook/s3-events" \
    MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_PRIMARY="$WEBHOOK_TOKEN" \
    MINIO_NOTIFY_WEBHOOK_ENABLE_OTHERTEAM=on \
    MINIO_NOTIFY_WEBHOOK_ENDPOINT_OTHERTEAM="http://127.0.0.1:$(free_port)/other-team" \
    "$BIN" server --quiet --address "127.0.0.1:$port" "$data/data" >"$data/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do
    if curl -fsS "http://127.0.0.1:$port/minio/health/live" >/dev/null 2>&1; then
      printf 'pid=%s\nport=%s\ndata=%s\n' "$pid" "$port" "$data" >"$STATE"
      cat <<ENV
export MEDALLION_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export MEDALLION_TEST_WEBHOOK_ADDR=$webhook
export MEDALLION_TEST_WEBHOOK_TOKEN=$WEBHOOK_TOKEN
export AWS_ACCESS_KEY_ID=$USER_NAME
export AWS_SECRET_ACCESS_KEY=$PASSWORD
export AWS_REGION=us-east-1
ENV
      log "MinIO $MINIO_VERSION listening on 127.0.0.1:$port (pid $pid, data $data)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "server exited during start-up:"; cat "$data/server.log" >&2; exit 1
    fi
    sleep 0.2
  done
  log "server did not become healthy within 30 s:"; cat "$data/server.log" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
}

stop() { stop_server data; }

run() { run_with_server minio MEDALLION_MINIO_STATE "$@"; }

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 install|start|stop|run -- CMD..." >&2; exit 2 ;;
esac
