#!/usr/bin/env bash
# Configuration from the environment, as a user meets it:
#  - each invalid PUSHPROF_* value: exactly one stderr line naming the
#    variable and the accepted values, no profile, exit status unchanged;
#  - neither PUSHPROF_OUTPUT nor PUSHPROF_SOCKET: one line, profiling off;
#  - an unwritable PUSHPROF_OUTPUT: one line at exit, exit status unchanged;
#  - a valid run keeps the exit status and writes a profile named by %p;
#  - fork without exec writes nothing in the child, exec gets its own profile;
#  - a setuid program is not profiled and nothing is said (when run as root).
# Both under LD_PRELOAD and linked (pushprof_start's return code too).
. "$(dirname "$0")/../lib.sh"
mkdir -p "$T/prof"

# run MODE STATUS: runs the probe; sets $rc; stdout/stderr in $T/out, $T/err.
run() {
  rc=0
  if [ "$1" = preload ]; then
    LD_PRELOAD=$PRELOAD "$WL/wl_exit_probe" "$2" 0.2 >"$T/out" 2>"$T/err" || rc=$?
  else
    "$WL/wl_exit_probe_linked" "$2" 0.2 >"$T/out" 2>"$T/err" || rc=$?
  fi
}
lines() { grep -c . "$T/err" || true; }

