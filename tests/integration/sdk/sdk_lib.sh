# Sourced by the SDK integration scripts: paths, a scratch directory and the
# two ways to run a workload (linked, LD_PRELOAD).
set -euo pipefail
: "${PUSHPROF_BUILD_DIR:?run through ctest (PUSHPROF_BUILD_DIR unset)}"
: "${PUSHPROF_SOURCE_DIR:?run through ctest (PUSHPROF_SOURCE_DIR unset)}"
export HOME="${HOME:-/root}" GOCACHE="${GOCACHE:-/tmp/pushprof-gocache}"
B=$PUSHPROF_BUILD_DIR
WL=$B/tests/sdk_workloads
# shellcheck source=../preload_env.sh
. "$PUSHPROF_SOURCE_DIR/tests/integration/preload_env.sh"
CHECK=(python3 "$PUSHPROF_SOURCE_DIR/tests/integration/pprof_check.py")
# Nothing from the caller's environment may steer the SDK under test.
unset PUSHPROF_HZ PUSHPROF_SIGNAL PUSHPROF_SERVICE PUSHPROF_OUTPUT PUSHPROF_SOCKET \
  PUSHPROF_UPLOAD_PERIOD PUSHPROF_EXIT_TIMEOUT_MS PUSHPROF_SPOOL_DIR PUSHPROF_BACKLOG \
  OTEL_SERVICE_NAME LD_PRELOAD
T=$(mktemp -d /tmp/pushprof-it.XXXXXX)
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

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

# expected N: "N:PCT" for --expect-total from cpu_seconds x hz.
calc() { python3 -c "print($1)"; }
