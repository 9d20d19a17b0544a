#!/usr/bin/env bash
# 1000 threads of ~5 ms CPU each (50 alive at a time): no crash, a valid
# profile, and the samples land in the threads' function.
#   it_sdk_short_threads.sh preload|linked
# Expected count: a 5 ms thread at 100 Hz holds half a period. The first
# expiry is randomised within one period, so about half the threads reach an
# expiry, and the kernel notices an expired CPU timer only at its 4 ms tick
# while the thread still runs; we measured 0.29..0.35 of CPU time x hz on 2
# busy cores (load average 17). The floor is 0.1 of CPU time x hz: far from
# zero (samples from short threads do arrive), safe from that noise.
. "$(dirname "$0")/sdk_lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/short-%p.pb.gz"
run_workload "$mode" wl_short_threads 1000 50
[ "$(out_value threads)" = 1000 ] || fail "the workload did not run 1000 threads"
cpu=$(out_value cpu_seconds)
prof=$(the_profile)
"${CHECK[@]}" "$prof" --value samples/count --min-samples "$(calc "0.1*$cpu*100")" \
  --shares short_thread_spin --min-attributed 0.8 >"$T/report.json"
echo "pass ($mode): cpu ${cpu}s, samples $(python3 -c "import json;print(json.load(open('$T/report.json'))['total']['samples/count'])")"
