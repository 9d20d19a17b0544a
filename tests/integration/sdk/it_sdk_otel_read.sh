#!/usr/bin/env bash
# pushprof reads another tracer's OpenTelemetry context: wl_otel_tracer
# (its own otel_thread_ctx_v1 and OTEL_CTX, written from the OTEP texts)
# profiled under LD_PRELOAD, read back through go tool pprof -traces:
# - samples in in_span() carry the record's trace_id, span_id and its
#   attributes under their names from the tracer's key map (http.route,
#   tenant); the attribute whose key index the map lacks labels nothing;
# - samples in outside_span() (no record attached) carry none;
# - hostile records (unmapped, valid = 0, an attrs size past the record,
#   freed while attached) label nothing and do not crash the program;
# - with PUSHPROF_WIN the program's own pushprof label tenant=ours wins
#   over the record's tenant=acme.
. "$(dirname "$0")/../lib.sh"
check() { # check PROFILE TENANT
  go tool pprof -traces "$1" >"$T/traces.txt" 2>"$T/pprof.err" || fail "pprof: $(cat "$T/pprof.err")"
  python3 - "$T/traces.txt" "$2" <<'PY'
import re, sys
text, tenant = open(sys.argv[1]).read(), sys.argv[2]
stats = {}  # leaf -> [samples, with the full record's labels, with any trace_id]
bad = []
for block in text.split("-----------+-------------------------------------------------------")[1:]:
    labels, frames = {}, []
    for line in block.strip("\n").splitlines():
        m = re.match(r"^\s*([\w.]+):\s+(.*)$", line)
        if m and not frames:
            labels[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"^\s*(?:[\d.]+\w*s\s+)?(\S+)$", line)
        if m:
            frames.append(m.group(1))
    if not frames:
        continue
    leaf = frames[0]
    for k in labels:
        if k not in ("trace_id", "span_id", "http.route", "tenant", "pushprof_stack"):
            bad.append("unexpected label %r on %s" % (k, leaf))
    full = (labels.get("trace_id") == "4bf92f3577b34da6a3ce929d0e0e4736"
            and labels.get("span_id") == "00f067aa0ba902b7"
            and labels.get("http.route") == "/checkout" and labels.get("tenant") == tenant)
    s = stats.setdefault(leaf, [0, 0, 0])
    s[0] += 1
    s[1] += full
    s[2] += "trace_id" in labels
print({k: v for k, v in stats.items() if k in ("in_span", "outside_span", "hostile_spin")})
assert not bad, bad[:5]
i, o, h = stats.get("in_span"), stats.get("outside_span"), stats.get("hostile_spin")
assert i and o and h, "a thread's function has no samples"
assert i[1] == i[0], "in_span samples without the record's labels: %d of %d" % (i[0] - i[1], i[0])
assert o[2] == 0, "outside_span samples with a trace_id: %d" % o[2]
assert h[2] == 0, "hostile records labelled %d samples" % h[2]
PY
}
mkdir -p "$T/prof"
PUSHPROF_OUTPUT="$T/prof/p-%p.pb.gz" PUSHPROF_HZ=200 LD_PRELOAD=$PRELOAD \
  "$WL/wl_otel_tracer" 2 >"$T/out" 2>"$T/err" || fail "wl_otel_tracer: $(cat "$T/err")"
check "$(the_profile)" acme || fail "the tracer's records are not read right"
rm -f "$T"/prof/*
PUSHPROF_WIN=1 PUSHPROF_OUTPUT="$T/prof/p-%p.pb.gz" PUSHPROF_HZ=200 LD_PRELOAD=$PRELOAD \
  "$WL/wl_otel_tracer" 2 >"$T/out" 2>"$T/err" || fail "wl_otel_tracer (PUSHPROF_WIN): $(cat "$T/err")"
check "$(the_profile)" ours || fail "the program's pushprof label does not win over the record's"
# Linked, pushprof starts after the tracer published its context: the
# tracer's service.name names the profiles (none set), and records are read
# the same way (the executable's otel_thread_ctx_v1 comes before the
# library's).
rm -f "$T"/prof/*
PUSHPROF_OUTPUT="$T/prof/p-%p.pb.gz" PUSHPROF_HZ=200 "$WL/wl_otel_tracer_linked" 2 >"$T/out" \
  2>"$T/err" || fail "wl_otel_tracer_linked: $(cat "$T/err")"
check "$(the_profile)" acme || fail "linked: the tracer's records are not read right"
start_sidecar tracer
PUSHPROF_SOCKET=$SOCK "$WL/wl_otel_tracer_linked" 0.5 >"$T/out" 2>"$T/err" ||
  fail "wl_otel_tracer_linked (socket): $(cat "$T/err")"
stop_sidecar
[ -d "$OUT/testnode/tracer-svc" ] || fail "the tracer's service.name is not the default service: $(ls "$OUT"/*)"
echo pass
