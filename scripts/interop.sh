#!/usr/bin/env bash
# Installs and runs the interop suite (tests/interop): delta-rs, Spark with Delta, polars and DuckDB
# (with its delta and httpfs extensions as packages), pinned.
#
#   scripts/interop.sh setup               create the cached virtualenv and fetch Spark's Delta jars
#   scripts/interop.sh run [pytest args]   setup (a no-op when cached), then pytest tests/interop
#   scripts/interop.sh env                 print the environment `run` uses (for running pytest by hand)
#
# Everything lands under ${MEDALLION_CACHE:-~/.cache/medallion}: the virtualenv in
# interop-venv-<hash of requirements.txt, Delta jar pins and python version>, the JVM jars (fetched
# from Maven Central with `mvn dependency:copy`) in interop-jars-<hash of every jar pin>: Delta's,
# and S3A's (hadoop-aws and the AWS SDK bundle it was built against) for Spark on MinIO. Each is
# marked complete by a stamp file written last, so an interrupted setup is redone from scratch and
# a finished one is reused without touching the network: after the first run, `run` works offline.
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
# Spark on MinIO (s3a://): hadoop-aws must be the version of the Hadoop client jars pyspark bundles
# (pyspark 3.5.8: hadoop-client-api/runtime 3.3.4), and the AWS SDK bundle the one its pom declares
# (hadoop-project 3.3.4: aws-java-sdk.version 1.12.262). The bundle is ~270 MB, fetched once.
HADOOP_AWS_VERSION="3.3.4"
AWS_SDK_BUNDLE_VERSION="1.12.262"
S3_JARS=("org.apache.hadoop:hadoop-aws:$HADOOP_AWS_VERSION"
  "com.amazonaws:aws-java-sdk-bundle:$AWS_SDK_BUNDLE_VERSION")

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
JARS_DIR="$CACHE/interop-jars-$(printf '%s\n' "${DELTA_JARS[@]}" "${S3_JARS[@]}" | sha256sum | cut -c1-12)"

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
  need mvn "Maven, to fetch Spark's Delta and S3A jars from Maven Central"
  log "fetching ${DELTA_JARS[*]} ${S3_JARS[*]} into $JARS_DIR"
  rm -rf "$JARS_DIR"
  mkdir -p "$JARS_DIR"
  local artifact
  for artifact in "${DELTA_JARS[@]}" "${S3_JARS[@]}"; do
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="$artifact" -DoutputDirectory="$JARS_DIR" >&2
  done
  # The copy in JARS_DIR is the one used: keep the bundle's 270 MB only once on disk.
  rm -rf "$CACHE/m2/com/amazonaws/aws-java-sdk-bundle"
  touch "$JARS_DIR/.complete"
}

# Hadoop's local file system without a child process per call (tests/interop/localfs: chmod and
# readlink through java.nio, where Hadoop without its native library runs a process: 17,000 of
# them in test_join_differential alone). Compiled once against pyspark's Hadoop; without javac the
# suite runs on Hadoop's own local file system, as before.
LOCALFS_SRC="$ROOT/tests/interop/localfs"

localfs_jar() {
  local hadoop
  hadoop=$(compgen -G "$VENV/lib/python*/site-packages/pyspark/jars/hadoop-client-api-*.jar" | head -1)
  echo "$CACHE/interop-localfs-$( { cat "$LOCALFS_SRC"/*.java; basename "$hadoop"; } | sha256sum | cut -c1-12)/medallion-localfs.jar"
}

setup_localfs() {
  local jar dir jars tmp
  jar=$(localfs_jar)
  dir=$(dirname "$jar")
  if [[ -f "$dir/.complete" ]]; then
    return 0
  fi
  if ! command -v javac >/dev/null 2>&1; then
    log "no javac: Spark keeps Hadoop's local file system (a process per chmod and readlink)"
    return 0
  fi
  jars=$(compgen -G "$VENV/lib/python*/site-packages/pyspark/jars" | head -1)
  # Built aside and renamed in: a run beside this one sees no jar or a whole one.
  tmp=$(mktemp -d "$CACHE/.interop-localfs.XXXXXX")
  mkdir "$tmp/classes"
  javac -nowarn -d "$tmp/classes" -cp "$jars/*" "$LOCALFS_SRC"/*.java >&2
  jar cf "$tmp/$(basename "$jar")" -C "$tmp/classes" .
  rm -rf "$tmp/classes"
  touch "$tmp/.complete"
  rm -rf "$dir"
  mv "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
}

setup() {
  need java "Java 17 for Spark"
  setup_venv
  # A pyspark bump that changes its Hadoop would leave S3A on mismatched Hadoop classes, failing
  # only deep inside the first s3a:// read: say so here instead.
  compgen -G "$VENV/lib/python*/site-packages/pyspark/jars/hadoop-client-api-$HADOOP_AWS_VERSION.jar" \
    >/dev/null || die "pyspark in $VENV does not bundle Hadoop $HADOOP_AWS_VERSION; update HADOOP_AWS_VERSION and AWS_SDK_BUNDLE_VERSION"
  setup_jars
  setup_localfs
}

jar_path() {  # jar_path SEPARATOR GROUP:ARTIFACT:VERSION... -> the cached jars, joined
  local sep="$1" out="" coord parts
  shift
  for coord in "$@"; do
    IFS=: read -ra parts <<<"$coord"
    out+="${out:+$sep}$JARS_DIR/${parts[1]}-${parts[2]}.jar"
  done
  echo "$out"
}

# The Delta jars go to spark.jars; the S3A ones to the driver's class path (local mode: the only
# JVM), which Spark does not copy into each session's temporary directory as it does spark.jars.
print_env() {
  cat <<ENV
export MEDALLION_INTEROP_VENV=$VENV
export MEDALLION_INTEROP_JARS=$(jar_path , "${DELTA_JARS[@]}")
export MEDALLION_INTEROP_S3_JARS=$(jar_path : "${S3_JARS[@]}")
export PYSPARK_PYTHON=$VENV/bin/python
export PYSPARK_DRIVER_PYTHON=$VENV/bin/python
export SPARK_LOCAL_IP=127.0.0.1
ENV
  if [[ -f "$(dirname "$(localfs_jar)")/.complete" ]]; then
    echo "export MEDALLION_INTEROP_LOCALFS_JAR=$(localfs_jar)"
  fi
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
