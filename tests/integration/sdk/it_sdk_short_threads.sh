#!/usr/bin/env bash
# 1000 threads of ~5 ms CPU each (50 alive at a time): no crash, a valid
# profile, and the samples land in the threads' function.
#   it_sdk_short_threads.sh preload|linked
# Expected count: CPU time x hz. A 5 ms thread at 100 Hz holds half a
# period; the first expiry is random within one period, so about half the
# threads reach one. The kernel checks CPU timers only at its 4 ms tick while
# the thread runs, so most of those expiries are still unsignalled when the
# thread ends: the SDK records them at thread exit, under the thread's start
# routine ("[pushprof] thread ended before its sample"). Without that the
# profile held 0.29..0.51 of CPU time x hz (gperftools' process-wide timer:
# ~0.99); with it 0.95..1.07. The floor, 0.7, leaves room for a loaded
# machine and fails if the exit samples are lost.
. "$(dirname "$0")/sdk_lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/short-%p.pb.gz"
run_workload "$mode" wl_short_threads 1000 50
[ "$(out_value threads)" = 1000 ] || fail "the workload did not run 1000 threads"
cpu=$(out_value cpu_seconds)
prof=$(the_profile)
"${CHECK[@]}" "$prof" --value samples/count --min-samples "$(calc "0.7*$cpu*100")" \
  --shares "short_thread_spin,[pushprof] thread ended before its sample" --min-attributed 0.8 \
  --expect-function '^worker$' >"$T/report.json"
echo "pass ($mode): cpu ${cpu}s, samples $(python3 -c "import json;print(json.load(open('$T/report.json'))['total']['samples/count'])")"
