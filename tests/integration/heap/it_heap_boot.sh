#!/usr/bin/env bash
# The interposers' bootstrap arena under a dlsym that allocates (as glibc's
# did before 2.34): wl_heap_boot defines dlsym, so each lookup of the next
# allocator allocates while that allocator is not known yet. The program
# must see those blocks work (contents, realloc, free) and finish as it does
# unprofiled; the heap profile must still hold its known live set.
#   it_heap_boot.sh preload|linked
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
mode=$1
mkdir -p "$T/prof"
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
export PUSHPROF_OUTPUT="$T/prof/boot-%t.pb.gz" PUSHPROF_HEAP_RATE=4096 PUSHPROF_PROFILES=cpu,heap
run_workload "$mode" wl_heap_boot
grep -qx "boot ok" "$T/out" || fail "the workload did not finish its checks: $(cat "$T/out")"
blocks=$(out_value boot_blocks)
[ "$blocks" -ge 9 ] || fail "dlsym allocated $blocks times, want one per next definition (9)"
heap=$T/prof/boot-heap.pb.gz
[ -s "$heap" ] || fail "no heap profile: $(cat "$T/err")"
live=$(out_value true_live)
"${CHECK[@]}" "$heap" --value inuse_space/bytes --by cum --shares "kept_site" --min-attributed 0.9 \
  --expect-total "$live:15" >"$T/inuse.json" || fail "inuse_space: $(cat "$T/inuse.json")"
echo "pass ($mode): $blocks blocks from the arena, the live heap as the program holds it"
