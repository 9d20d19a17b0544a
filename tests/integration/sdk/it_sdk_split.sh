#!/usr/bin/env bash
# 50/30/20 CPU split across three functions in two threads.
#   it_sdk_split.sh preload|linked
# The expected shares are what the workload measured on its own thread CPU
# clocks around each call (50/30/20 to within 0.05 points in practice).
# Tolerance maths: PUSHPROF_HZ=200 and 3 s of CPU per thread give ~1200
# samples. Two error sources:
# - a CPU timer samples systematically, so a phase's count is off by about
#   +-0.5 sample per round; rounds of ~400 ms (randomly scaled so they do
#   not stay in phase with the timer) make ~15 rounds: 0.5*sqrt(15)/1200 =
#   0.2 points;
# - the kernel notices an expired CPU timer only at its 4 ms tick while the
#   thread runs, so on a loaded machine samples arrive late, several at once
#   (si_overrun, counted as weight), a few ms past a phase boundary. With
#   ~100 ms rounds (6 boundaries a second) we measured errors up to 3 points
#   at load average 40; ~400 ms rounds cut the boundaries fourfold.
# 100 Hz would leave the first error at ~1 point; 200 Hz rather than 250
# keeps the 5 ms period above the tick, so no expiry falls between ticks.
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/split-%p.pb.gz" PUSHPROF_HZ=200
run_workload "$mode" wl_split 3.0
cpu=$(out_value cpu_seconds)
[ -n "$cpu" ] || fail "the workload printed no cpu_seconds"
prof=$(the_profile)
case $prof in *"split-"[0-9]*.pb.gz) ;; *) fail "%p not expanded: $prof" ;; esac
share() { # the measured share of function $1, in percent
  python3 -c "t={k: float(v) for k, v in (l.strip().split('=') for l in open('$T/out') if l.startswith('true_'))}
print(round(100 * t['true_$1'] / sum(t.values()), 2))"
}
# The workload must itself have split 50/30/20 (else the test proves nothing).
for fp in split_fifty:50 split_thirty:30 split_twenty:20; do
  s=$(share "${fp%:*}")
  python3 -c "import sys; sys.exit(0 if abs($s - ${fp#*:}) < 1 else 1)" ||
    fail "the workload's own split is off: ${fp%:*} took $s%"
done
"${CHECK[@]}" "$prof" --value samples/count --expect-total "$(calc "$cpu*200")":10 \
  --shares split_fifty,split_thirty,split_twenty --min-attributed 0.95 \
  --expect-share "split_fifty=$(share split_fifty):2" --expect-share "split_thirty=$(share split_thirty):2" \
  --expect-share "split_twenty=$(share split_twenty):2" >"$T/report.json"
echo "pass ($mode): cpu ${cpu}s"
