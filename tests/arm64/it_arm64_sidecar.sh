#!/usr/bin/env bash
# The aarch64 SDK, sidecar and pushprof command together under qemu-user:
# the 50/30/20 workload (linked) pushes through the socket to an aarch64
# pushprof-sidecar exporting to file://, and the aarch64 `pushprof top`
# reads the export back; it must agree with go tool pprof -top on the same
# file and show `leaf` with most of the samples; func_a/b/c get the shares
# the workload measured (sk_leafmix_check.py: 3 points, or 4.5 binomial
# sigma over the samples if wider).
. "$(dirname "$0")/../integration/lib.sh"
QEMU=$(command -v qemu-aarch64) || fail "qemu-aarch64 not found (tests/deps.sh --arch arm64)"
# lib.sh runs "$SIDECAR" and "$CLI": wrappers that run them under qemu.
for p in "sidecar:$B/sidecar/pushprof-sidecar" "cli:$B/views/pushprof"; do
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "${p#*:}" >"$W/${p%%:*}"
  chmod +x "$W/${p%%:*}"
done
SIDECAR=$W/sidecar
CLI=$W/cli
start_sidecar a
rc=0
"$QEMU" -E "PUSHPROF_SOCKET=$SOCK" -E PUSHPROF_SERVICE=leafmix -E PUSHPROF_HZ=250 \
  "$WL/a64_leafmix_nofp_linked" 2 >"$T/out" 2>"$T/err" || rc=$?
cat "$T/err" >&2
[ "$rc" -eq 0 ] || fail "a64_leafmix_nofp_linked exited with $rc under qemu"
stop_sidecar
dir=$OUT/testnode/leafmix
files=$(find "$dir" -name '*.pb.gz' 2>/dev/null | sort)
[ -n "$files" ] || fail "nothing exported under $dir (sidecar log: $(tail -5 "$SC_LOG"))"
"$CLI" top --nodecount 100 "$dir" >"$W/top" || fail "pushprof top $dir"
cat "$W/top"
one=$(echo "$files" | head -1)
[ "$(echo "$files" | wc -l)" -eq 1 ] || fail "expected one exported profile: $files"
go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 "$one" >"$W/pprof-top" \
  2>"$W/pprof-err" || fail "go tool pprof -top: $(cat "$W/pprof-err")"
python3 "$S/tests/integration/views/views_check.py" top "$W/top" "$W/pprof-top" ||
  fail "pushprof top (aarch64) differs from go tool pprof -top"
python3 "$S/tests/integration/stacks/sk_leafmix_check.py" "$one" "$T/out" --tolerance 3 ||
  fail "the exported profile's stacks do not match the measured shares"
echo "pass"
