#!/usr/bin/env bash
# The SDK under stress: runs one stress workload without the profiler and
# under LD_PRELOAD at 250 Hz; stdout and exit status must be identical, and
# the workload's own profile must parse with `go tool pprof -raw`.
#   it_stress.sh CASE   (threads2000 forkstorm spawn recursion nofp blocked
#                        dlopen malloc)
# Each run is under a watchdog: a hang (over $ST_LIMIT s, default 60) dumps
# every thread's stack (gdb, if installed) of the workload and its children,
# aborts it and fails the test naming the case.
set -euo pipefail
: "${PUSHPROF_BUILD_DIR:?run through ctest (PUSHPROF_BUILD_DIR unset)}"
: "${PUSHPROF_SOURCE_DIR:?run through ctest (PUSHPROF_SOURCE_DIR unset)}"
export HOME="${HOME:-/root}" GOCACHE="${GOCACHE:-/tmp/pushprof-gocache}"
unset PUSHPROF_HZ PUSHPROF_SIGNAL PUSHPROF_SERVICE PUSHPROF_OUTPUT PUSHPROF_SOCKET \
  PUSHPROF_UPLOAD_PERIOD PUSHPROF_EXIT_TIMEOUT_MS PUSHPROF_SPOOL_DIR PUSHPROF_BACKLOG \
  OTEL_SERVICE_NAME LD_PRELOAD
case_=${1:?usage: it_stress.sh CASE}
B=$PUSHPROF_BUILD_DIR
WL=$B/tests/stress_workloads
# shellcheck source=../preload_env.sh
. "$PUSHPROF_SOURCE_DIR/tests/integration/preload_env.sh"
CHECK=(python3 "$PUSHPROF_SOURCE_DIR/tests/integration/pprof_check.py")
LIMIT=${ST_LIMIT:-60}
T=$(mktemp -d /tmp/pushprof-stress.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL [$case_]: $*" >&2; exit 1; }

# dump_stacks PID: every thread's backtrace of PID and its descendants.
dump_stacks() {
  local p
  for p in $1 $(pgrep -P "$1" || true); do
    echo "---- stacks of pid $p ($(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)) ----" >&2
    if command -v gdb >/dev/null; then
      timeout 20 gdb -nx -batch -p "$p" -ex 'thread apply all bt' 2>&1 | grep -v '^\[' >&2 || true
    else
      cat /proc/"$p"/task/*/stack 2>/dev/null >&2 || echo "(no gdb, no kernel stacks)" >&2
    fi
  done
}

# guarded TAG CMD...: runs CMD (stdout $T/TAG.out, stderr $T/TAG.err) under
# the watchdog; sets rc to its exit status.
guarded() {
  local tag=$1
  shift
  "$@" >"$T/$tag.out" 2>"$T/$tag.err" &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge $((LIMIT * 10)) ]; then
      echo "HANG [$case_]: '$*' ($tag) still running after ${LIMIT}s; stacks:" >&2
      dump_stacks "$pid"
      kill -ABRT "$pid" 2>/dev/null || true
      sleep 2
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      cat "$T/$tag.err" >&2
      fail "hung ($tag run)"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  rc=0
  wait "$pid" || rc=$?
}

args=()
check_args=()
case $case_ in
  threads2000) check_args=(--expect-function '^st_thread_spin$') ;;
  forkstorm) check_args=(--expect-function '^st_fork_parent_spin$') ;;
  spawn) check_args=(--expect-function '^st_spawn_parent_spin$') ;;
  recursion) check_args=(--expect-function '^st_(deep_spin|recurse)$') ;;
  nofp) check_args=(--expect-function '^st_nofp_hot$') ;;
  blocked)
    args=("$(kill -l PROF)")
    check_args=(--expect-function '^st_running_spin$')
    ;;
  dlopen)
    # Samples inside the library unwind back to main. (The library's own
    # frames are not checked: it is unloaded before the profile is written.)
    args=("$WL/libst_dlburn.so")
    check_args=(--expect-function '^main$')
    ;;
  malloc) check_args=(--expect-function 'st_malloc_worker') ;;
  *) fail "unknown case" ;;
esac
bin=$WL/st_$case_
[ -x "$bin" ] || fail "$bin not built"

guarded plain "$bin" "${args[@]}"
rc_plain=$rc
mkdir -p "$T/prof"
guarded prof env LD_PRELOAD="$PRELOAD" PUSHPROF_HZ=250 \
  PUSHPROF_OUTPUT="$T/prof/st-%p.pb.gz" "$bin" "${args[@]}"
rc_prof=$rc
cat "$T/prof.err" >&2
[ "$rc_plain" -eq 0 ] || fail "the workload fails even without the profiler (rc $rc_plain): $(cat "$T/plain.err")"
[ "$rc_prof" -eq "$rc_plain" ] || fail "exit status $rc_prof under the profiler, $rc_plain without"
cmp -s "$T/plain.out" "$T/prof.out" || {
  diff "$T/plain.out" "$T/prof.out" >&2 || true
  fail "stdout differs under the profiler"
}
[ -s "$T/plain.out" ] || fail "the workload printed nothing"

# The workload's own profile: the only one, or (children exec'ing /bin/true
# under the same LD_PRELOAD write theirs) the one named by its pid.
pid=$(sed -n 's/^pid=//p' "$T/prof.err" | head -1)
if [ -n "$pid" ]; then
  prof=$T/prof/st-$pid.pb.gz
else
  files=("$T"/prof/*.pb.gz)
  [ "${#files[@]}" -eq 1 ] || fail "expected one profile, found: $(ls "$T/prof")"
  prof=${files[0]}
fi
[ -s "$prof" ] || fail "no profile $prof (found: $(ls "$T/prof"))"
ls "$T"/prof/*.tmp.* >/dev/null 2>&1 && fail "a temporary file was left behind"
# Every other profile (exec'd children) must parse too.
for f in "$T"/prof/*.pb.gz; do
  [ "$f" = "$prof" ] && continue
  "${CHECK[@]}" "$f" >/dev/null || fail "child profile $f does not parse"
done
"${CHECK[@]}" "$prof" --value samples/count --min-samples 10 "${check_args[@]}" >"$T/report.json" ||
  fail "the profile check failed"
echo "pass [$case_]: $(cat "$T/prof.out" | tr '\n' ' ')samples $(python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print(r['total']['samples/count'], 'functions', len(r['functions']))" "$T/report.json"), profiles $(ls "$T/prof" | wc -l)"
