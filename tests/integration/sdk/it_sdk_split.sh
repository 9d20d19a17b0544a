#!/usr/bin/env bash
# 50/30/20 CPU split across three functions in two threads.
#   it_sdk_split.sh preload|linked
# Tolerance maths: PUSHPROF_HZ=200 and 2 s of CPU per thread give ~800
# samples in ~40 rounds (rounds of ~100 ms, randomly scaled so they do not
# stay in phase with the timer). A CPU timer samples systematically, so a
# phase's count is off by at most one sample per round, about +-0.5 on
# average: the share error is ~0.5*sqrt(40)/800 = 0.4 points, and +-2 points
# is ~5 sigma. At 100 Hz it would be ~2 sigma (flaky); 200 Hz rather than
# 250 keeps the period (5 ms) above the 4 ms kernel tick so no expiry is
# lost to a timer overrun.
. "$(dirname "$0")/sdk_lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/split-%p.pb.gz" PUSHPROF_HZ=200
run_workload "$mode" wl_split 2.0
cpu=$(out_value cpu_seconds)
[ -n "$cpu" ] || fail "the workload printed no cpu_seconds"
prof=$(the_profile)
case $prof in *"split-"[0-9]*.pb.gz) ;; *) fail "%p not expanded: $prof" ;; esac
"${CHECK[@]}" "$prof" --value samples/count --expect-total "$(calc "$cpu*200")":10 \
  --shares split_fifty,split_thirty,split_twenty --min-attributed 0.95 \
  --expect-share split_fifty=50:2 --expect-share split_thirty=30:2 \
  --expect-share split_twenty=20:2 >"$T/report.json"
echo "pass ($mode): cpu ${cpu}s"
