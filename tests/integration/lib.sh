# The integration tests' shared library, sourced by every script (and by
# the area fixtures that start a server: s3/lib_s3.sh, otlp/lib_otlp.sh,
# pyroscope/lib_pyroscope.sh, examples/ex_lib.sh, stress/st_lib.sh). It
# gives each test its own scratch directory ($W, also $T) and an ephemeral
# metrics port, so tests run in parallel; the real sidecar's helpers; the
# two ways to run an SDK workload; and how to load the SDK into a process
# in the build under test.
set -euo pipefail
: "${PUSHPROF_BUILD_DIR:?run through ctest (PUSHPROF_BUILD_DIR unset)}"
: "${PUSHPROF_SOURCE_DIR:?run through ctest (PUSHPROF_SOURCE_DIR unset)}"
B=$PUSHPROF_BUILD_DIR
S=$PUSHPROF_SOURCE_DIR
export HOME=${HOME:-/root} GOCACHE=${GOCACHE:-/tmp/pushprof-gocache}
SIDECAR=$B/sidecar/pushprof-sidecar
CLI=$B/views/pushprof
GEN=$B/tests/gen_pprof
RAW="python3 $S/tests/integration/sidecar/rawclient.py"
WL=$B/tests/sdk_workloads
CHECK=(python3 "$S/tests/integration/pprof_check.py")
# Python checkers import pprof_check (stat_bound: every statistical check).
export PYTHONPATH="$S/tests/integration${PYTHONPATH:+:$PYTHONPATH}"

# Loading the SDK into a process in the build under test (normal, ASan+UBSan
# or TSan). ctest passes the values (tests/testing.cmake); a sanitizer build
# needs its runtime preloaded ahead of the SDK in a program the build did
# not instrument.
#   PRELOAD      LD_PRELOAD value for libpushprof_preload.so
#   HEAP_LIB     libpushprof_heap.so, the allocation interposers
#   PRELOAD_HEAP LD_PRELOAD value for both (heap profiling)
#   WAIT_LIB     libpushprof_wait.so, the blocking-call interposers
#   PRELOAD_WAIT LD_PRELOAD value for the SDK and it (off-CPU, lock)
#   SAN_RUNTIME  "" (normal build) or the sanitizer runtime: LD_PRELOAD value
#                for an uninstrumented program that links or dlopens
#                libpushprof.so (python3 via ctypes, a consumer built apart)
#   SAN_FLAGS    compile and link flags for a consumer a test builds
#   HOST_ASAN    ASAN_OPTIONS for an uninstrumented host (bash, python3, xz):
#                leak checking off, their own leaks are not ours (ours are
#                checked in the workloads this build instruments)
: "${PUSHPROF_TEST_PRELOAD:?run through ctest (PUSHPROF_TEST_PRELOAD unset)}"
PRELOAD=$PUSHPROF_TEST_PRELOAD
HEAP_LIB=$B/sdk/libpushprof_heap.so
PRELOAD_HEAP=$PRELOAD:$HEAP_LIB
WAIT_LIB=$B/sdk/libpushprof_wait.so
PRELOAD_WAIT=$PRELOAD:$WAIT_LIB
SAN_RUNTIME=${PUSHPROF_TEST_SAN_RUNTIME:-}
SAN_FLAGS=${PUSHPROF_TEST_SAN_FLAGS:-}
HOST_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
# Nothing from the caller's environment may steer the SDK under test.
unset PUSHPROF_HZ PUSHPROF_SIGNAL PUSHPROF_SERVICE PUSHPROF_OUTPUT PUSHPROF_SOCKET \
  PUSHPROF_UPLOAD_PERIOD PUSHPROF_EXIT_TIMEOUT_MS PUSHPROF_SPOOL_DIR PUSHPROF_BACKLOG \
  PUSHPROF_LIBRARY PUSHPROF_PROFILES PUSHPROF_HEAP_RATE OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES \
  LD_PRELOAD

