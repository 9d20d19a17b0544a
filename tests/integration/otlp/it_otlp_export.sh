#!/usr/bin/env bash
# The real sidecar exports to a strict OTLP receiver (otlp_receiver.py,
# Google's protobuf runtime with the upstream schema): profiles from the
# SDK's pprof builder (test_profbuild), from Go's runtime profiler (a CPU and
# a four-type heap profile), a synthetic one and one labelled the ways a
# tracer labels samples. For each: the receiver's checks pass (dictionary
# zero entries, indices, one value per sample, links equal to the
# trace_id/span_id attributes, gzip, content type, the configured headers),
# and per sample type the per-stack totals equal go tool pprof -raw's on
# what was pushed (a pprof with N sample types arrives as N Profiles).
# Headers come from $OTEL_EXPORTER_OTLP_HEADERS and --otlp-header (which
# wins); their values (SENTINEL secrets) never reach a log. Last, the SDK
# under LD_PRELOAD pushes to a sidecar with a file:// and an OTLP target:
# the OTLP Profiles hold the file target's pprof, stack for stack.
source "$(dirname "$0")/lib_otlp.sh"
T=$W/in
mkdir -p "$T"

# Inputs.
"$GEN_OTLP" "$T/linked.pb" --samples 400 --seed 7 || fail "gen_otlp_pprof"
read -r _ _ < <("$GEN" profile "$T/synthetic.pb" --seed 3 --samples 300 --functions 40)
"$B/tests/test_profbuild" "$T/sdk.pb" >"$T/profbuild.log" 2>&1 || fail "test_profbuild: $(tail -5 "$T/profbuild.log")"
(cd "$T" && go build -o goburn "$S/tests/integration/views/goburn.go") || fail "cannot build goburn.go"
"$T/goburn" "$T/gocpu.pprof" 1 "$T/goheap.pprof" || fail "goburn failed"

secret="Bearer%20SENTINEL-otlp-token-7f3a"
start_receiver main --expect-header "Authorization=Bearer SENTINEL-otlp-token-7f3a" \
  --expect-header "X-Scope-OrgID=tenant-a"
OTEL_EXPORTER_OTLP_HEADERS="Authorization=$secret, X-Scope-OrgID=wrong-tenant" \
  start_sidecar export --export "otlp+$RX_URL" --otlp-header X-Scope-OrgID=tenant-a --batch-window 1
grep -q 'msg="otlp exporter ready".*headers="Authorization,X-Scope-OrgID"' "$SC_LOG" ||
  fail "exporter start line does not name the headers: $(grep otlp "$SC_LOG")"

"$CLI" push "$T/linked.pb" --socket "$SOCK" --service linked --label k8s.pod.name=pod-1 \
  --label deployment.environment=test --label service.name=not-this-one >/dev/null || fail "push linked"
for s in synthetic sdk gocpu goheap; do
  f=$(ls "$T/$s".p*)
  "$CLI" push "$f" --socket "$SOCK" --service "$s" >/dev/null || fail "push $s"
done
rx_wait "$RX_OUT" 5 60
rx_clean "$RX_OUT"

# Round trip, per sample type, against go tool pprof -raw of the input.
python3 "$COMPARE" "$RX_OUT/requests.jsonl" linked "$T/linked.pb" --min-links 100 || fail "linked"
python3 "$COMPARE" "$RX_OUT/requests.jsonl" synthetic "$T/synthetic.pb" --links 0 || fail "synthetic"
python3 "$COMPARE" "$RX_OUT/requests.jsonl" sdk "$T/sdk.pb" || fail "sdk profile"
python3 "$COMPARE" "$RX_OUT/requests.jsonl" gocpu "$T/gocpu.pprof" || fail "go cpu profile"
python3 "$COMPARE" "$RX_OUT/requests.jsonl" goheap "$T/goheap.pprof" || fail "go heap profile"
[ "$(rx_q "$RX_OUT" 'len([p for p in profs if p["resource"]["service.name"] == "goheap"])')" -eq 4 ] ||
  fail "the heap profile (4 sample types) did not become 4 Profiles"

# Resource attributes.
res=$(rx_q "$RX_OUT" 'json.dumps([p["resource"] for p in profs if p["resource"]["service.name"] == "linked"][0], sort_keys=True)')
echo "resource of linked: $res"
for kv in '"service.name": "linked"' '"host.name": "testnode"' '"process.executable.name": "otlpdemo"' \
  '"k8s.pod.name": "pod-1"' '"deployment.environment": "test"' '"process.pid": '; do
  echo "$res" | grep -qF "$kv" || fail "resource lacks $kv: $res"
done
[ "$(rx_q "$RX_OUT" 'sorted({h for r in reqs for h, v in r["headers"].items() if v == "present"})')" = \
  "['Authorization', 'X-Scope-OrgID']" ] || fail "headers not seen on every request"

# Counters, per target and overall; secrets nowhere in the log.
wait_metric pushprof_batches_exported_total 5 10
[ "$(metric "pushprof_target_batches_exported_total{target=\"otlp+$RX_URL\"}")" -eq 5 ] ||
  fail "per-target counter: $(metrics | grep target_batches_exported)"
! grep -q 'SENTINEL' "$SC_LOG" || fail "a header value reached the sidecar log"
[ "$(spool_pushes)" -eq 0 ] || fail "pushes left in the spool after export"
wire=$(rx_q "$RX_OUT" 'sum(r["wire_bytes"] for r in reqs)')
stop_sidecar

# The SDK itself: demo_work under the preload library pushes to a sidecar
# exporting to file:// and OTLP at once; the OTLP Profiles must hold what
# the file target's pprof holds, stack for stack.
start_receiver sdk
start_sidecar sdklive --export "file://$OUT" --export "otlp+$RX_URL" --batch-window 1
env LD_PRELOAD="$PUSHPROF_TEST_PRELOAD" PUSHPROF_SOCKET="$SOCK" PUSHPROF_SERVICE=demo \
  PUSHPROF_HZ=250 "$B/examples/demo_work" 0.3 >/dev/null || fail "demo_work under the preload library"
rx_wait "$RX_OUT" 1 30
rx_clean "$RX_OUT"
wait_files "$OUT/testnode/demo" 1 10 || fail "no file export of demo_work"
python3 "$COMPARE" "$RX_OUT/requests.jsonl" demo "$OUT"/testnode/demo/*.pb.gz || fail "SDK profile"
stop_sidecar
echo "ok: 6 profiles (12 sample types) through OTLP, per-stack totals equal, links and resource right; $wire bytes on the wire for the first 5"
