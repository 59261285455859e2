#!/usr/bin/env bash
# Installs, starts and stops the pinned Apache Kafka broker that the Kafka tests run against.
#
#   scripts/kafka.sh install            fetch the pinned broker jars from Maven Central and archive
#                                       the broker's classes for faster starts (both cached)
#   eval "$(scripts/kafka.sh start)"    start a single-node KRaft broker on free loopback ports;
#                                       prints the env to export (MEDALLION_TEST_KAFKA_BROKERS)
#   scripts/kafka.sh restart            kill -9 the broker of `start` and start it again on the
#                                       same ports and data (the broker-restart test uses it)
#   scripts/kafka.sh stop               stop the broker started by `start` and delete its data
#   scripts/kafka.sh run -- CMD...      start, run CMD with the env set, always stop; CMD's exit code
#   scripts/kafka.sh cluster-ids [N]    print N cluster ids as `start` makes them (its test uses it)
#
# The broker is `org.apache.kafka:kafka_2.13` (the server and its storage tool) plus
# `log4j-slf4j-impl` (without a binding the broker logs nothing), resolved with
# `mvn dependency:copy-dependencies` from a generated pom into $MEDALLION_CACHE/kafka-<version>
# (46 jars, 45 MB; under a minute the first time), marked complete by a stamp file written last.
# It runs on the JDK the interop suite already needs (Java 17), with a small serial-GC heap: that
# starts fastest and uses least memory on a loaded 2-core machine (../shared/research/kafka-check.md).
# `install` also writes a class-data sharing archive of the broker's classes ($HOME_DIR/broker.jsa:
# one broker start records the classes it loads, `java -Xshare:dump` archives them, about 11 CPU s
# once): every JVM the script starts then maps the classes instead of loading, verifying and
# linking them from the jars, 2.6 -> 1.5 CPU s a broker start. A JVM that cannot use the archive
# (another JDK) says so in its log and starts without it.
#
# Under CI=true a missing tool (java, mvn, python3) or a failed start is an error; the Go tests
# fail instead of skipping when MEDALLION_REQUIRE_KAFKA=1 or CI=true and no broker is set.
set -euo pipefail

KAFKA_VERSION="4.1.2"
LOG4J_SLF4J_VERSION="2.25.3"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
CACHE="${MEDALLION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medallion}"
HOME_DIR="$CACHE/kafka-$KAFKA_VERSION"
LIBS="$HOME_DIR/libs"
STATE="${MEDALLION_KAFKA_STATE:-${TMPDIR:-/tmp}/medallion-kafka.state}"
READY_TIMEOUT="${MEDALLION_KAFKA_READY_TIMEOUT:-90}"
ARCHIVE="$HOME_DIR/broker.jsa"
EXTRA_JAVA_OPTS="" # make_archive's class list

log() { echo "kafka.sh: $*" >&2; }
# shellcheck source=scripts/server.sh
. "$(dirname "${BASH_SOURCE[0]}")/server.sh"
die() { log "$*"; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "missing dependency: $1 ($2)"; }

install() {
  install_jars
  [[ -f "$ARCHIVE" ]] || make_archive
}

install_jars() {
  if [[ -f "$HOME_DIR/.complete" ]]; then
    return 0
  fi
  need mvn "Maven, to fetch the Kafka broker jars from Maven Central"
  need java "Java 17 or later, to run the broker"
  log "fetching kafka_2.13:$KAFKA_VERSION and its dependencies into $LIBS (under a minute once)"
  rm -rf "$HOME_DIR"
  mkdir -p "$HOME_DIR/pom"
  cat >"$HOME_DIR/pom/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>medallion.test</groupId><artifactId>kafka-broker-libs</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_SLF4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  (cd "$HOME_DIR/pom" && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" \
    "$DEP_PLUGIN:copy-dependencies" -DincludeScope=runtime -DoutputDirectory="$LIBS") >&2 \
    || die "mvn could not fetch the broker jars"
  [[ -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "install failed: $LIBS/kafka_2.13-$KAFKA_VERSION.jar missing"
  touch "$HOME_DIR/.complete"
}

# write_config DIR BPORT CPORT: the broker's properties and its log4j2 file in DIR.
write_config() {
  local dir="$1" bport="$2" cport="$3"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$bport,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$bport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
# After a kill -9 the restarted broker waits for its old registration to expire: keep that short.
broker.session.timeout.ms=3000
broker.heartbeat.interval.ms=500
# The active controller appends a no-op record to the metadata log every 500 ms by default, idle
# or not: a third of an idle broker's CPU (1.6 -> 1.1 CPU s a 120 s idle, side by side), for a
# check of the controller's liveness that one node with no standby does not need.
metadata.max.idle.interval.ms=0
PROPS
  cat >"$dir/log4j2.properties" <<'LOG'
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir:-.}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
LOG
}

java_opts() {
  local dir="$1"
  [[ -f "$ARCHIVE" ]] && printf '%s ' "-XX:SharedArchiveFile=$ARCHIVE"
  [[ -n "$EXTRA_JAVA_OPTS" ]] && printf '%s ' "$EXTRA_JAVA_OPTS"
  echo "-Xms256m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true" \
    "-Dlog4j2.configurationFile=$dir/log4j2.properties -Dkafka.logs.dir=$dir/logs"
}

# launch DIR: starts the broker of DIR in the background and prints its pid.
launch() {
  local dir="$1"
  mkdir -p "$dir/logs"
  # shellcheck disable=SC2046
  nohup java $(java_opts "$dir") -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
    >>"$dir/logs/stdout.log" 2>&1 </dev/null &
  echo $!
}

