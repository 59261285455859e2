# What scripts/minio.sh and scripts/kafka.sh share; sourced by them, not run. A server started
# by either keeps its pid, port and scratch directory as key=value lines in the file $STATE.

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

state_get() { sed -n "s/^$1=//p" "$STATE"; }

# stop_server DIR_KEY: stops the server $STATE names and deletes its scratch directory (the
# state's DIR_KEY) and the state file. SIGTERM first, SIGKILL after 5 s: a clean shutdown takes a
# few seconds and the data is deleted anyway, so it is not worth waiting longer.
stop_server() {
  [[ -f "$STATE" ]] || return 0
  local pid dir
  pid=$(state_get pid)
  dir=$(state_get "$1")
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  [[ -n "$dir" && -d "$dir" ]] && rm -rf "$dir"
  rm -f "$STATE"
}

# run_with_server NAME STATE_VAR [--] CMD...: starts the server (the caller's `start`) with a
# state file of its own, exported as STATE_VAR so that a nested `stop` finds it, runs CMD with
# the environment `start` prints, and always stops the server (the caller's `stop`). Returns
# CMD's exit code.
run_with_server() {
  local name=$1 var=$2
  shift 2
  [[ "${1:-}" == "--" ]] && shift
  [[ $# -gt 0 ]] || { log "run needs a command"; exit 2; }
  STATE=$(mktemp "${TMPDIR:-/tmp}/medallion-$name-state.XXXXXX")
  export "$var=$STATE"
  trap stop EXIT INT TERM
  eval "$(start)"
  local rc=0
  "$@" || rc=$?
  return "$rc"
}
