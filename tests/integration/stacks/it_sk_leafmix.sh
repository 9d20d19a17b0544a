#!/usr/bin/env bash
# Stacks through a frameless leaf. sk_leafmix's worker gives
# func_a/b/c 50/30/20% of its CPU, each calling the frameless `leaf`; the
# profile must put each function on the stack of its measured share of the
# samples (+-2 points, or 4.5 binomial sigma if wider) and give `leaf` its
# real caller (sk_leafmix_check.py).
#   it_sk_leafmix.sh fp|nofp preload|linked
# fp: built -O2 -fno-omit-frame-pointer (what the README recommends: the leaf
# still has no frame); nofp: -O2 -fomit-frame-pointer everywhere.
# Tolerance: 3 s of worker CPU at 250 Hz is ~750 samples; segments of 20-60 ms
# (5-15 samples each, random lengths) put the real sampling error of a share
# near 0.3 points, well inside 2, but the shared bound (stat_bound) is
# binomial, so a 50% share is allowed 4.5 x 1.8 = 8.2 points (printed).
. "$(dirname "$0")/../lib.sh"
build=${1:?usage: it_sk_leafmix.sh fp|nofp preload|linked}
mode=${2:?usage: it_sk_leafmix.sh fp|nofp preload|linked}
case $build in fp | nofp) ;; *) fail "unknown build $build" ;; esac
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/leafmix-%p.pb.gz" PUSHPROF_HZ=250
run_workload "$mode" "sk_leafmix_$build" 3
prof=$(the_profile)
echo "sk_leafmix_$build ($mode): measured $(grep -E '^(share_|worker_cpu)' "$T/out" | tr '\n' ' ')"
python3 "$(dirname "$0")/sk_leafmix_check.py" "$prof" "$T/out" ||
  fail "sk_leafmix_$build ($mode): the profile's stacks do not match the measured shares"
echo "pass ($build, $mode)"
