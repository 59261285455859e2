#!/usr/bin/env bash
# Regenerates bench/RESULTS.md and bench/results.svg: medallion's stages side by side with Spark
# Structured Streaming and delta-rs on the same workload, in one run on this machine; on the file
# backend also the job `medallion export spark` prints, run over medallion's bronze keeping the
# promise and with --plain (Spark's own aggregation): the Notes give what the promise costs.
#
#   bench/run.sh [--sizes 1M,10M,50M] [--keys 1k,100k] [--backends file,minio] [--quick] [--no-micro]
#                [--no-anchors] [-- extra benchrun flags]
#
#   --quick      1M events, 1k keys, file backend, short microbenchmarks without the long
#                BenchmarkStreamMemory: a few minutes on a quiet machine
#   --no-micro   skip the go test -bench microbenchmarks
#   --no-anchors medallion only (no Spark, no delta-rs)
#
# Defaults: --sizes 1M,10M --keys 1k,100k --backends file,minio. The anchors use the interop
# virtualenv and Spark's Delta jars (scripts/interop.sh setup, cached); MinIO is started with
# scripts/minio.sh and always stopped. Scratch data goes to ${BENCH_WORK:-a temp dir}, removed
# at the end unless BENCH_KEEP=1.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

sizes="1M,10M" keys="1k,100k" backends="file,minio" micro=true benchtime=300ms benchskip="" anchors=true
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sizes) sizes="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --quick) sizes="1M" keys="1k" backends="file" benchtime=100ms benchskip=BenchmarkStreamMemory; shift ;;
    --no-micro) micro=false; shift ;;
    --no-anchors) anchors=false; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: bench/run.sh [--sizes 1M,10M] [--keys 1k,100k] [--backends file,minio] [--quick] [--no-micro] [--no-anchors]" >&2; exit 2 ;;
  esac
done

log() { echo "bench/run.sh: $*" >&2; }

bin="$(mktemp -d "${TMPDIR:-/tmp}/medallion-bench-bin.XXXXXX")"
work="${BENCH_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/medallion-bench-work.XXXXXX")}"
minio_started=false
cleanup() {
  if $minio_started; then scripts/minio.sh stop || true; fi
  rm -rf "$bin"
  if [[ "${BENCH_KEEP:-0}" != 1 ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

log "building medallion and benchrun"
go build -o "$bin/medallion" ./cmd/medallion
go build -o "$bin/benchrun" ./bench/cmd/benchrun
go build -o "$bin/benchprof" ./bench/cmd/benchprof

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

"$bin/benchrun" --medallion "$bin/medallion" --benchprof "$bin/benchprof" --python "$python" --repo "$ROOT" --work "$work" \
  --sizes "$sizes" --keys "$keys" --backends "$backends" --micro="$micro" --benchtime "$benchtime" --bench-skip "$benchskip" \
  --out bench/RESULTS.md --svg bench/results.svg \
  --command "bench/run.sh --sizes $sizes --keys $keys --backends $backends$($micro || echo ' --no-micro')$($anchors || echo ' --no-anchors')${extra[*]:+ -- ${extra[*]}}" \
  "${extra[@]}"
log "wrote bench/RESULTS.md and bench/results.svg"