# wait_ready DIR PID BPORT: until the broker logs that it started (after its latest launch).
wait_ready() {
  local dir="$1" pid="$2" bport="$3" since="$4" i
  for i in $(seq 1 $((READY_TIMEOUT * 5))); do
    if [[ -f "$dir/logs/server.log" ]] && tail -c +"$since" "$dir/logs/server.log" 2>/dev/null |
      grep -q 'Kafka Server started'; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "broker exited during start-up:"; tail -n 40 "$dir/logs/stdout.log" "$dir/logs/server.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
  log "broker did not start within ${READY_TIMEOUT}s:"; tail -n 40 "$dir/logs/server.log" >&2 || true
  return 1
}

# cluster_ids N prints N new cluster ids, one a line, made here: `StorageTool random-uuid` would
# cost one more JVM start. Like Kafka's own Uuid.randomUuid, never one that starts with "-": the
# format tool would read it as an option ("argument --cluster-id/-t: expected one argument"), one
# start in 64.
cluster_ids() {
  python3 - "$1" <<'PY'
import base64, sys, uuid
for _ in range(int(sys.argv[1])):
    cid = "-"
    while cid.startswith("-"):
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    print(cid)
PY
}

# make_archive writes $ARCHIVE: a broker started and stopped once lists the classes it loaded
# (in the order loaded; a list cut short by the stop still archives), `java -Xshare:dump`
# archives them. Written under a temporary name and renamed: a half-written archive is never used.
make_archive() {
  # Per-process names: two installs at once each write their own and rename it whole.
  local list="$HOME_DIR/broker.classlist.$$" tmp="$ARCHIVE.$$.tmp" saved="$STATE" rc=0
  log "archiving the broker's classes into $ARCHIVE (once, about 11 CPU s)"
  rm -f "$list" "$tmp"
  STATE=$(mktemp "${TMPDIR:-/tmp}/medallion-kafka-state.XXXXXX")
  # In a subshell: a start that fails exits it, not install. A broker that does not start
  # leaves no archive, and the tests then start theirs without one.
  (EXTRA_JAVA_OPTS="-XX:DumpLoadedClassList=$list" && start >/dev/null) || rc=$?
  stop
  STATE="$saved"
  [[ $rc -eq 0 && -s "$list" ]] || { log "no class list: no archive (the broker starts without one)"; return 0; }
  if java -Xshare:dump -XX:SharedClassListFile="$list" -XX:SharedArchiveFile="$tmp" \
    -cp "$LIBS/*" >"$HOME_DIR/archive.log" 2>&1; then
    mv -f "$tmp" "$ARCHIVE"
  else
    log "java -Xshare:dump failed (see $HOME_DIR/archive.log): the broker starts without an archive"
    rm -f "$tmp"
  fi
  rm -f "$list"
}

start() {
  install_jars
  need java "Java 17 or later, to run the broker"
  need python3 "to choose free ports and make the cluster id"
  local dir bport cport cid pid
  dir=$(mktemp -d "${TMPDIR:-/tmp}/medallion-kafka.XXXXXX")
  bport=$(free_port)
  cport=$(free_port)
  while [[ "$cport" == "$bport" ]]; do cport=$(free_port); done
  write_config "$dir" "$bport" "$cport"
  cid=$(cluster_ids 1)
  mkdir -p "$dir/logs"
  # shellcheck disable=SC2046
  java $(java_opts "$dir") -cp "$LIBS/*" kafka.tools.StorageTool format -t "$cid" \
    -c "$dir/server.properties" >"$dir/logs/format.log" 2>&1 ||
    { cat "$dir/logs/format.log" >&2; rm -rf "$dir"; die "formatting the broker's storage failed"; }
  pid=$(launch "$dir")
  if ! wait_ready "$dir" "$pid" "$bport" 1; then
    kill -9 "$pid" 2>/dev/null || true
    rm -rf "$dir"
    exit 1
  fi
  printf 'pid=%s\nport=%s\ndir=%s\n' "$pid" "$bport" "$dir" >"$STATE"
  cat <<ENV
export MEDALLION_TEST_KAFKA_BROKERS=127.0.0.1:$bport
export MEDALLION_KAFKA_STATE=$STATE
ENV
  log "Kafka $KAFKA_VERSION listening on 127.0.0.1:$bport (pid $pid, dir $dir)"
}

restart() {
  [[ -f "$STATE" ]] || die "no broker state in $STATE: start one first"
  local pid dir bport since
  pid=$(state_get pid)
  dir=$(state_get dir)
  bport=$(state_get port)
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  since=$(($(stat -c %s "$dir/logs/server.log" 2>/dev/null || echo 0) + 1))
  pid=$(launch "$dir")
  wait_ready "$dir" "$pid" "$bport" "$since" || { kill -9 "$pid" 2>/dev/null || true; exit 1; }
  printf 'pid=%s\nport=%s\ndir=%s\n' "$pid" "$bport" "$dir" >"$STATE"
  log "Kafka restarted on 127.0.0.1:$bport (pid $pid)"
}

stop() { stop_server dir; }

run() { run_with_server kafka MEDALLION_KAFKA_STATE "$@"; }

case "${1:-}" in
  install) install ;;
  start) start ;;
  restart) restart ;;
  stop) stop ;;
  cluster-ids) cluster_ids "${2:-1}" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 install|start|restart|stop|cluster-ids [N]|run -- CMD..." >&2; exit 2 ;;
esac
