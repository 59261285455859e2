#!/usr/bin/env bash
# Installs and runs the interop suite (tests/interop): delta-rs and Spark with Delta, pinned.
#
#   scripts/interop.sh setup               create the cached virtualenv and fetch Spark's Delta jars
#   scripts/interop.sh run [pytest args]   setup (a no-op when cached), then pytest tests/interop
#   scripts/interop.sh env                 print the environment `run` uses (for running pytest by hand)
#
# Everything lands under ${MEDALLION_CACHE:-~/.cache/medallion}: the virtualenv in
# interop-venv-<hash of requirements.txt, jar pins and python version>, the Delta jars (fetched from
# Maven Central with `mvn dependency:copy`) in interop-jars-<delta version>. Each is marked complete
# by a stamp file written last, so an interrupted setup is redone from scratch and a finished one is
# reused without touching the network: after the first run, `run` works offline.
#
# `run` starts the pinned MinIO of scripts/minio.sh for the S3 tests unless MEDALLION_TEST_S3_ENDPOINT
# is already set (or MEDALLION_INTEROP_NO_MINIO=1, which leaves the S3 tests without a server).
#
# Under CI=true a missing tool (python3, java, mvn) or a failed install is an error, never a skip.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REQS="$ROOT/tests/interop/requirements.txt"
CACHE="${MEDALLION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medallion}"
PYTHON="${MEDALLION_INTEROP_PYTHON:-python3}"

# The JVM side of delta-spark (see requirements.txt): Spark 3.5 ships Scala 2.12 and antlr4 4.9.3,
# so only these two artifacts are needed on top of it.
DELTA_VERSION="3.3.2"
DELTA_JARS=("io.delta:delta-spark_2.12:$DELTA_VERSION" "io.delta:delta-storage:$DELTA_VERSION")

log() { echo "interop.sh: $*" >&2; }
die() { log "$*"; exit 1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "missing dependency: $1 ($2)"
}

env_hash() {
  need "$PYTHON" "Python 3.9+ for the interop suite"
  {
    cat "$REQS"
    printf '%s\n' "${DELTA_JARS[@]}"
    "$PYTHON" -c 'import sys; print(sys.version)'
  } | sha256sum | cut -c1-12
}

VENV="$CACHE/interop-venv-$(env_hash)"
JARS_DIR="$CACHE/interop-jars-$DELTA_VERSION"

setup_venv() {
  if [[ -f "$VENV/.complete" ]]; then
    return 0
  fi
  log "creating $VENV (pip install of pinned engines, a few minutes once)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$REQS" >&2
  touch "$VENV/.complete"
}

setup_jars() {
  if [[ -f "$JARS_DIR/.complete" ]]; then
    return 0
  fi
  need mvn "Maven, to fetch Spark's Delta jars from Maven Central"
  log "fetching ${DELTA_JARS[*]} into $JARS_DIR"
  rm -rf "$JARS_DIR"
  mkdir -p "$JARS_DIR"
  local artifact
  for artifact in "${DELTA_JARS[@]}"; do
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="$artifact" -DoutputDirectory="$JARS_DIR" >&2
  done
  touch "$JARS_DIR/.complete"
}

setup() {
  need java "Java 17 for Spark"
  setup_venv
  setup_jars
}

jar_list() {
  local jars=("$JARS_DIR"/*.jar)
  local IFS=,
  echo "${jars[*]}"
}

print_env() {
  cat <<ENV
export MEDALLION_INTEROP_VENV=$VENV
export MEDALLION_INTEROP_JARS=$(jar_list)
export PYSPARK_PYTHON=$VENV/bin/python
export PYSPARK_DRIVER_PYTHON=$VENV/bin/python
export SPARK_LOCAL_IP=127.0.0.1
ENV
}

cmd="${1:-}"
case "$cmd" in
  setup)
    setup
    log "ready: $VENV"
    ;;
  env)
    setup
    print_env
    ;;
  run)
    shift
    setup
    eval "$(print_env)"
    cd "$ROOT"
    if [[ -z "${MEDALLION_TEST_S3_ENDPOINT:-}" && "${MEDALLION_INTEROP_NO_MINIO:-}" != 1 ]]; then
      # The S3 tests need a server: the same pinned MinIO as the Go tests, started for this run.
      exec "$ROOT/scripts/minio.sh" run -- "$VENV/bin/python" -m pytest tests/interop "$@"
    fi
    exec "$VENV/bin/python" -m pytest tests/interop "$@"
    ;;
  *)
    echo "usage: scripts/interop.sh setup | run [pytest args] | env" >&2
    exit 2
    ;;
esac
