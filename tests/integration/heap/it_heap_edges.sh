#!/usr/bin/env bash
# Every allocation entry point and the awkward cases under heap profiling
# (wl_heap_edges checks what the program itself sees: alignment, contents,
# errno, results): C++ new/delete, the aligned allocators, realloc chains,
# overflows, free(NULL), blocks glibc maps, threads that exit with live
# blocks, fork, and malloc/free from the program's own signal handler while
# the profiler is inside its sampled path. The program must finish as it
# does unprofiled; the profile must read, name operator new and the signal
# handler, and hold the known live set.
#   it_heap_edges.sh preload|linked
# PUSHPROF_HEAP_RATE=256 samples most allocations, so the signal lands in
# the profiler's sampled path hundreds of times; the live set (256 blocks of
# 64 KiB, each kept with probability 1 - exp(-64 KiB/R)) within 2%, or 4.5
# sigma if wider: its variance is at most R x 16 MiB, 4.5 sigma 1.8%.
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
mode=$1
mkdir -p "$T/prof"
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
export PUSHPROF_OUTPUT="$T/prof/edges-%t.pb.gz" PUSHPROF_HEAP_RATE=256 PUSHPROF_PROFILES=cpu,heap
run_workload "$mode" wl_heap_edges
grep -qx "edges ok" "$T/out" || fail "the workload did not finish its checks: $(cat "$T/out")"
inside=$(out_value handler_in_profiler)
[ "$inside" -gt 0 ] || fail "the signal never landed in the profiler: the case was not exercised"
heap=$T/prof/edges-heap.pb.gz
[ -s "$heap" ] || fail "no heap profile"
live=$(out_value true_live)
"${CHECK[@]}" "$heap" --value inuse_space/bytes --by cum --shares "kept_site(unsigned long)" --min-attributed 0.99 \
  --expect-total "$live:2" --rate "$PUSHPROF_HEAP_RATE" >"$T/inuse.json" || fail "inuse_space: $(cat "$T/inuse.json")"
"${CHECK[@]}" "$heap" --value alloc_space/bytes --by cum \
  --expect-function '^operator new\(unsigned long\)$' \
  --expect-function '^operator new\(unsigned long, std::align_val_t\)$' \
  --expect-function '^on_alarm\(' --expect-function '^realloc_chains\(' \
  --expect-function '^aligned_family\(' --expect-function '^huge_blocks\(' \
  --expect-function '^leaver\('  >"$T/alloc.json" || fail "alloc_space: $(cat "$T/alloc.json")"
echo "pass ($mode): the handler ran inside the profiler $inside times"
