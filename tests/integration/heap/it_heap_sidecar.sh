#!/usr/bin/env bash
# Heap and CPU profiles of a real process through the real sidecar: the SDK
# pushes one profile per type at exit, the sidecar batches them apart and
# exports a heap batch (its name says heap) that go tool pprof -raw reads
# with the workload's known sites and live heap: the estimated bytes
# allocated within 10% of what the workload counted and live within 15%, or
# 4.5 sigma of the sampling error if wider (an estimate of B bytes sampled at
# rate R has a variance of at most R x B). At PUSHPROF_HEAP_RATE=32768 the
# ~54 MB live heap is ~1,600 samples: 4.5 sigma is 11% (at 65536 it was 16%,
# wider than the 15% claimed).
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
start_sidecar heap --batch-window 1
export PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=heapsvc PUSHPROF_PROFILES=cpu,heap \
  PUSHPROF_HEAP_RATE=32768 PUSHPROF_EXIT_TIMEOUT_MS=10000
run_workload preload wl_heap_sites 512
wait_files "$OUT" 2 30 || fail "no cpu and heap batches exported: $(find "$OUT")"
mapfile -t heaps < <(find "$OUT" -name '*-heap-*.pb.gz')
[ "${#heaps[@]}" -eq 1 ] || fail "want one heap batch, got: $(find "$OUT" -name '*.pb.gz')"
total=$(out_value true_total)
live=$(out_value true_live)
"${CHECK[@]}" "${heaps[0]}" --value alloc_space/bytes --expect-total "$total:10" --rate "$PUSHPROF_HEAP_RATE" \
  --shares site_sixty,site_thirty,site_ten --min-attributed 0.99 >"$T/alloc.json" ||
  fail "alloc_space: $(cat "$T/alloc.json")"
"${CHECK[@]}" "${heaps[0]}" --value inuse_space/bytes --expect-total "$live:15" --rate "$PUSHPROF_HEAP_RATE" >"$T/inuse.json" ||
  fail "inuse_space: $(cat "$T/inuse.json")"
"$B/views/pushprof" top --value inuse_space "${heaps[0]}" >"$T/top.txt" || fail "pushprof top failed"
grep -q "site_ten" "$T/top.txt" || fail "pushprof top does not show site_ten: $(cat "$T/top.txt")"
stop_sidecar
echo "pass: heap batch $(basename "${heaps[0]}")"
