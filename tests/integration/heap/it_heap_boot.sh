#!/usr/bin/env bash
# The interposers' bootstrap arena under a dlsym that allocates (as glibc's
# did before 2.34): wl_heap_boot defines dlsym, so each lookup of the next
# allocator allocates while that allocator is not known yet. The program
# must see those blocks work (contents, realloc, free) and finish as it does
# unprofiled; the heap profile must still hold its known live set: within
# 15%, or 4.5 sigma of its sampling error if wider. 2,000 live blocks of
# 1,000 bytes at PUSHPROF_HEAP_RATE=1024 are ~2,000 samples, a variance of at
# most R x 2 MB: 4.5 sigma is 10% (at 4096 it was 20%, wider than 15%).
#   it_heap_boot.sh preload|linked
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
mode=$1
mkdir -p "$T/prof"
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
export PUSHPROF_OUTPUT="$T/prof/boot-%t.pb.gz" PUSHPROF_HEAP_RATE=1024 PUSHPROF_PROFILES=cpu,heap
run_workload "$mode" wl_heap_boot
grep -qx "boot ok" "$T/out" || fail "the workload did not finish its checks: $(cat "$T/out")"
blocks=$(out_value boot_blocks)
[ "$blocks" -ge 9 ] || fail "dlsym allocated $blocks times, want one per next definition (9)"
heap=$T/prof/boot-heap.pb.gz
[ -s "$heap" ] || fail "no heap profile: $(cat "$T/err")"
live=$(out_value true_live)
"${CHECK[@]}" "$heap" --value inuse_space/bytes --by cum --shares "kept_site" --min-attributed 0.9 \
  --expect-total "$live:15" --rate "$PUSHPROF_HEAP_RATE" >"$T/inuse.json" || fail "inuse_space: $(cat "$T/inuse.json")"
echo "pass ($mode): $blocks blocks from the arena, the live heap as the program holds it"
