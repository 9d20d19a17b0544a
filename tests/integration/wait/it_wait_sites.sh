#!/usr/bin/env bash
# Off-CPU and lock profiles of a workload whose threads wait in known ways
# (wl_wait_sites: a sleeper, a reader of a pipe fed every 3 ms, two threads
# taking one mutex in turns), read back with go tool pprof -raw: each
# site's delay within 20% of what its threads measured around their calls
# (the lock's, in the lock profile, within 35%); linked, each wait carries
# its thread's route label. Preloaded, the off-CPU rate is 10 ms, so the
# sleeps (2 ms) and pipe reads (3 ms) are sampled and weighted (about 150
# kept of each: a standard deviation near 7%); linked, it is the default
# 1 ms, which keeps them all. Preloaded without libpushprof_wait.so, the
# start is refused with one line and the program's exit status is its own.
# In the ASan+UBSan build too: ASan's interceptors call on into ours.
#   it_wait_sites.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/w-%t.pb.gz" PUSHPROF_PROFILES=cpu,offcpu,lock
if [ "$mode" = preload ]; then
  expect_refusal "cannot profile waits.*LD_PRELOAD=.*libpushprof_wait.so" wl_wait_sites 0.1
  PRELOAD=$PRELOAD_WAIT
  export PUSHPROF_OFFCPU_RATE=10000000
fi
run_workload "$mode" wl_wait_sites 2
for t in cpu offcpu lock; do
  [ -s "$T/prof/w-$t.pb.gz" ] || fail "no $t profile: $(ls "$T/prof")"
done
"${CHECK[@]}" "$T/prof/w-offcpu.pb.gz" --value delay/nanoseconds >"$T/offcpu.json" ||
  fail "the off-CPU profile does not read"
"${CHECK[@]}" "$T/prof/w-lock.pb.gz" --value delay/nanoseconds >"$T/lock.json" ||
  fail "the lock profile does not read"
python3 - "$T/out" "$T/offcpu.json" "$T/lock.json" "$mode" <<'PY' || fail "delays disagree with the truth"
import json, sys
truth = dict(l.strip().split("=", 1) for l in open(sys.argv[1]) if "=" in l)
off, lock, mode = json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
bad = 0
def check(prof, what, fn, want, tol):
    global bad
    got = prof["cum"].get(fn, 0)
    ok = abs(got - want) <= tol * want
    bad += not ok
    print("%s %s %s: %.3f s, the threads measured %.3f s (%+.1f%%, tolerance %d%%)" % (
        "ok  " if ok else "FAIL", what, fn, got / 1e9, want / 1e9, 100.0 * (got - want) / want, 100 * tol))
# A lock's waits are the lock tolerance's in both profiles: they are few and
# short when the holders alternate fast (under ASan), so sampled at 10 ms
# their estimate spreads more than the sleeps' and reads'.
for fn, key, tol in (("site_sleep", "true_sleep_ns", 0.20), ("site_pipe", "true_pipe_ns", 0.20),
                     ("site_lock", "true_lock_ns", 0.35)):
    check(off, "offcpu", fn, int(truth[key]), tol)
check(lock, "lock", "site_lock", int(truth["true_lock_ns"]), 0.35)
if lock["cum"].get("site_sleep") or lock["cum"].get("site_pipe"):
    print("FAIL the lock profile holds waits that are not on a lock"); bad += 1
if off["sample_types"] != ["contentions/count", "delay/nanoseconds"]:
    print("FAIL sample types %s" % off["sample_types"]); bad += 1
if mode == "linked":
    routes = off["labels"].get("route", {})
    for route, key in (("/sleep", "true_sleep_ns"), ("/pipe", "true_pipe_ns")):
        got, want = routes.get(route, 0), int(truth[key])
        ok = abs(got - want) <= 0.2 * want
        bad += not ok
        print("%s route=%s holds %.3f s of %.3f s" % ("ok  " if ok else "FAIL", route, got / 1e9, want / 1e9))
sys.exit(1 if bad else 0)
PY
echo "pass ($mode)"
