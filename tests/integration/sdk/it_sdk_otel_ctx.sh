#!/usr/bin/env bash
# The OpenTelemetry context as outside readers see it: wl_otel (linked,
# under LD_PRELOAD or with libpushprof.a) starts profiling, labels one
# thread with W3C trace_id and span_id, route and tenant, labels then
# clears another, and forks.
# otel_reader.py, written from the OTEP texts, must find the OTEL_CTX
# mapping and decode a Resource with our service.name, a service.instance.id,
# the process labels, the schema version and a key map that grew with the
# keys the threads used; the forked child must have its own (a new
# service.instance.id: it profiles itself); gdb must
# see the labelled thread's otel_thread_ctx_v1 point at a valid record with
# our ids and attributes, and the others at nothing.
# With libpushprof.a the executable itself must export the symbol.
# foreign: a program that defines otel_thread_ctx_v1 itself keeps its
# pointer whatever pushprof's labels do (wl_otel_foreign checks).
#   it_sdk_otel_ctx.sh linked|preload|static|foreign
. "$(dirname "$0")/../lib.sh"
mode=$1
if [ "$mode" = foreign ]; then
  "$WL/wl_otel_foreign" || fail "wl_otel_foreign"
  echo pass
  exit 0
fi
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/otel-%p.pb.gz" PUSHPROF_SERVICE=otel-checkout
export PUSHPROF_LABELS="deployment.environment.name=test,team=profiling"
ready=$T/ready
case $mode in
  preload) LD_PRELOAD=$PRELOAD "$WL/wl_otel" "$ready" 60 >"$T/out" 2>"$T/err" & ;;
  linked) "$WL/wl_otel_linked" "$ready" 60 >"$T/out" 2>"$T/err" & ;;
  static)
    readelf --dyn-syms -W "$WL/wl_otel_static" |
      grep -Eq ' TLS +GLOBAL +DEFAULT +[0-9]+ otel_thread_ctx_v1$' ||
      fail "wl_otel_static does not export otel_thread_ctx_v1"
    "$WL/wl_otel_static" "$ready" 60 >"$T/out" 2>"$T/err" &
    ;;
  *) fail "unknown mode $mode" ;;
esac
wl=$!
child=
# The workload and its child go down with the test, pass or fail.
otel_on_exit() {
  local rc=$?
  set +e
  kill -9 $wl ${child:+$child} 2>/dev/null
  wait $wl 2>/dev/null
  (exit $rc) # on_exit takes the status from $?
  on_exit
}
trap otel_on_exit EXIT
for _ in $(seq 200); do
  [ -e "$ready" ] && break
  kill -0 $wl 2>/dev/null || fail "wl_otel exited early: $(cat "$T/err")"
  sleep 0.05
done
[ -e "$ready" ] || fail "wl_otel never got ready: $(cat "$T/err")"
read -r line <"$ready"
eval "$(sed 's/ /\n/g' <<<"$line" | sed 's/^/w_/')"
child=$w_child
[ "$w_pid" = "$wl" ] || fail "ready file names pid $w_pid, started $wl"
R="$S/tests/integration/sdk/otel_reader.py"

python3 "$R" ctx "$w_pid" >"$T/ctx.json" || fail "reader failed on the process"
# The child publishes in its fork handler, which may still be running.
for _ in $(seq 100); do
  python3 "$R" ctx "$child" >"$T/child.json" || fail "reader failed on the child"
  grep -q '"attributes"' "$T/child.json" && break
  sleep 0.05
done
python3 - "$T/ctx.json" "$T/child.json" <<'PY' || fail "process context"
import json, re, sys
ctx = json.load(open(sys.argv[1]))
child = json.load(open(sys.argv[2]))
assert "attributes" in ctx, ctx
a = ctx["attributes"]
want = {"service.name": "otel-checkout", "deployment.environment.name": "test",
        "team": "profiling", "threadlocal.schema_version": "tls_v1"}
for k, v in want.items():
    assert a.get(k) == v, "%s: got %r, want %r" % (k, a.get(k), v)
assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                    a.get("service.instance.id", "")), a.get("service.instance.id")
keys = a.get("threadlocal.attribute_key_map")
assert isinstance(keys, list) and len(keys) == len(set(keys)), keys
for k in ("trace_id", "span_id", "route", "tenant", "only_in_cleared"):
    assert k in keys, "key map %r lacks %s" % (keys, k)
# The mapping is not inherited (MADV_DONTFORK): the child, which profiles
# itself, publishes its own, with its own instance id.
ca = child.get("attributes", {})
assert ca.get("service.name") == "otel-checkout", "the forked child's context: %r" % child
assert ca.get("service.instance.id") not in (None, a["service.instance.id"]), (
    "the forked child shows its parent's instance id: %r" % child)
print("ok process context:", ctx["mapping"], sorted(a))
PY

python3 "$R" threads "$w_pid" "$T" >"$T/threads.json" || fail "gdb reader failed"
python3 - "$T/threads.json" "$w_labelled" "$w_cleared" "$w_pid" <<'PY' || fail "thread records"
import json, sys
t = json.load(open(sys.argv[1]))
labelled, cleared, main = sys.argv[2:5]
r = t.get(labelled)
assert r, "labelled thread %s has no record: %r" % (labelled, t)
assert r["valid"] == 1, r
assert r["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736", r
assert r["span_id"] == "00f067aa0ba902b7", r
assert r["attrs"] == {"route": "/api/orders", "tenant": "acme"}, r
assert t.get(cleared, "missing") is None, "cleared thread: %r" % t.get(cleared)
assert t.get(main, "missing") is None, "unlabelled main thread: %r" % t.get(main)
print("ok thread records:", r)
PY
echo pass
