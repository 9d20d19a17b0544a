#!/usr/bin/env bash
# The linked libpushprof in a setuid program: the caller's PUSHPROF_*,
# OTEL_* and labels are ignored (secure_getenv), so pushprof_start(NULL)
# refuses with PUSHPROF_ESETUID and writes nothing, and the program's output
# and exit status are its own. The same program without the setuid bit
# profiles into PUSHPROF_OUTPUT (so the check can fail).
set -euo pipefail
B=${PUSHPROF_BUILD_DIR:?run through ctest (PUSHPROF_BUILD_DIR unset)}
BIN=$B/tests/security
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root to install a setuid copy"; exit 77; }
[ -z "${PUSHPROF_TEST_SAN_RUNTIME:-}" ] || { echo "skipped: sanitizer build (see it_sec_setuid_preload)"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }
export HOME=${HOME:-/root} GOCACHE=${GOCACHE:-/tmp/pushprof-gocache}
W=$(mktemp -d /tmp/pp-suidl.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
mkdir -m 777 "$W/out" # nobody could write here: "no profile" proves something
cp "$BIN/sec_setuid_linked" "$W/suid"
cp "$BIN/sec_setuid_linked" "$W/plain"
chown nobody "$W/suid"
chmod 4755 "$W/suid"
esetuid=-11 # PUSHPROF_ESETUID in sdk/include/pushprof.h
grep -q "PUSHPROF_ESETUID ($esetuid)" "${PUSHPROF_SOURCE_DIR:?}/sdk/include/pushprof.h" ||
  fail "PUSHPROF_ESETUID is no longer $esetuid: update this test"

rc=0
env PUSHPROF_OUTPUT="$W/out/p-%p.pb.gz" PUSHPROF_HZ=250 PUSHPROF_LABELS=k=v \
  OTEL_RESOURCE_ATTRIBUTES=a=b "$W/suid" 7 >"$W/suid.out" 2>"$W/suid.err" || rc=$?
cat "$W/suid.out" "$W/suid.err"
[ $rc -eq 7 ] || fail "setuid run: exit status $rc, want 7"
grep -qx "secure=1 start=$esetuid" "$W/suid.out" || fail "setuid run: want secure=1 start=$esetuid"
[ -z "$(find "$W/out" -type f)" ] || fail "setuid run wrote a profile: $(ls "$W/out")"
grep -q "environment is ignored" "$W/suid.err" || fail "setuid run: no line saying why profiling is off"

rc=0
env PUSHPROF_OUTPUT="$W/out/p-%p.pb.gz" PUSHPROF_HZ=250 "$W/plain" 7 >"$W/plain.out" \
  2>"$W/plain.err" || rc=$?
[ $rc -eq 7 ] || fail "control: exit status $rc, want 7"
grep -qx "secure=0 start=0" "$W/plain.out" || fail "control: want secure=0 start=0: $(cat "$W/plain.out" "$W/plain.err")"
prof=$(find "$W/out" -type f -name 'p-*.pb.gz')
[ -n "$prof" ] || fail "control: no profile written"
go tool pprof -raw "$prof" >"$W/raw.txt" 2>&1 || fail "control profile does not parse: $(head -5 "$W/raw.txt")"
grep -q "spin" "$W/raw.txt" || fail "control profile has no spin frame"
echo "ok: setuid ignores the environment (start=$esetuid, nothing written); control profiled"
