#!/usr/bin/env bash
# On-demand CPU profile of a running two-thread program (50/30/20 split,
# 60 s upload period) through the real sidecar's HTTP API:
#   it_ondemand_cpu.sh preload|linked
# - POST /profile/cpu for 3 s at 200 Hz answers within 5 s with 200
#   samples per CPU second the process spent in the window (its CPU clock,
#   read by the SDK at the window's ends, within 10% or 4.5 sigma) and the
#   split within 5 points (or 4.5 sigma); go tool pprof reads the answer;
# - meanwhile a second POST gets 409 and GET shows the session running
#   with the process joined;
# - the continuous profile of the same run still holds one sample per
#   10 ms of CPU (100 Hz): the window's samples counted once, at its rate.
. "$(dirname "$0")/../lib.sh"
mode=$1
start_sidecar ondemand
api=http://127.0.0.1:$METRICS_PORT/profile/cpu
export PUSHPROF_SOCKET=$SOCK PUSHPROF_UPLOAD_PERIOD=60 PUSHPROF_SERVICE=odsplit
# Rounds of ~50 ms: the 3 s window cuts at most one short at each end.
run_workload "$mode" wl_split 9 0.05 &
wl=$!
# The process subscribes at its collector's first drain.
wait_count subscribers 1 10 sh -c "curl -sf $api | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"subscribers\"])'"
t0=$(date +%s.%N)
curl -s -o "$W/od.pb" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -d '{"sampling_frequency": 200, "timeout_seconds": 3}' "$api" >"$W/od.code" &
post=$!
sleep 1
code=$(curl -s -o "$W/second.json" -w '%{http_code}' -X POST -d '{"timeout_seconds": 1}' "$api")
[ "$code" = 409 ] || fail "a second POST while one runs: $code $(cat "$W/second.json")"
grep -q '"error":"a cpu session is already running' "$W/second.json" || fail "409 without its reason: $(cat "$W/second.json")"
curl -sf "$api" >"$W/status.json"
python3 - "$W/status.json" <<'PY' || fail "GET during the session: $(cat "$W/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["running"] is True, s
assert s["sampling_frequency"] == 200 and s["timeout_seconds"] == 3, s
assert [j["service"] for j in s["joined"]] == ["odsplit"], s
PY
wait $post
t1=$(date +%s.%N)
[ "$(cat "$W/od.code")" = 200 ] || fail "POST answered $(cat "$W/od.code"): $(cat "$W/od.pb")"
python3 -c "import sys; e=$t1-$t0; print('answered in %.2f s' % e); sys.exit(0 if e < 5 else 1)" ||
  fail "the answer took over 5 s"
"${CHECK[@]}" "$W/od.pb" --value samples/count \
  --shares split_fifty,split_thirty,split_twenty --min-attributed 0.95 \
  --expect-share split_fifty=50:5 --expect-share split_thirty=30:5 --expect-share split_twenty=20:5 \
  >"$W/od.json"
python3 - "$W/od.json" <<'PY' || fail "the window's profile does not say what it is"
import json, re, sys
from pprof_check import stat_bound
r = json.load(open(sys.argv[1]))
assert r["period"] == 5000000, r["period"]  # 1/200 s
# The rate itself: samples per CPU second the process spent in the window.
m = [re.search(r"in ([0-9.]+) CPU s", c) for c in r["comments"]]
cpu = [float(x.group(1)) for x in m if x][0]
n = r["total"]["samples/count"]
ok, line = stat_bound(n, cpu * 200, 0.10, what="samples for %.3f CPU s at 200 Hz" % cpu)
print(("ok   " if ok else "FAIL ") + line)
assert ok
assert any("on-demand session" in c and "at 200 Hz" in c for c in r["comments"]), r["comments"]
assert any("1 of 1 processes delivered" in c for c in r["comments"]), r["comments"]
PY
curl -sf "$api" | grep -q '"running":false' || fail "GET after the session still says running"
wait $wl || fail "the workload failed"
cpu=$(out_value cpu_seconds)
stop_sidecar
prof=$(find "$OUT" -name '*.pb.gz' | head -1)
[ -n "$prof" ] || fail "no continuous profile exported"
"${CHECK[@]}" "$prof" --value samples/count --expect-total "$(calc "$cpu*100")":8 >/dev/null ||
  fail "the continuous profile does not hold the run at 100 Hz once ($cpu CPU s)"
echo "pass ($mode)"
