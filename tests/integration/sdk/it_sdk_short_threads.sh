#!/usr/bin/env bash
# 1000 threads of ~5 ms CPU each (50 alive at a time): no crash, a valid
# profile, and the samples land in the threads' function.
#   it_sdk_short_threads.sh preload|linked
# Expected count: a 5 ms thread at 100 Hz holds half a period. The first
# expiry is randomised within one period, so about half the threads reach an
# expiry, but the kernel checks CPU timers only at its 4 ms tick while the
# thread runs, so about 0.3 sample per thread arrives (~300 of a naive 500).
# The floor is set at 0.15 per thread: half of that, far above zero.
. "$(dirname "$0")/sdk_lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/short-%p.pb.gz"
run_workload "$mode" wl_short_threads 1000 50
[ "$(out_value threads)" = 1000 ] || fail "the workload did not run 1000 threads"
cpu=$(out_value cpu_seconds)
prof=$(the_profile)
"${CHECK[@]}" "$prof" --value samples/count --min-samples 150 \
  --shares short_thread_spin --min-attributed 0.8 >"$T/report.json"
echo "pass ($mode): cpu ${cpu}s, samples $(python3 -c "import json;print(json.load(open('$T/report.json'))['total']['samples/count'])")"
