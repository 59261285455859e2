#!/usr/bin/env bash
# Regenerates bench/RESULTS.md and bench/results.svg: medallion's stages side by side with Spark
# Structured Streaming and delta-rs on the same workload, in one run on this machine; on the file
# backend also the job `medallion export spark` prints, run over medallion's bronze keeping the
# promise and with --plain (Spark's own aggregation): the Notes give what the promise costs.
#
#   bench/run.sh [--sizes 1M,10M,50M] [--keys 1k,100k] [--backends file,minio] [--quick] [--no-micro]
#                [--no-anchors] [--kafka|--no-kafka] [--join|--no-join] [--stages ingest,replay-24h,...]
#                [-- extra benchrun flags]
#
#   --quick      1M events, 1k keys, file backend, short microbenchmarks without the long
#                BenchmarkStreamMemory: a few minutes on a quiet machine
#   --no-micro   skip the go test -bench microbenchmarks
#   --no-anchors medallion only (no Spark, no delta-rs)
#   -- FLAGS     passed on to bench/cmd/benchrun, e.g. `-- --export-job=false` to leave out the job
#                `medallion export spark` prints (twice per file case: at 100k events 357 + 179 CPU s
#                beside Spark's own job's 224, bench/RESULTS.md 2026-12-05)
#   --kafka      also measure Kafka -> bronze on the file cases (issue 19): a broker started with
#                scripts/kafka.sh, the case's records produced into a topic with `medallion gen`,
#                our `run ingest` (landing.kind kafka) beside Spark's Kafka source (cases up to
#                1M records; its jars fetched from Maven Central into the same cache). On by
#                default in a full run when the broker can be installed (java, mvn), off in --quick.
#   --no-kafka   no Kafka stage
#   --join       also measure the stream-stream join (issue 18): the same 1M events in micro-batch
#                files through our join operator (bench/cmd/joinbench) and Spark's stream-stream
#                join (bench/spark_join.py). On by default in a full run (Spark's side costs about
#                100 CPU seconds: under 2 minutes on 2 quiet cores, 5 at load average 17-24), off
#                in --quick.
#   --no-join    no join stage
#   --stages     only these stages and their anchors (default: all): ingest, stream, merge-late,
#                replay-24h (or replay), end-to-end (or e2e), ingest-backlog, stream-backlog,
#                kafka-ingest (or kafka), join. The stages a selected one reads from run too (replay
#                needs ingest and stream), later ones and other anchors do not; e.g.
#                `bench/run.sh --quick --no-micro --stages replay` is replay beside polars.
#
# Defaults: --sizes 1M,10M --keys 1k,100k --backends file,minio. The anchors use the interop
# virtualenv and Spark's Delta jars (scripts/interop.sh setup, cached); MinIO is started with
# scripts/minio.sh and always stopped. Scratch data goes to ${BENCH_WORK:-a temp dir}, removed
# at the end unless BENCH_KEEP=1.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

sizes="1M,10M" keys="1k,100k" backends="file,minio" micro=true benchtime=300ms benchskip="" anchors=true kafka=auto join=auto stages=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sizes) sizes="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --quick) sizes="1M" keys="1k" backends="file" benchtime=100ms benchskip=BenchmarkStreamMemory
      [[ "$kafka" == auto ]] && kafka=false; [[ "$join" == auto ]] && join=false; shift ;;
    --kafka) kafka=true; shift ;;
    --no-kafka) kafka=false; shift ;;
    --join) join=true; shift ;;
    --no-join) join=false; shift ;;
    --no-micro) micro=false; shift ;;
    --no-anchors) anchors=false; shift ;;
    --stages) stages="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: bench/run.sh [--sizes 1M,10M] [--keys 1k,100k] [--backends file,minio] [--quick] [--no-micro] [--no-anchors] [--kafka|--no-kafka] [--join|--no-join] [--stages ingest,replay-24h,...]" >&2; exit 2 ;;
  esac
done

log() { echo "bench/run.sh: $*" >&2; }

