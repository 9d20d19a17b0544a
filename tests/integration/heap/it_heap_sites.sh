#!/usr/bin/env bash
# Heap profiles of a workload with known sites (wl_heap_sites: 60/30/10 of
# the bytes allocated, site_ten's blocks kept live), read back with go tool
# pprof -raw: each site's alloc_space share within 3 points of what the
# workload counted, the estimated total within 10%, the live heap within 15%,
# each or within 4.5 sigma of its sampling error if that is wider
# (pprof_check's stat_bound).
#   it_heap_sites.sh preload|linked
# Preloaded it profiles the heap alone, linked CPU and heap (two files, %t).
# Tolerance: blocks (16..8191 bytes) far below the rate R are kept with
# probability size/R and weighted to R, so an estimated sum of bytes B has a
# variance of at most R x B (--rate) and a share is binomial over B/R
# samples (--share-samples). At PUSHPROF_HEAP_RATE=65536, 1 GiB allocated
# gives ~16,000 samples (a 60% share's 4.5 sigma is 1.7 points, the total's
# 3.5%) and 67 MB live ~1,000 (4.5 sigma 14% on the live heap, inside 15%).
# A sanitizer build brings its own malloc: there the start must be refused
# with one line that says why; so must a preload without libpushprof_heap.so.
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/heap-%p-%t.pb.gz" PUSHPROF_HEAP_RATE=65536
if [ "$mode" = preload ]; then export PUSHPROF_PROFILES=heap; else export PUSHPROF_PROFILES=cpu,heap; fi
if [ -n "$SAN_RUNTIME" ]; then
  rc=0
  LD_PRELOAD=$PRELOAD "$WL/wl_heap_sites" 16 >"$T/out" 2>"$T/err" || rc=$?
  [ "$mode" = linked ] && { "$WL/wl_heap_sites_linked" 16 >"$T/out" 2>"$T/err" || rc=$?; }
  grep -q "cannot profile the heap.*LD_PRELOAD" "$T/err" || fail "no refusal line: $(cat "$T/err")"
  echo "pass ($mode, sanitizer build): heap profiling refused with a reason"
  exit 0
fi
if [ "$mode" = preload ]; then # without the interposers: one line that says what to add
  expect_refusal "cannot profile the heap.*LD_PRELOAD=.*libpushprof_heap.so" wl_heap_sites 1
fi
run_workload "$mode" wl_heap_sites 1024
heap=$(ls "$T"/prof/heap-*-heap.pb.gz 2>/dev/null) || fail "no heap profile (stderr: $(cat "$T/err"))"
if [ "$mode" = linked ]; then
  ls "$T"/prof/heap-*-cpu.pb.gz >/dev/null 2>&1 || fail "no cpu profile beside the heap one"
  "${CHECK[@]}" "$(ls "$T"/prof/heap-*-cpu.pb.gz)" --quiet || fail "the cpu profile does not read"
else
  ls "$T"/prof/*-cpu.pb.gz >/dev/null 2>&1 && fail "a cpu profile with PUSHPROF_PROFILES=heap"
fi
total=$(out_value true_total)
live=$(out_value true_live)
pct() { calc "round(100 * $(out_value "true_$1") / $total, 2)"; }
rate=$PUSHPROF_HEAP_RATE
"${CHECK[@]}" "$heap" --value alloc_space/bytes --expect-total "$total:10" --rate "$rate" \
  --share-samples "$(calc "$total / $rate")" --shares site_sixty,site_thirty,site_ten --min-attributed 0.99 \
  --expect-share "site_sixty=$(pct site_sixty):3" --expect-share "site_thirty=$(pct site_thirty):3" \
  --expect-share "site_ten=$(pct site_ten):3" >"$T/alloc.json" || fail "alloc_space: $(cat "$T/alloc.json")"
"${CHECK[@]}" "$heap" --value inuse_space/bytes --expect-total "$live:15" --rate "$rate" \
  --shares site_ten --expect-share "site_ten=100:1" >"$T/inuse.json" || fail "inuse_space: $(cat "$T/inuse.json")"
got=$(python3 -c "import json; print(json.load(open('$T/inuse.json'))['total']['inuse_space/bytes'])")
echo "pass ($mode): allocated $total bytes, live $live, estimated live $got"
