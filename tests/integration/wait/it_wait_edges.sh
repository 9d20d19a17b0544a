#!/usr/bin/env bash
# The awkward cases of the off-CPU profile (wl_wait_edges): a thread
# cancelled inside a blocking read, a fork while another thread is blocked,
# and a thread still blocked when main returns. The program must see what
# it sees unprofiled ("edges ok", exit status 0, in bounded time); the
# profile holds the waits that ended (after_cancel's 30 ms, site_waitpid's
# 50 ms or more) and reads with go tool pprof -raw.
#   it_wait_edges.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
PRELOAD=$PRELOAD_WAIT
export PUSHPROF_OUTPUT="$T/prof/edges-%t.pb.gz" PUSHPROF_PROFILES=cpu,offcpu,lock
t0=$(date +%s%N)
run_workload "$mode" wl_wait_edges
took=$((($(date +%s%N) - t0) / 1000000))
grep -qx "edges ok" "$T/out" || fail "the workload's checks: $(cat "$T/out")"
[ "$took" -lt 5000 ] || fail "exit took $took ms with a thread blocked"
"${CHECK[@]}" "$T/prof/edges-offcpu.pb.gz" --value delay/nanoseconds \
  --expect-function '^after_cancel$' --expect-function '^site_waitpid$' >"$T/off.json" ||
  fail "off-CPU profile: $(cat "$T/off.json")"
python3 - "$T/off.json" <<'PY' || fail "the waits that ended are not in the profile"
import json, sys
cum = json.load(open(sys.argv[1]))["cum"]
ok = 25e6 <= cum.get("after_cancel", 0) <= 200e6 and 45e6 <= cum.get("site_waitpid", 0) <= 2e9
print("after_cancel %.1f ms, site_waitpid %.1f ms" % (cum.get("after_cancel", 0) / 1e6,
                                                     cum.get("site_waitpid", 0) / 1e6))
sys.exit(0 if ok else 1)
PY
echo "pass ($mode): exit in $took ms"