for mode in preload linked; do
  # var value accepted-text-that-must-appear
  while IFS='|' read -r var value accepted; do
    rm -f "$T"/prof/*
    rc=0
    env_args=(PUSHPROF_OUTPUT="$T/prof/p-%p.pb.gz" "$var=$value")
    ( export "${env_args[@]}"; run "$mode" 7; echo "$rc" >"$T/rc" )
    rc=$(cat "$T/rc")
    [ "$rc" -eq 7 ] || fail "$mode $var=$value: exit status $rc, expected 7"
    [ "$(lines)" -eq 1 ] || fail "$mode $var=$value: expected one stderr line, got: $(cat "$T/err")"
    grep -qF "$var" "$T/err" && grep -qF -- "$accepted" "$T/err" && grep -q 'profiling is off' "$T/err" ||
      fail "$mode $var=$value: the line does not name the variable and accepted values: $(cat "$T/err")"
    ls "$T"/prof/* >/dev/null 2>&1 && fail "$mode $var=$value: a profile was written"
    if [ "$mode" = linked ]; then
      grep -qx "start_rc=-6" "$T/out" || fail "linked $var=$value: start returned $(cat "$T/out"), expected PUSHPROF_ECONFIG (-6)"
    fi
    echo "ok $mode $var=$value -> $(cat "$T/err")"
  done <<'CASES'
PUSHPROF_HZ|5000|1..1000
PUSHPROF_HZ|fast|1..1000
PUSHPROF_SIGNAL|SIGKILL|SIGRTMIN+n
PUSHPROF_SIGNAL|SIGRTMIN+99|SIGRTMIN+n
PUSHPROF_OUTPUT|/tmp/x-%d.pb.gz|%p
PUSHPROF_EXIT_TIMEOUT_MS|-1|1..60000
CASES

  # Nothing to write to.
  run "$mode" 7
  [ "$rc" -eq 7 ] || fail "$mode without PUSHPROF_OUTPUT: exit status $rc"
  [ "$(lines)" -eq 1 ] && grep -q 'neither PUSHPROF_OUTPUT nor PUSHPROF_SOCKET' "$T/err" ||
    fail "$mode without PUSHPROF_OUTPUT: expected one line, got: $(cat "$T/err")"
  echo "ok $mode without PUSHPROF_OUTPUT -> $(cat "$T/err")"

  # Unwritable output: one line at exit, status unchanged.
  PUSHPROF_OUTPUT=/nonexistent-pushprof-dir/p.pb.gz run "$mode" 9
  [ "$rc" -eq 9 ] || fail "$mode unwritable output: exit status $rc, expected 9"
  [ "$(lines)" -eq 1 ] && grep -q 'cannot write the profile to /nonexistent-pushprof-dir/p.pb.gz' "$T/err" ||
    fail "$mode unwritable output: expected one line, got: $(cat "$T/err")"
  echo "ok $mode unwritable output -> $(cat "$T/err")"

  # A valid run: status kept, profile written under the pid, no stderr.
  rm -f "$T"/prof/*
  PUSHPROF_OUTPUT="$T/prof/p-%p-%%.pb.gz" run "$mode" 5
  [ "$rc" -eq 5 ] || fail "$mode valid run: exit status $rc, expected 5"
  [ "$(lines)" -eq 0 ] || fail "$mode valid run: unexpected stderr: $(cat "$T/err")"
  prof=$(ls "$T"/prof/p-[0-9]*-%.pb.gz 2>/dev/null) || fail "$mode valid run: no p-PID-%.pb.gz in $(ls "$T/prof")"
  "${CHECK[@]}" "$prof" --quiet --min-samples 1
  echo "ok $mode valid run -> $prof"
done

# fork and exec under LD_PRELOAD: bash forks a subshell (a child that exits
# without exec: it must not hang or change its status, and writes a file
# only if it was sampled, which its fraction of a period rarely is) and
# execs /bin/true (a new program: its own profile). Two profiles, bash's
# (named by its pid) and true's, each valid, and a third only if it holds
# a sample.
rm -f "$T"/prof/*
rc=0
ASAN_OPTIONS=$HOST_ASAN LD_PRELOAD=$PRELOAD PUSHPROF_OUTPUT="$T/prof/f-%p.pb.gz" \
  bash -c '( exit 0 ); /bin/true; echo "bash=$$"; exit 3' >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 3 ] || fail "fork/exec: exit status $rc, expected 3 (stderr: $(cat "$T/err"))"
[ "$(lines)" -eq 0 ] || fail "fork/exec: unexpected stderr: $(cat "$T/err")"
n=$(ls "$T"/prof/f-*.pb.gz | wc -l)
[ "$n" -eq 2 ] || [ "$n" -eq 3 ] || fail "fork/exec: expected 2 profiles (bash, true), got: $(ls "$T/prof")"
[ -e "$T/prof/f-$(out_value bash).pb.gz" ] || fail "fork/exec: no profile for bash's pid $(out_value bash)"
sampled=0
for f in "$T"/prof/f-*.pb.gz; do
  "${CHECK[@]}" "$f" --quiet --min-samples 0
  "${CHECK[@]}" "$f" --quiet --min-samples 1 2>/dev/null && sampled=$((sampled + 1))
done
[ "$n" -eq 2 ] || [ "$sampled" -gt 0 ] || fail "fork/exec: an unsampled child wrote a file: $(ls "$T/prof")"
echo "ok fork/exec -> $(ls "$T/prof" | tr '\n' ' ')"

# setuid: a copy of a program that needs libpushprof_preload.so (DT_NEEDED, so
# the loader keeps it in secure mode), owned by nobody and setuid, run by
# root: AT_SECURE is set and the constructor must refuse.
if [ "$(id -u)" -ne 0 ]; then
  echo "skipping the setuid case (needs root)"
elif [ -n "$SAN_FLAGS" ]; then
  # A setuid process cannot read its /proc/self/environ, where the sanitizer
  # runtime reads its options, and LeakSanitizer then dies (needs ptrace).
  echo "skipping the setuid case (sanitizer build; the normal build runs it)"
else
  d=$(mktemp -d /tmp/pushprof-suid.XXXXXX)
  chmod 755 "$d"
  cp "$WL/wl_exit_probe_needs_preload" "$d/probe"
  chown nobody "$d/probe"
  chmod 4755 "$d/probe"
  rc=0
  PUSHPROF_OUTPUT="$d/p-%p.pb.gz" "$d/probe" 7 0.05 >"$T/out" 2>"$T/err" || rc=$?
  grep -q 'cannot open shared object' "$T/err" && { rm -rf "$d"; fail "the loader did not find libpushprof_preload.so: $(cat "$T/err")"; }
  ls "$d"/p-* >/dev/null 2>&1 && { rm -rf "$d"; fail "setuid: a profile was written"; }
  rm -rf "$d"
  [ "$rc" -eq 7 ] || fail "setuid: exit status $rc, expected 7"
  [ "$(lines)" -eq 0 ] || fail "setuid: expected silence, got: $(cat "$T/err")"
  echo "ok setuid -> silent, not profiled"
  # The same program without the setuid bit is profiled (so the refusal above
  # is the setuid check, not a broken binary).
  rm -f "$T"/prof/*
  rc=0
  PUSHPROF_OUTPUT="$T/prof/p-%p.pb.gz" "$WL/wl_exit_probe_needs_preload" 7 0.05 >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 7 ] && ls "$T"/prof/p-*.pb.gz >/dev/null 2>&1 ||
    fail "without setuid: status $rc, profile $(ls "$T/prof"), stderr $(cat "$T/err")"
  echo "ok not setuid -> profiled"
fi
echo pass
