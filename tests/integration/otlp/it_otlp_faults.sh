#!/usr/bin/env bash
# The OTLP exporter's answers and settings, against the strict receiver:
#  1. 503 then 429 (Retry-After: 2): retried, the Retry-After waited out,
#     the batch then arrives once with its totals;
#  2. 400 with a google.rpc.Status: permanent, the push moves to failed/
#     with the server's message as the reason, not retried;
#  3. 200 with partial_success.rejected_profiles: counted and logged, not
#     retried, the push leaves the spool;
#  4. the endpoint from $OTEL_EXPORTER_OTLP_ENDPOINT (+ the signal path) and
#     from $OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT (as is), with --export otlp;
#  5. bad settings: exit 2 with one line naming the flag or variable and the
#     fix, never echoing a header value.
source "$(dirname "$0")/lib_otlp.sh"
export PUSHPROF_TEST_BACKOFF_MS=100
read -r n c < <("$GEN" profile "$W/in.pb" --seed 11 --samples 100)

# 1. 503, 429 (Retry-After: 2), then accepted.
start_receiver retry --fail 503,429 --retry-after 2
start_sidecar retry --export "otlp+$RX_URL" --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service flaky >/dev/null || fail "push"
rx_wait "$RX_OUT" 1 30
rx_clean "$RX_OUT"
expect_retried "$RX_OUT/requests.jsonl" "503 429 200" 1 2 2
got=$(rx_q "$RX_OUT" '" ".join(str(sum(p["total"] for p in profs if p["type"] == t)) for t in ("samples/count", "cpu/nanoseconds"))')
[ "$got" = "$n $c" ] || fail "totals $got, pushed $n $c"
stop_sidecar

# 2. 400: permanent, to failed/ with the Status message, no retry.
start_receiver bad --always 400
start_sidecar bad --export "otlp+$RX_URL" --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service refused >/dev/null || fail "push"
expect_refused_for_good "$RX_OUT/requests.jsonl" 'HTTP 400: stand-in says 400'
expect_metric "pushprof_target_batches_refused_total{target=\"otlp+$RX_URL\"}" 1 "refusals of the target"
stop_sidecar
rm -rf "$W/spool/failed"

# 3. Partial success: counted, logged, not retried.
start_receiver partial --partial 1
start_sidecar partial --export "otlp+$RX_URL" --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service partly >/dev/null || fail "push"
rx_wait "$RX_OUT" 1 30
wait_metric 'pushprof_drops_total{reason="otlp_rejected_profiles"}' 1 10
grep -q 'msg="OTLP receiver rejected part of a request".*rejected_profiles=1 message="stand-in rejects some"' "$SC_LOG" ||
  fail "partial success not logged"
sleep 1
[ "$(rx_requests "$RX_OUT")" -eq 1 ] || fail "a partial success was retried"
[ "$(spool_pushes)" -eq 0 ] || fail "the push stayed in the spool after a partial success"
stop_sidecar

# 4. Endpoints from the environment.
start_receiver base --path /base/v1development/profiles
OTEL_EXPORTER_OTLP_ENDPOINT="$RX_URL/base/" start_sidecar envbase --export otlp --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service envbase >/dev/null || fail "push"
rx_wait "$RX_OUT" 1 30
rx_clean "$RX_OUT"
stop_sidecar
start_receiver exact --path /exact/path
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:1" OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT="$RX_URL/exact/path" \
  start_sidecar envexact --export otlp --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service envexact >/dev/null || fail "push"
rx_wait "$RX_OUT" 1 30
rx_clean "$RX_OUT"
stop_sidecar

# 5. Bad settings: exit 2, one line naming the setting and the fix.
bad() { # bad WANT_IN_MESSAGE [env...] -- sidecar flags...
  local want=$1 env=()
  shift
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local rc=0
  env "${env[@]}" "$SIDECAR" --socket "$W/bad.sock" --spool "$W/bad-spool" "$@" >"$W/bad.out" 2>"$W/bad.err" || rc=$?
  [ "$rc" -eq 2 ] || fail "exit $rc, want 2, for $*: $(cat "$W/bad.err")"
  [ "$(wc -l <"$W/bad.err")" -eq 1 ] || fail "want one line for $*: $(cat "$W/bad.err")"
  grep -qF -- "$want" "$W/bad.err" || fail "message for $* lacks \"$want\": $(cat "$W/bad.err")"
  ! grep -q SENTINEL "$W/bad.err" || fail "a header value was echoed: $(cat "$W/bad.err")"
  echo "ok bad input: $(cat "$W/bad.err")"
}
bad "otlp+http(s)://HOST:PORT" -- --export otlp+ftp://h:1
bad "names no host" -- --export otlp+http://
bad "must not hold credentials" -- --export "otlp+http://u:SENTINEL@h:1"
bad "--otlp-header: an entry is not KEY=VALUE" -- --export otlp+http://h:1 --otlp-header SENTINEL
bad "holds a character HTTP does not allow" -- --export otlp+http://h:1 --otlp-header "Bad Name=SENTINEL"
bad "\$OTEL_EXPORTER_OTLP_HEADERS: an entry is not KEY=VALUE" OTEL_EXPORTER_OTLP_HEADERS="a=b,SENTINEL" -- --export otlp
bad "the value of header X holds a control character" OTEL_EXPORTER_OTLP_HEADERS="X=SENTINEL%0A" -- --export otlp
bad "OTEL_EXPORTER_OTLP_ENDPOINT" OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" -- --export otlp
bad "is given twice" -- --export file:///tmp/x --export file:///tmp/x
bad "not a URL" -- --export collector:4318
bad "header Content-Type is set by pushprof" -- --export otlp --otlp-header Content-Type=text/plain
echo "ok: 503/429 retried (Retry-After honoured), 400 to failed/ with its message, partial success counted, env endpoints, bad settings refused"
