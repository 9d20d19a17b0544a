#!/usr/bin/env bash
# Delivery rules with the Pyroscope stand-in (a test double): 503 and 500
# are retried, 429 waits out its Retry-After, and the batch then arrives
# once; a 403 is permanent: no retry, the push moves to the spool's failed/
# with the reason beside it; a refused connection is retried, never failed;
# a profile older than the server's ingestion window is refused for age:
# counted as too_old and moved to failed/, never retried.
source "$(dirname "$0")/lib_pyroscope.sh"
export PUSHPROF_TEST_BACKOFF_MS=100

# 1. 503, 500, 429 (Retry-After: 2), then accepted.
start_standin retry --fail 503,500,429 --retry-after 2
start_sidecar retry --export "pyroscope+$PY_URL" --batch-window 1
read -r n c < <("$GEN" profile "$W/in.pb" --seed 11 --samples 100)
"$CLI" push "$W/in.pb" --socket "$SOCK" --service flaky >/dev/null || fail "push"
wait_accepted "$PY_OUT" 1 30
no_violations "$PY_OUT"
expect_retried "$PY_OUT/requests.jsonl" "503 500 429 200" 2 3 3
got=$(totals "$PY_OUT" flaky)
[ "$got" = "$n $c" ] || fail "totals $got, pushed $n $c"
stop_sidecar

# 2. 403: permanent, to failed/ with its reason, no retry.
start_standin forbidden --always 403
start_sidecar forbidden --export "pyroscope+$PY_URL" --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service denied >/dev/null || fail "push"
expect_refused_for_good "$PY_OUT/requests.jsonl" 'HTTP 403'
stop_sidecar

# 3. Nothing listening: retried, stays in the spool, not failed.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -f "$W/spool/failed/"*
start_sidecar refused --export "pyroscope+http://127.0.0.1:$port" --batch-window 1
"$CLI" push "$W/in.pb" --socket "$SOCK" --service later >/dev/null || fail "push"
wait_metric pushprof_export_retries_total 2 20
[ -z "$(ls "$W/spool/failed/" 2>/dev/null)" ] || fail "a refused connection failed the batch"
[ "$(metric pushprof_spool_files)" -eq 1 ] || fail "the push is no longer pending: $(ls -R "$W/spool")"
[ "$(find "$W/spool/batches" -name '*.batch' | wc -l)" -eq 1 ] || fail "its batch's manifest is gone: $(ls -R "$W/spool")"
stop_sidecar
echo "ok: 503/500/429 retried (Retry-After honoured), 403 to failed/, refused connection retried"

# 4. A backlog older than Pyroscope's ingestion window: refused for age,
#    counted as too_old, moved to failed/ with that reason, never retried;
#    a fresh profile still goes in.
rm -rf "$W/spool/failed"
start_standin old --reject-older-than 3600
start_sidecar old --export "pyroscope+$PY_URL" --batch-window 1
"$B/tests/gen_otlp_pprof" "$W/old.pb" --samples 20 || fail "gen_otlp_pprof" # time: 2023
"$CLI" push "$W/old.pb" --socket "$SOCK" --service stale >/dev/null || fail "push old"
"$B/tests/gen_otlp_pprof" "$W/fresh.pb" --samples 60 --now || fail "gen_otlp_pprof --now"
"$CLI" push "$W/fresh.pb" --socket "$SOCK" --service fresh >/dev/null || fail "push fresh"
wait_accepted "$PY_OUT" 1 30
wait_metric 'pushprof_drops_total{reason="too_old"}' 1 20
reason=$(cat "$W/spool/failed/"*.reason 2>/dev/null) || fail "nothing in failed/ after a refusal for age"
echo "$reason" | grep -q 'refused for age.*outside of ingestion window' || fail "failed/ reason: $reason"
sleep 1
[ "$(grep -c '"too_old"' "$PY_OUT/requests.jsonl")" -eq 1 ] || fail "a refusal for age was retried"
no_violations "$PY_OUT"
# Span profiles: the span_id labels (16 hex) reach Pyroscope inside the pprof.
wait_accepted "$PY_OUT" 2 30 # fresh, and the push step 3 left in the spool
found=
for f in "$PY_OUT"/prof-*.pprof; do
  go tool pprof -raw "$f" 2>/dev/null | grep -q 'span_id:\[00f067aa0ba902b7\]' && found=$f
done
[ -n "$found" ] || fail "span_id labels did not reach the stand-in"
stop_sidecar
echo "ok: a profile older than the ingestion window went to failed/ as too_old; span_id labels reach Pyroscope"
