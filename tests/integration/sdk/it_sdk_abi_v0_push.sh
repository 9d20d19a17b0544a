#!/usr/bin/env bash
# The pushprof.h 0.1 program of it_sdk_abi_v0.sh with its socket_path and
# service options (offsets 8 and 32 of the 0.1 struct): its profile reaches a
# real sidecar under that service name.
#   it_sdk_abi_v0_push.sh linked|static
source "$(dirname "$0")/../examples/ex_lib.sh"
svc=abi-v0-$1
start_sidecar abi --batch-window 60
"$B/tests/sdk_workloads/wl_abi_v0_$1" unused 0 -1 "$SOCK" "$svc" >"$W/app.out" 2>"$W/app.err" ||
  fail "wl_abi_v0 exited $?: $(cat "$W/app.out" "$W/app.err")"
stop_and_export
json=$(profiles_json "$svc")
cpu=$(sed -n 's/^cpu_seconds=//p' "$W/app.out")
python3 - "$json" "$cpu" <<'PY' || fail "the $svc profile: $json"
import json, sys
from pprof_check import stat_bound
r = json.loads(sys.argv[1])
ok, line = stat_bound(r["total"], float(sys.argv[2]) * 100, 0.5, side="low",
                      what="samples for %s CPU s at 100 Hz" % sys.argv[2])
print(("ok   " if ok else "FAIL ") + line)
assert ok
assert "abi_v0_spin" in r["functions"], r["functions"][:20]
print("ok %d samples pushed as the 0.1 struct's service" % r["total"])
PY
echo "pass ($1)"
