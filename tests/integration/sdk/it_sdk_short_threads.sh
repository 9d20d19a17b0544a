#!/usr/bin/env bash
# 1000 threads of ~5 ms CPU each (50 alive at a time): no crash, a valid
# profile, and the samples land in the threads' function.
#   it_sdk_short_threads.sh preload|linked
# Expected count: the workers' own CPU time (their start routines, which
# the per-thread timers cover) x hz. A 5 ms thread at 100 Hz holds half a
# period; the first expiry is random within one period, so about half the
# threads reach one. The kernel checks CPU timers only at its 4 ms tick while
# the thread runs, so most of those expiries are still unsignalled when the
# thread ends: the SDK records them at thread exit, under the thread's start
# routine ("[pushprof] thread ended before its sample"). Without that the
# workers held 0.29..0.51 of their CPU time x hz; with it about 1.0.
# The process's CPU time is no measure here: it also holds thread creation
# and teardown, unsampled (in the creating thread, or before the timer is
# armed and after it is gone): ~0.06 s of 5.1 s in a normal build, ~0.8 s
# under ASan on an idle machine and ~4.8 s with a second test running.
# The floor: 15% below 1.0, or 4.5 Poisson sigma of the expected count if
# that is wider (~500 samples: 20%).
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/short-%p.pb.gz"
run_workload "$mode" wl_short_threads 1000 50
[ "$(out_value threads)" = 1000 ] || fail "the workload did not run 1000 threads"
cpu=$(out_value worker_cpu_seconds)
prof=$(the_profile)
"${CHECK[@]}" "$prof" --value samples/count \
  --shares "short_thread_spin,[pushprof] thread ended before its sample" --min-attributed 0.8 \
  --expect-attributed "$(calc "$cpu*100")":15 --side low --expect-function '^worker$' >"$T/report.json"
echo "pass ($mode): workers' cpu ${cpu}s (process $(out_value cpu_seconds)s), samples $(python3 -c "
import json; r = json.load(open('$T/report.json'))
print(r['total']['samples/count'], 'of which in the workers', sum(r['cum'].get(f, 0) for f in r['shares']))")"