bin="$(mktemp -d "${TMPDIR:-/tmp}/medallion-bench-bin.XXXXXX")"
work="${BENCH_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/medallion-bench-work.XXXXXX")}"
minio_started=false kafka_started=false
cleanup() {
  if $minio_started; then scripts/minio.sh stop || true; fi
  if $kafka_started; then scripts/kafka.sh stop || true; fi
  rm -rf "$bin"
  if [[ "${BENCH_KEEP:-0}" != 1 ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

log "building medallion and benchrun"
go build -o "$bin/medallion" ./cmd/medallion
go build -o "$bin/benchrun" ./bench/cmd/benchrun
go build -o "$bin/benchprof" ./bench/cmd/benchprof
go build -o "$bin/joinbench" ./bench/cmd/joinbench
# A stage filter without the join stage runs no join.
if [[ "$join" == auto && -n "$stages" && ",$stages," != *",join,"* ]]; then join=false; fi
[[ "$join" == auto ]] && join=true

python=""
if $anchors; then
  eval "$(scripts/interop.sh env)"
  python="$MEDALLION_INTEROP_VENV/bin/python"
fi
if [[ ",$backends," == *",minio,"* ]]; then
  # A state file of our own, so that stop stops this server and no other one on the machine.
  export MEDALLION_MINIO_STATE="${MEDALLION_MINIO_STATE:-$bin/minio.state}"
  eval "$(scripts/minio.sh start)"
  minio_started=true
fi

# Spark's Kafka source for Spark 3.5 and what it needs beyond Spark's own jars (3.5.7: the 3.5.8 of
# pyspark is not on Maven Central), pinned, into the Maven cache scripts/kafka.sh uses.
kafka_jars() {
  local cache="${MEDALLION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medallion}" jars="" a g n v f
  for a in org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7 org.apache.spark:spark-token-provider-kafka-0-10_2.12:3.5.7 \
    org.apache.kafka:kafka-clients:3.4.1 org.apache.commons:commons-pool2:2.11.1; do
    IFS=: read -r g n v <<<"$a"
    f="$cache/m2/${g//.//}/$n/$v/$n-$v.jar"
    if [[ ! -f "$f" ]]; then
      mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$cache/m2" \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get -Dartifact="$a" -Dtransitive=false >&2 || return 1
    fi
    jars+="${jars:+,}$f"
  done
  echo "$jars"
}

kafka_flags=()
# A stage filter without the Kafka stage needs no broker.
if [[ "$kafka" == auto && -n "$stages" && ",$stages," != *",kafka,"* && ",$stages," != *",kafka-ingest,"* ]]; then kafka=false; fi
if [[ "$kafka" == auto ]]; then
  if scripts/kafka.sh install; then kafka=true; else log "no Kafka broker could be installed: no Kafka stage"; kafka=false; fi
fi
if $kafka; then
  export MEDALLION_KAFKA_STATE="$bin/kafka.state"
  eval "$(scripts/kafka.sh start)"
  kafka_started=true
  kafka_flags=(--kafka --kafka-brokers "$MEDALLION_TEST_KAFKA_BROKERS")
  if $anchors; then
    if jars="$(kafka_jars)"; then kafka_flags+=(--kafka-jars "$jars"); else log "Spark's Kafka jars could not be fetched: no Spark Kafka anchor"; fi
  fi
fi

"$bin/benchrun" --medallion "$bin/medallion" --benchprof "$bin/benchprof" --python "$python" --repo "$ROOT" --work "$work" \
  --sizes "$sizes" --keys "$keys" --backends "$backends" --stages "$stages" --micro="$micro" --benchtime "$benchtime" --bench-skip "$benchskip" \
  --out bench/RESULTS.md --svg bench/results.svg \
  --command "bench/run.sh --sizes $sizes --keys $keys --backends $backends$($micro || echo ' --no-micro')$($anchors || echo ' --no-anchors')$($kafka && echo ' --kafka')$($join && echo ' --join')${stages:+ --stages $stages}${extra[*]:+ -- ${extra[*]}}" \
  --join="$join" --joinbench "$bin/joinbench" \
  "${kafka_flags[@]}" "${extra[@]}"
log "wrote bench/RESULTS.md and bench/results.svg"
