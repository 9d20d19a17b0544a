# Sourced by the stress scripts: the watchdog and the comparison of a run
# without and with the profiler. Needs $T (scratch directory), $LIMIT
# (seconds), $case_ (for messages) and fail().

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

# same_as_plain RC_PLAIN RC_PROF: the workload succeeds without the profiler
# and keeps its exit status and stdout ($T/plain.out, $T/prof.out) under it.
same_as_plain() {
  [ "$1" -eq 0 ] || fail "the workload fails even without the profiler (rc $1): $(cat "$T/plain.err")"
  [ "$2" -eq "$1" ] || fail "exit status $2 under the profiler, $1 without"
  cmp -s "$T/plain.out" "$T/prof.out" || {
    diff "$T/plain.out" "$T/prof.out" >&2 || true
    fail "stdout differs under the profiler"
  }
  [ -s "$T/plain.out" ] || fail "the workload printed nothing"
}
