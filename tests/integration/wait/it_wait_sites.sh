#!/usr/bin/env bash
# Off-CPU and lock profiles of a workload whose threads wait in known ways
# (wl_wait_sites: a sleeper, a reader of a pipe fed every 3 ms, two threads
# taking one mutex in turns), read back with go tool pprof -raw: each
# site's delay within 20% of what its threads measured around their calls,
# or within 4.5 sigma of the sampling error if
# that is wider (waits shorter than the rate R are kept with probability
# d/R and weighted to R, so a site's estimate has a variance of at most
# R x its true delay); linked, each wait carries its thread's route label.
# Preloaded, the rate is 3 ms, so the sleeps (2 ms) and most pipe reads are
# sampled and weighted, over 4 s so that 4.5 sigma of every site (the
# lock's waits are the fewest) stays within 20%; linked, it is the default 1 ms over 2 s. Preloaded without
# libpushprof_wait.so, the start is refused with one line and the
# program's exit status is its own.
# In the ASan+UBSan build too: ASan's interceptors call on into ours.
#   it_wait_sites.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/w-%t.pb.gz" PUSHPROF_PROFILES=cpu,offcpu,lock
if [ "$mode" = preload ]; then
  expect_refusal "cannot profile waits.*LD_PRELOAD=.*libpushprof_wait.so" wl_wait_sites 0.1
  PRELOAD=$PRELOAD_WAIT
  export PUSHPROF_OFFCPU_RATE=3000000
fi
run_workload "$mode" wl_wait_sites "$([ "$mode" = preload ] && echo 4 || echo 2)"
for t in cpu offcpu lock; do
  [ -s "$T/prof/w-$t.pb.gz" ] || fail "no $t profile: $(ls "$T/prof")"
done
"${CHECK[@]}" "$T/prof/w-offcpu.pb.gz" --value delay/nanoseconds >"$T/offcpu.json" ||
  fail "the off-CPU profile does not read"
"${CHECK[@]}" "$T/prof/w-lock.pb.gz" --value delay/nanoseconds >"$T/lock.json" ||
  fail "the lock profile does not read"
rate=${PUSHPROF_OFFCPU_RATE:-1000000}
python3 - "$T/out" "$T/offcpu.json" "$T/lock.json" "$mode" "$rate" <<'PY' || fail "delays disagree with the truth"
import json, sys
from pprof_check import stat_bound
rate = float(sys.argv[5])
truth = dict(l.strip().split("=", 1) for l in open(sys.argv[1]) if "=" in l)
off, lock, mode = json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
bad = 0
def check(prof, what, fn, want, tol):
    global bad
    ok, line = stat_bound(prof["cum"].get(fn, 0), want, tol, rate=rate, what="%s %s ns" % (what, fn))
    bad += not ok
    print(("ok   " if ok else "FAIL ") + line)
for fn, key in (("site_sleep", "true_sleep_ns"), ("site_pipe", "true_pipe_ns"),
                ("site_lock", "true_lock_ns")):
    check(off, "offcpu", fn, int(truth[key]), 0.20)
check(lock, "lock", "site_lock", int(truth["true_lock_ns"]), 0.20)
if lock["cum"].get("site_sleep") or lock["cum"].get("site_pipe"):
    print("FAIL the lock profile holds waits that are not on a lock"); bad += 1
if off["sample_types"] != ["contentions/count", "delay/nanoseconds"]:
    print("FAIL sample types %s" % off["sample_types"]); bad += 1
if mode == "linked":
    routes = off["labels"].get("route", {})
    for route, key in (("/sleep", "true_sleep_ns"), ("/pipe", "true_pipe_ns")):
        ok, line = stat_bound(routes.get(route, 0), int(truth[key]), 0.2, rate=rate,
                              what="route=%s ns" % route)
        bad += not ok
        print(("ok   " if ok else "FAIL ") + line)
sys.exit(1 if bad else 0)
PY
echo "pass ($mode)"
