#!/usr/bin/env bash
# The preload library does nothing in a setuid program: no thread, no
# SIGPROF handler, no profile written, no PUSHPROF_* variable read, not one
# byte on stderr, output and exit status unchanged.
#
# The probe is installed setuid nobody and run by root, so the kernel sets
# AT_SECURE (the probe prints it: the test fails if it is not 1). glibc
# already drops an LD_PRELOAD path with a slash in such a program, so the
# library is brought in two ways glibc lets through: as a DT_NEEDED library
# of the probe, and dlopen()ed by the probe. Both load the real library and
# run its constructor under AT_SECURE: only its own guard keeps it off. The
# same probes without the setuid bit are profiled (so the checks can fail).
set -euo pipefail
B=${PUSHPROF_BUILD_DIR:?run through ctest (PUSHPROF_BUILD_DIR unset)}
PRELOAD=$B/sdk/libpushprof_preload.so
BIN=$B/tests/security
unset PUSHPROF_HZ PUSHPROF_SIGNAL PUSHPROF_SERVICE PUSHPROF_OUTPUT PUSHPROF_SOCKET \
  PUSHPROF_UPLOAD_PERIOD PUSHPROF_EXIT_TIMEOUT_MS PUSHPROF_SPOOL_DIR PUSHPROF_BACKLOG \
  PUSHPROF_LABELS OTEL_SERVICE_NAME LD_PRELOAD
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root to install a setuid copy"; exit 77; }
# A setuid copy of an instrumented probe cannot read the sanitizer's options
# and LeakSanitizer dies in it (tests/ci.sh): the normal build runs this.
[ -z "${PUSHPROF_TEST_SAN_RUNTIME:-}" ] || { echo "skipped: sanitizer build"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }
W=$(mktemp -d /tmp/pp-suid.XXXXXX)
trap 'rm -rf "$W"' EXIT
# nobody must be able to write the output directory, or "no profile" would
# prove nothing.
chmod 755 "$W"
mkdir -m 777 "$W/out"
cp "$BIN/sec_setuid_probe_needed" "$W/needed"
cp "$BIN/sec_setuid_probe" "$W/plain"
chown nobody "$W/needed" "$W/plain"
chmod 4755 "$W/needed" "$W/plain"

# run NAME ENV... -- CMD...: stdout in $W/NAME.out, stderr in $W/NAME.err, $rc.
run() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rc=0
  env "${envs[@]}" "$@" >"$W/$name.out" 2>"$W/$name.err" || rc=$?
}
val() { sed -n "s/.*\b$2=\([0-9-]*\).*/\1/p" "$W/$1.out" | head -1; }
out_files() { find "$W/out" -type f | wc -l; }
profile_env=(PUSHPROF_OUTPUT="$W/out/p-%p.pb.gz" PUSHPROF_HZ=250 PUSHPROF_LABELS=k=v)

# Secure runs: ways 1 (DT_NEEDED) and 2 (dlopen) load the library; 3 is plain
# LD_PRELOAD (glibc's filter, reported), each with a valid profiling setup
# and once with an invalid PUSHPROF_HZ, which a library reading the
# environment would complain about on stderr.
for envset in valid invalid; do
  envs=("${profile_env[@]}")
  [ $envset = invalid ] && envs+=(PUSHPROF_HZ=5000 PUSHPROF_SIGNAL=BOGUS)
  for way in needed dlopen ldpreload; do
    name=$way-$envset
    case $way in
      needed) run "$name" "${envs[@]}" -- "$W/needed" 7 ;;
      dlopen) run "$name" "${envs[@]}" -- "$W/plain" 7 --dlopen "$PRELOAD" ;;
      ldpreload) run "$name" "${envs[@]}" LD_PRELOAD="$PRELOAD" -- "$W/plain" 7 ;;
    esac
    [ "$rc" -eq 7 ] || fail "$name: exit status $rc, want 7; stderr: $(cat "$W/$name.err")"
    [ "$(val "$name" secure)" = 1 ] || fail "$name: AT_SECURE not set in the setuid probe: $(cat "$W/$name.out")"
    [ "$(val "$name" euid)" = "$(id -u nobody)" ] || fail "$name: euid is not nobody's: $(cat "$W/$name.out")"
    if [ $way != ldpreload ]; then
      [ "$(val "$name" loaded)" = 1 ] || fail "$name: the library was not loaded, nothing tested: $(cat "$W/$name.out")"
    fi
    [ "$(val "$name" threads)" = 1 ] || fail "$name: $(val "$name" threads) threads, want 1 (an SDK thread started)"
    [ "$(val "$name" sigprof)" = 0 ] || fail "$name: a SIGPROF handler was installed"
    [ "$(tail -1 "$W/$name.out")" = "probe done" ] && [ "$(wc -l <"$W/$name.out")" -eq 4 ] ||
      fail "$name: output changed: $(cat "$W/$name.out")"
    [ ! -s "$W/$name.err" ] || fail "$name: the library wrote to stderr: $(cat "$W/$name.err")"
    [ "$(out_files)" -eq 0 ] || fail "$name: a file was written: $(find "$W/out" -type f)"
    echo "ok $name: secure=1 loaded=$(val "$name" loaded) threads=1 sigprof=0, no output, silent"
  done
done

# Controls: the same probes without the setuid bit are profiled, so every
# check above can fail.
chmod 0755 "$W/needed" "$W/plain"
for way in needed dlopen; do
  name=$way-control
  rm -f "$W"/out/*
  case $way in
    needed) run "$name" "${profile_env[@]}" -- "$W/needed" 7 ;;
    dlopen) run "$name" "${profile_env[@]}" -- "$W/plain" 7 --dlopen "$PRELOAD" ;;
  esac
  [ "$rc" -eq 7 ] || fail "$name: exit status $rc: $(cat "$W/$name.err")"
  [ "$(val "$name" secure)" = 0 ] || fail "$name: AT_SECURE set without setuid"
  [ "$(val "$name" threads)" -ge 2 ] || fail "$name: no SDK thread in the control run"
  [ "$(val "$name" sigprof)" = 1 ] || fail "$name: no SIGPROF handler in the control run"
  [ "$(out_files)" -eq 1 ] || fail "$name: no profile in the control run ($(cat "$W/$name.err"))"
  echo "ok $name: secure=0 threads=$(val "$name" threads) sigprof=1, one profile"
done
echo "ok: the preload library stays off and silent under AT_SECURE"
