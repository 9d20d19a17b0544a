#!/usr/bin/env bash
# Eight threads doing equal work, one function per thread.
#   it_sdk_threads8.sh preload|linked|static
# Tolerance maths: each thread has its own CPU timer, so its count is its CPU
# time / period give or take one sample (plus the random first expiry).
# 0.75 s per thread at the default 100 Hz is ~75 samples each, ~600 in all:
# one sample is ~0.2 points of share, well inside +-2. The static variant
# registers its threads with pushprof_thread_register() and calls
# pushprof_stop() itself.
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/t8-%p.pb.gz"
run_workload "$mode" wl_threads8 0.75
cpu=$(out_value cpu_seconds)
prof=$(the_profile)
fns=thread_work_0,thread_work_1,thread_work_2,thread_work_3,thread_work_4,thread_work_5,thread_work_6,thread_work_7
args=()
for i in 0 1 2 3 4 5 6 7; do args+=(--expect-share "thread_work_$i=12.5:2"); done
"${CHECK[@]}" "$prof" --value samples/count --expect-total "$(calc "$cpu*100")":10 \
  --shares "$fns" --min-attributed 0.95 "${args[@]}" >"$T/report.json"
echo "pass ($mode): cpu ${cpu}s"
