#!/usr/bin/env bash
# The 50/30/20 frameless-leaf workload (tests/integration/stacks) built for
# aarch64 -O2 -fomit-frame-pointer, run under qemu-aarch64 with the SDK
# preloaded, linked with libpushprof.so or with libpushprof.a. The profile
# must give func_a/b/c their measured shares (+-3 points: emulation adds
# jitter to the CPU clocks; or 4.5 binomial sigma over the samples if wider,
# ~8 points at 3 s x 250 Hz: sk_leafmix_check.py prints the bound used),
# `leaf` its caller in every sample, and every
# such stack `worker` and the thread's root in libc above it.
#   it_arm64_leafmix.sh nofp|pac preload|linked|static
# pac: also -mbranch-protection=pac-ret (return addresses signed; qemu's
# default CPU has pointer authentication).
. "$(dirname "$0")/../integration/lib.sh"
variant=${1:?usage: it_arm64_leafmix.sh nofp|pac preload|linked|static}
mode=${2:?usage: it_arm64_leafmix.sh nofp|pac preload|linked|static}
QEMU=$(command -v qemu-aarch64) || fail "qemu-aarch64 not found (tests/deps.sh --arch arm64)"
suffix=_$mode
[ "$mode" = preload ] && suffix=
[ -x "$WL/a64_leafmix_$variant$suffix" ] || fail "$WL/a64_leafmix_$variant$suffix not built"
mkdir -p "$T/prof"
env=(-E "PUSHPROF_OUTPUT=$T/prof/leafmix-%p.pb.gz" -E PUSHPROF_HZ=250)
rc=0
case $mode in
  preload) "$QEMU" "${env[@]}" -E "LD_PRELOAD=$PRELOAD" "$WL/a64_leafmix_$variant" 3 >"$T/out" 2>"$T/err" || rc=$? ;;
  linked) "$QEMU" "${env[@]}" "$WL/a64_leafmix_${variant}_linked" 3 >"$T/out" 2>"$T/err" || rc=$? ;;
  static) "$QEMU" "${env[@]}" "$WL/a64_leafmix_${variant}_static" 3 >"$T/out" 2>"$T/err" || rc=$? ;;
  *) fail "unknown mode $mode" ;;
esac
cat "$T/err" >&2
[ "$rc" -eq 0 ] || fail "a64_leafmix_$variant ($mode) exited with $rc under qemu"
prof=$(the_profile)
echo "a64_leafmix_$variant ($mode): measured $(grep -E '^(share_|worker_cpu)' "$T/out" | tr '\n' ' ')"
python3 "$S/tests/integration/stacks/sk_leafmix_check.py" "$prof" "$T/out" --tolerance 3 ||
  fail "a64_leafmix_$variant ($mode): the profile's stacks do not match the measured shares"
python3 "$(dirname "$0")/arm64_root_check.py" "$prof" ||
  fail "a64_leafmix_$variant ($mode): stacks do not reach the thread's root"
echo "pass ($variant, $mode)"
