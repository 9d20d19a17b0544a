# Shared helpers for the sidecar integration tests (sourced, not run).
# Every test gets its own mktemp directory (socket, spool, output) and an
# ephemeral metrics port, so tests run in parallel.
set -euo pipefail
B=${PUSHPROF_BUILD_DIR:?set PUSHPROF_BUILD_DIR (ctest does)}
S=${PUSHPROF_SOURCE_DIR:?set PUSHPROF_SOURCE_DIR (ctest does)}
SIDECAR=$B/sidecar/pushprof-sidecar
CLI=$B/views/pushprof
GEN=$B/tests/gen_pprof
RAW="python3 $S/tests/integration/sidecar/rawclient.py"
export HOME=${HOME:-/root} GOCACHE=${GOCACHE:-/tmp/pushprof-gocache}
W=$(mktemp -d /tmp/pp-sc.XXXXXX)
SOCK=$W/s.sock
OUT=$W/out
SC_PID=
METRICS_PORT=
SC_LOG=

on_exit() {
  local rc=$?
  if [ -n "$SC_PID" ] && kill -0 "$SC_PID" 2>/dev/null; then
    kill -9 "$SC_PID" 2>/dev/null || true
    wait "$SC_PID" 2>/dev/null || true
  fi
  # it_sidecar_durability may leave its spool immutable (chattr +i) on a failure.
  chattr -i "$W/spool" 2>/dev/null || true
  # Kept for it_sec_log_scan, pass or fail (tests/integration/run_logged.sh).
  if [ -n "${PUSHPROF_TEST_LOG_DIR:-}" ] && [ -n "${PUSHPROF_TEST_NAME:-}" ]; then
    mkdir -p "$PUSHPROF_TEST_LOG_DIR/$PUSHPROF_TEST_NAME" &&
      cp "$W"/sidecar*.log "$PUSHPROF_TEST_LOG_DIR/$PUSHPROF_TEST_NAME/" 2>/dev/null || true
  fi
  if [ $rc -ne 0 ]; then
    echo "--- sidecar logs ($W) ---" >&2
    for f in "$W"/sidecar*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -40 "$f" >&2; }; done
  else
    rm -rf "$W"
  fi
}
trap on_exit EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# start_sidecar LOGNAME [extra flags...]: starts it on $SOCK with the spool in
# $W/spool and file:// export to $OUT (unless the flags name their own
# --export targets), waits until it accepts pushes.
start_sidecar() {
  local name=$1 a export=(--export "file://$OUT")
  shift
  for a in "$@"; do
    case $a in --export | --export=*) export=() ;; esac
  done
  SC_LOG=$W/sidecar-$name.log
  "$SIDECAR" --socket "$SOCK" --spool "$W/spool" "${export[@]}" --node-name testnode \
    --metrics-addr 127.0.0.1:0 --log-level debug "$@" 2>"$SC_LOG" &
  SC_PID=$!
  for _ in $(seq 200); do
    if grep -q 'msg="sidecar started"' "$SC_LOG" 2>/dev/null; then
      METRICS_PORT=$(sed -n 's/.*msg="metrics listening".* port=\([0-9]*\).*/\1/p' "$SC_LOG" | tail -1)
      [ -n "$METRICS_PORT" ] || fail "no metrics port in $SC_LOG"
      return 0
    fi
    kill -0 "$SC_PID" 2>/dev/null || { cat "$SC_LOG" >&2; fail "sidecar exited at start"; }
    sleep 0.05
  done
  fail "sidecar did not start within 10 s"
}

# stop_sidecar: SIGTERM, expects exit status 0.
stop_sidecar() {
  kill -TERM "$SC_PID"
  local rc=0
  wait "$SC_PID" || rc=$?
  SC_PID=
  [ "$rc" -eq 0 ] || fail "sidecar exited $rc after SIGTERM"
}

kill9_sidecar() {
  kill -9 "$SC_PID"
  wait "$SC_PID" 2>/dev/null || true
  SC_PID=
}

metrics() { curl -sf "http://127.0.0.1:$METRICS_PORT/metrics"; }

# metric 'name{labels}' -> its value (0 when absent).
metric() {
  metrics | awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? 0 : v) }'
}

rejected() { metric "pushprof_pushes_rejected_total{reason=\"$1\"}"; }

# pprof_totals FILE...: "<sum col1> <sum col2>" over the samples of each
# profile, as parsed by go tool pprof -raw (fails if pprof rejects a file).
pprof_totals() {
  local f a=0 c=0 t
  for f in "$@"; do
    t=$(go tool pprof -raw "$f" 2>"$W/pprof.err" | python3 -c '
import re, sys
inside = False
n = c = 0
for line in sys.stdin:
    if line.startswith("Samples:"):
        inside = True
        continue
    if line.startswith("Locations"):
        break
    m = re.match(r"^\s+(\d+)\s+(\d+):", line)
    if inside and m:
        n += int(m.group(1)); c += int(m.group(2))
print(n, c)') || fail "go tool pprof -raw rejected $f: $(cat "$W/pprof.err")"
    [ "$t" != "0 0" ] || fail "go tool pprof -raw found no samples in $f: $(head -5 "$W/pprof.err")"
    a=$((a + ${t% *}))
    c=$((c + ${t#* }))
  done
  echo "$a $c"
}

# wait_for_exports SERVICE_DIR_GLOB COUNT_CMD: waits until find lists >= N files.
wait_files() { # wait_files DIR N SECONDS
  local dir=$1 n=$2 secs=$3 i
  for ((i = 0; i < secs * 10; i++)); do
    [ "$(find "$dir" -name '*.pb.gz' 2>/dev/null | wc -l)" -ge "$n" ] && return 0
    sleep 0.1
  done
  return 1
}

# The request logs of the HTTP stand-ins (Pyroscope, OTLP): one JSON object
# per line with at least "status" and "t" (arrival, seconds).
# req_statuses FILE: the statuses in order, space-separated.
req_statuses() {
  python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["status"]) for l in open(sys.argv[1])))' "$1"
}
# req_gap_ms FILE I J: milliseconds between requests I and J (0-based).
req_gap_ms() {
  python3 -c 'import json, sys; r = [json.loads(l) for l in open(sys.argv[1])]; print(int((r[int(sys.argv[3])]["t"] - r[int(sys.argv[2])]["t"]) * 1000))' "$1" "$2" "$3"
}
# wait_count WHAT N SECONDS CMD...: until CMD prints a number >= N.
wait_count() {
  local what=$1 n=$2 secs=$3 i
  shift 3
  for ((i = 0; i < secs * 10; i++)); do
    [ "$("$@")" -ge "$n" ] && return 0
    sleep 0.1
  done
  fail "$what: $("$@") within $secs s, want $n"
}
# wait_failed_reason SECONDS: until a .reason file is in the spool's failed/; prints them.
wait_failed_reason() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    ls "$W/spool/failed/"*.reason >/dev/null 2>&1 && break
    sleep 0.1
  done
  cat "$W/spool/failed/"*.reason 2>/dev/null || fail "nothing in failed/ within $1 s"
}

# wait_metric NAME VALUE SECONDS: until the metric reaches at least VALUE.
wait_metric() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    [ "$(metric "$1")" -ge "$2" ] 2>/dev/null && return 0
    sleep 0.1
  done
  fail "metric $1 did not reach $2 within $3 s (now $(metric "$1"))"
}
