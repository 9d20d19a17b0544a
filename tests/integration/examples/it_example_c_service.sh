#!/usr/bin/env bash
# examples/c_service: installed into a temporary prefix, the example is
# configured as its own CMake project with find_package(pushprof), runs 600
# requests on 4 threads pushing to the real sidecar, and the exported profile
# carries per-request trace_id labels and route labels in proportion to each
# route's work (checkout 6 units, search 3, health 2 x 1 per 4 requests).
source "$(dirname "$0")/ex_lib.sh"
P=$W/prefix
cmake --install "$B" --prefix "$P" >"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "cmake --install"; }
cmake -S "$S/examples/c_service" -B "$W/cbuild" -DCMAKE_PREFIX_PATH="$P" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$SAN_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SAN_FLAGS" \
  >"$W/cmake.log" 2>&1 || { cat "$W/cmake.log"; fail "configure c_service"; }
cmake --build "$W/cbuild" >"$W/build.log" 2>&1 || { cat "$W/build.log"; fail "build c_service"; }
readelf -d "$W/cbuild/c_service" | grep -q 'libpushprof.so' || fail "c_service does not link libpushprof.so"

start_sidecar csvc --batch-window 60
PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=c-service PUSHPROF_UPLOAD_PERIOD=2 \
  "$W/cbuild/c_service" 600 4 >"$W/svc.out" 2>"$W/svc.err" || fail "c_service exited $?: $(cat "$W/svc.err")"
expect_clean_run c_service 'c_service: 600 requests on 4 threads'
json=$(profiles_json c-service)
python3 - "$json" <<'PY' || fail "exported profile: $json"
import json, sys
from pprof_check import stat_bound
r = json.loads(sys.argv[1])
L, total = r["labels"], r["total"]
assert total >= 60, "only %d samples" % total
routes = L.get("route", {})
for rt in ("/checkout", "/search", "/health"):
    assert routes.get(rt, 0) > 0, "no samples labelled route=%s: %s" % (rt, routes)
lab = sum(routes.values())
# Nearly every sample is inside a request (labels set around all the work).
assert lab >= 0.8 * total, "only %d of %d samples carry a route" % (lab, total)
share = {k: v / lab for k, v in routes.items()}
# Expected shares 6/11, 3/11, 2/11 of the work: the routes spin the same
# loop for 6, 3 and 2 units, so their CPU splits as the units do whatever
# the machine's speed; within 12 points or 4.5 binomial sigma.
for rt, want in (("/checkout", 6 / 11), ("/search", 3 / 11), ("/health", 2 / 11)):
    ok, line = stat_bound(100 * share[rt], 100 * want, 12, n=lab, share=True,
                          what="route=%s share" % rt)
    print(("ok   " if ok else "FAIL ") + line)
    assert ok, line
traces = L.get("trace_id", {})
# Every sample with a route has its trace_id; a sample may also land
# inside the pushprof_label_set that adds route after trace_id.
in_set = r["cum"].get("pushprof_label_set", 0)
assert lab <= sum(traces.values()) <= lab + in_set, "trace_id on %d samples, route on %d, %d in label_set" % (
    sum(traces.values()), lab, in_set)
assert len(traces) >= 50, "only %d distinct trace_ids" % len(traces)
for f in ("spin_units", "price_cart", "charge_card", "handle_checkout", "handle_search",
          "handle_health", "serve", "worker"):
    assert f in r["functions"], "function %s missing" % f
print("ok %d samples; route shares %s; %d distinct trace_ids" % (
    total, {k: round(v, 2) for k, v in share.items()}, len(traces)))
PY
echo pass
