#!/usr/bin/env bash
# CPU, off-CPU and lock profiles of one process through the real sidecar:
# the SDK pushes each type with its profile_type, and although off-CPU and
# lock profiles have the same sample types the sidecar batches the three
# apart (the names carry -offcpu- and -lock-); go tool pprof -raw reads
# each, and the off-CPU batch holds the workload's waiting sites.
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_WAIT
start_sidecar wait --batch-window 1
export PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=waitsvc PUSHPROF_PROFILES=cpu,offcpu,lock \
  PUSHPROF_EXIT_TIMEOUT_MS=10000
run_workload preload wl_wait_sites 1
wait_files "$OUT" 3 30 || fail "want cpu, offcpu and lock batches: $(find "$OUT")"
mapfile -t off < <(find "$OUT" -name '*-offcpu-*.pb.gz')
mapfile -t lock < <(find "$OUT" -name '*-lock-*.pb.gz')
[ "${#off[@]}" -eq 1 ] || fail "want one off-CPU batch: $(find "$OUT" -name '*.pb.gz')"
[ "${#lock[@]}" -eq 1 ] || fail "want one lock batch: $(find "$OUT" -name '*.pb.gz')"
"${CHECK[@]}" "${off[0]}" --value delay/nanoseconds --expect-function '^site_sleep$' \
  --expect-function '^site_pipe$' --expect-function '^site_lock$' >"$T/off.json" ||
  fail "off-CPU batch: $(cat "$T/off.json")"
"${CHECK[@]}" "${lock[0]}" --value delay/nanoseconds --expect-function '^site_lock$' \
  --forbid-function '^site_sleep$' >"$T/lock.json" || fail "lock batch: $(cat "$T/lock.json")"
"$B/views/pushprof" top "${off[0]}" >"$T/top.txt" || fail "pushprof top failed on the off-CPU batch"
grep -q "site_sleep" "$T/top.txt" || fail "pushprof top does not show site_sleep: $(cat "$T/top.txt")"
stop_sidecar
echo "pass: $(basename "${off[0]}") and $(basename "${lock[0]}")"