W=$(mktemp -d /tmp/pp-it.XXXXXX)
T=$W
SOCK=$W/s.sock
OUT=$W/exported # the file:// target of start_sidecar
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
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then # 77: skipped, nothing to show
    echo "--- sidecar logs ($W) ---" >&2
    for f in "$W"/sidecar*.log; do if [ -f "$f" ]; then echo "== $f" >&2; tail -40 "$f" >&2; fi; done
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
    go tool pprof -raw "$f" >"$W/raw.txt" 2>"$W/pprof.err" ||
      fail "go tool pprof -raw rejected $f: $(cat "$W/pprof.err")"
    t=$(raw_sums "$W/raw.txt")
    [ "$t" != "0 0" ] || fail "go tool pprof -raw found no samples in $f: $(head -5 "$W/pprof.err")"
    a=$((a + ${t% *}))
    c=$((c + ${t#* }))
  done
  echo "$a $c"
}

# raw_sums FILE: "<sum col1> <sum col2>" over the samples of the text
# go tool pprof -raw wrote into FILE.
raw_sums() {
  python3 - "$1" <<'PY'
import re, sys
inside = False
n = c = 0
for line in open(sys.argv[1]):
    if line.startswith("Samples:"):
        inside = True
        continue
    if line.startswith("Locations"):
        break
    m = re.match(r"^\s+(\d+)\s+(\d+):", line)
    if inside and m:
        n += int(m.group(1)); c += int(m.group(2))
print(n, c)
PY
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

# start_server DIR WHAT CMD...: runs the stand-in CMD --out DIR --port-file
# DIR/port in the background (its output in DIR/stderr); SERVER_PID is its
# pid and SERVER_URL http://127.0.0.1:PORT once it has written its port,
# which must be within 10 s.
start_server() {
  local dir=$1 what=$2
  shift 2
  mkdir -p "$dir"
  rm -f "$dir/port"
  "$@" --out "$dir" --port-file "$dir/port" >"$dir/stderr" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 200); do
    [ -s "$dir/port" ] && break
    sleep 0.05
  done
  [ -s "$dir/port" ] || fail "$what did not start: $(cat "$dir/stderr")"
  SERVER_URL=http://127.0.0.1:$(cat "$dir/port")
}

# wait_spool_drained SECONDS [WHAT]: until the spool holds no file (every
# acked push exported); given WHAT, not draining in time fails the test.
wait_spool_drained() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    [ "$(metric pushprof_spool_files)" -eq 0 ] && return 0
    sleep 0.1
  done
  [ -z "${2:-}" ] || fail "$2: $(metric pushprof_spool_files) files still in the spool after $1 s"
}

# expect_metric NAME VALUE [WHAT]: the metric is VALUE now, else the test
# fails naming WHAT (default: the metric).
expect_metric() {
  local v
  v=$(metric "$1")
  [ "$v" -eq "$2" ] 2>/dev/null || fail "${3:-$1} is $v, want $2"
}

# expect_retried FILE STATUSES I J RETRIES: a stand-in's request log FILE
# holds the answers STATUSES in order, request J came at least 1.9 s after
# the 429 I (Retry-After: 2), the batch was exported after RETRIES retries,
# and nothing was sent after the success.
expect_retried() {
  local file=$1 want=$2 got
  got=$(req_statuses "$file")
  [ "$got" = "$want" ] || fail "request statuses $got, want $want"
  got=$(req_gap_ms "$file" "$3" "$4")
  [ "$got" -ge 1900 ] || fail "retried $got ms after a 429 with Retry-After: 2"
  wait_metric pushprof_batches_exported_total 1 5
  expect_metric pushprof_export_retries_total "$5" retries
  sleep 1
  got=$(wc -l <"$file")
  [ "$got" -eq "$(wc -w <<<"$want")" ] || fail "requests after success: $got"
}

# expect_refused_for_good FILE PATTERN: the batch went to failed/ with a
# reason matching PATTERN, counted as an export_permanent drop, after one
# request to the stand-in (FILE: its request log) and no retry.
expect_refused_for_good() {
  local reason
  reason=$(wait_failed_reason 10)
  echo "$reason" | grep -q "$2" || fail "failed/ reason does not match \"$2\": $reason"
  expect_metric 'pushprof_drops_total{reason="export_permanent"}' 1 "export_permanent drops"
  sleep 1
  [ "$(wc -l <"$1")" -eq 1 ] || fail "a batch refused for good was retried"
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

# run_workload MODE NAME ARGS...: runs the workload linked (NAME_linked,
# NAME_static) or plain under LD_PRELOAD; stdout to $T/out, stderr to $T/err.
# Extra environment comes from the caller (export or VAR=... before the call).
run_workload() {
  local mode=$1 name=$2
  shift 2
  local rc=0
  case $mode in
    preload) LD_PRELOAD=$PRELOAD "$WL/$name" "$@" >"$T/out" 2>"$T/err" || rc=$? ;;
    linked) "$WL/${name}_linked" "$@" >"$T/out" 2>"$T/err" || rc=$? ;;
    static) "$WL/${name}_static" "$@" >"$T/out" 2>"$T/err" || rc=$? ;;
    *) fail "unknown mode $mode" ;;
  esac
  cat "$T/err" >&2
  [ "$rc" -eq 0 ] || fail "$name ($mode) exited with $rc"
}

# expect_refusal PATTERN NAME ARGS...: runs the plain workload NAME with the
# SDK alone preloaded (the profile's own library missing) and $T/prof as
# its output; it must exit 0, print exactly one pushprof line, matching
# PATTERN, and write no profile.
expect_refusal() {
  local pattern=$1 name=$2 rc=0
  shift 2
  LD_PRELOAD=$PUSHPROF_TEST_PRELOAD "$WL/$name" "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 0 ] || fail "refused profiling changed the exit status to $rc"
  grep -q "$pattern" "$T/err" || fail "no refusal line: $(cat "$T/err")"
  [ "$(grep -c pushprof "$T/err")" -eq 1 ] || fail "want one line: $(cat "$T/err")"
  [ -z "$(ls "$T/prof")" ] || fail "a profile was written while refused: $(ls "$T/prof")"
}

# out_value KEY: a key=value line the workload printed.
out_value() { sed -n "s/^$1=//p" "$T/out" | tail -1; }

# the_profile: the single profile written into $T/prof.
the_profile() {
  local files=("$T"/prof/*.pb.gz)
  [ -e "${files[0]}" ] || fail "no profile written in $T/prof (stderr: $(cat "$T/err"))"
  [ "${#files[@]}" -eq 1 ] || fail "expected one profile, found ${files[*]}"
  ls "$T"/prof/*.tmp.* >/dev/null 2>&1 && fail "a temporary file was left behind"
  echo "${files[0]}"
}

# calc EXPR: a Python arithmetic expression's value.
calc() { python3 -c "print($1)"; }

# bound GOT WANT TOL [--n N] [--rate R] [--share] [--what NAME]: a sampled
# figure against the truth this run measured, within the stated tolerance
# or 4.5 sigma of its sampling error (pprof_check.stat_bound); prints the
# line, returns 1 if it fails.
bound() { python3 "$S/tests/integration/pprof_check.py" bound "$@"; }
