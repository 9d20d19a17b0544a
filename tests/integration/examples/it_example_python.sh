#!/usr/bin/env bash
# bindings/python: a Python program labels its work through the ctypes
# binding; the exported profile holds those labels, restored after an
# exception inside labels() and separate per thread. A script that dies of
# an uncaught exception still ships its profile at exit.
source "$(dirname "$0")/ex_lib.sh"
export PYTHONPATH=$S/bindings/python PUSHPROF_LIBRARY=$LIBSO
D=$(dirname "$0")

start_sidecar py --batch-window 60
LD_PRELOAD=$SAN_RUNTIME ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=py-app python3 "$D/py_labels_app.py" >"$W/app.out" 2>"$W/app.err" ||
  fail "py_labels_app.py exited $?: $(cat "$W/app.err")"
grep -q 'py_labels_app: done' "$W/app.out" || fail "py_labels_app.py printed: $(cat "$W/app.out")"
rc=0
LD_PRELOAD=$SAN_RUNTIME ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=py-crash python3 "$D/py_crash_app.py" >"$W/crash.out" 2>"$W/crash.err" || rc=$?
[ "$rc" -eq 1 ] || fail "py_crash_app.py exited $rc, want 1 (uncaught exception): $(cat "$W/crash.err")"
grep -q 'RuntimeError: py_crash_app: failing on purpose' "$W/crash.err" || fail "no traceback: $(cat "$W/crash.err")"
stop_and_export

json=$(profiles_json py-app)
python3 - "$json" <<'PY' || fail "py-app profile: $json"
import json, sys
r = json.loads(sys.argv[1])
route = r["labels"].get("route", {})
trace = r["labels"].get("trace_id", {})
# 0.3 + 0.6 s outer, 0.3 s inner, 0.3 s worker at 100 Hz (CPU time).
outer, inner, worker = route.get("/outer", 0), route.get("/inner", 0), route.get("/worker", 0)
t1 = trace.get("t1", 0)
assert inner >= 10 and worker >= 10 and outer >= 40, "route labels %s" % route
# After the exception the labels were restored: /outer again, trace_id gone.
# Not restored, /inner would hold 0.9 s and /outer 0.3 s. Restored, 0.3 and
# 0.9, give or take what a stalled vCPU adds: the thread's CPU clock jumps
# by the stall (0.4 s seen on a loaded 2-vCPU VM), the timer's merged
# expiries land as one heavy sample on whatever label is set then, and the
# script's own phases (timed by that clock) end early.
assert outer > inner, "route=/outer %d vs /inner %d: not restored after the exception?" % (outer, inner)
assert t1 <= inner + 3, "trace_id=t1 on %d samples, /inner on %d: trace_id not removed on exit" % (t1, inner)
assert t1 >= inner - 3, "trace_id=t1 on %d samples, /inner on %d" % (t1, inner)
assert list(trace) == ["t1"], "trace_ids %s" % trace
print("ok py-app: %d samples, route %s, trace_id %s" % (r["total"], route, trace))
PY
json=$(profiles_json py-crash)
python3 - "$json" <<'PY' || fail "py-crash profile: $json"
import json, sys
r = json.loads(sys.argv[1])
n = r["labels"].get("trace_id", {}).get("crash1", 0)
assert n >= 20, "only %d samples labelled trace_id=crash1 (0.5 s at 100 Hz)" % n
print("ok py-crash: %d samples, %d labelled crash1" % (r["total"], n))
PY
echo pass
