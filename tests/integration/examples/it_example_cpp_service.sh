#!/usr/bin/env bash
# examples/cpp_service: installed into a temporary prefix, built with
# examples/cpp_service/build.sh through pkg-config, runs 500 requests (one in
# five throws from inside a template handler) pushing to the real sidecar.
# The exported profile names the C++ functions demangled (templates and
# namespaces, no _Z names), and the route labels survive the exception path.
source "$(dirname "$0")/ex_lib.sh"
P=$W/prefix
cmake --install "$B" --prefix "$P" >"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "cmake --install"; }
PKG_CONFIG_PATH=$P/lib/pkgconfig sh "$S/examples/cpp_service/build.sh" "$W/cpp_service" \
  >"$W/build.log" 2>&1 || { cat "$W/build.log"; fail "build.sh (pkg-config) failed"; }
readelf -d "$W/cpp_service" | grep -q 'libpushprof.so' || fail "cpp_service does not link libpushprof.so"

start_sidecar cxx --batch-window 60
LD_PRELOAD=$SAN_RUNTIME ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=cpp-service "$W/cpp_service" 500 4 >"$W/svc.out" 2>"$W/svc.err" ||
  fail "cpp_service exited $?: $(cat "$W/svc.err")"
expect_clean_run cpp_service 'cpp_service: 500 requests on 4 threads, 100 rejected'
json=$(profiles_json cpp-service)
python3 - "$json" <<'PY' || fail "exported profile: $json"
import json, re, sys
r = json.loads(sys.argv[1])
fn, total = r["functions"], r["total"]
assert total >= 50, "only %d samples" % total
mangled = [f for f in fn if f.startswith("_Z")]
assert not mangled, "mangled names left: %s" % mangled[:5]
def need(rx):
    hits = [f for f in fn if re.search(rx, f)]
    assert hits, "no function matches %s in %s" % (rx, fn)
    return hits[0]
# (gcc may inline serve() and add " [clone .isra.0]" to a specialised copy)
got = [need(r"^pipeline::Handler<pipeline::Json>::decode\(unsigned long\)"),
       need(r"^pipeline::Handler<pipeline::Protobuf>::decode\(unsigned long\)"),
       need(r"^void \(anonymous namespace\)::dispatch<pipeline::Json>\(unsigned long\)$"),
       need(r"^void \(anonymous namespace\)::dispatch<pipeline::Protobuf>\(unsigned long\)$"),
       need(r"^\(anonymous namespace\)::worker\(long\)$")]
routes = r["labels"].get("route", {})
for rt in ("/orders", "/inventory"):
    assert routes.get(rt, 0) > 0, "no samples with route=%s: %s" % (rt, routes)
# Handlers run under their labels: most of the decode time is labelled.
dec = sum(v for f, v in r["cum"].items() if "::decode" in f)
assert sum(routes.values()) >= 0.8 * dec, "routes %s, decode samples %d" % (routes, dec)
print("ok %d samples; %s; routes %s" % (total, got, routes))
PY
echo pass
