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

# shellcheck source=st_lib.sh
. "$(dirname "$0")/st_lib.sh"

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
    # Samples inside the library unwind back to main, and keep the library's
    # function name although it is unloaded before the profile is written
    # (the SDK's dlclose interposer keeps its symbols).
    args=("$WL/libst_dlburn.so")
    check_args=(--expect-function '^main$' --expect-function '^st_dlburn$')
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
same_as_plain "$rc_plain" "$rc_prof"

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
