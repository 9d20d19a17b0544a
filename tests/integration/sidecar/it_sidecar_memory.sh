#!/usr/bin/env bash
# The resident-memory guard of --max-memory, end to end. The fixed part is
# measured at start and reported; a push that arrives while the RSS is over
# the guard's limit waits, then is told to retry (UNAVAILABLE, counted as
# memory_rss), and an SDK drop-in stays on disk; once there is room, both
# go through. The limit is forced with the test hook PUSHPROF_TEST_RSS_LIMIT
# (bytes): filling the sidecar's memory for real would take minutes.
source "$(dirname "$0")/../lib.sh"

"$GEN" profile "$W/in.pb.gz" --seed 3 --samples 50 --gzip >/dev/null
"$GEN" frame "$W/dropin.frame" ok --seed 21 --service dropped-in

PUSHPROF_TEST_RSS_LIMIT=1 start_sidecar over --rescan-interval 1 --max-memory 48MiB
fixed=$(metric pushprof_memory_fixed_bytes)
[ "$fixed" -gt $((1 << 20)) ] || fail "pushprof_memory_fixed_bytes is $fixed"
[ "$(metric pushprof_memory_rss_limit_bytes)" -eq 1 ] || fail "the test hook's limit is not in /metrics"
grep -q "msg=\"memory budget\" max_memory=$((48 << 20)) fixed=$fixed " "$SC_LOG" ||
  fail "no start-up line with the fixed part: $(grep 'memory budget' "$SC_LOG")"

rc=0
"$CLI" push "$W/in.pb.gz" --socket "$SOCK" --service over --timeout 10 >"$W/push.out" 2>"$W/push.err" || rc=$?
[ "$rc" -eq 1 ] || fail "push over the RSS limit exited $rc, want 1 (refused): $(cat "$W/push.out" "$W/push.err")"
grep -q 'UNAVAILABLE.*--max-memory 48 MiB' "$W/push.err" || fail "refusal does not name the limit: $(cat "$W/push.err")"
[ "$(rejected memory_rss)" -ge 1 ] || fail "no memory_rss rejection counted"
[ "$(metric pushprof_pushes_accepted_total)" -eq 0 ] || fail "a push was accepted over the limit"

cp "$W/dropin.frame" "$W/spool/.sdk-1.push"
mv "$W/spool/.sdk-1.push" "$W/spool/sdk-1.push"
sleep 3 # three rescans
! grep -q 'spool drop-ins picked up' "$SC_LOG" || fail "the drop-in was taken over the RSS limit"
[ "$(metric pushprof_pending_batches)" -eq 0 ] || fail "a batch is pending: the drop-in was taken"
[ -f "$W/spool/sdk-1.push" ] || fail "the drop-in left the spool"
grep -q 'spool drop-ins left for later' "$SC_LOG" || fail "deferring the drop-in was not logged"
[ "$(grep -c 'spool drop-ins left for later' "$SC_LOG")" -eq 1 ] || fail "the deferral was logged more than once"
stop_sidecar

# Room again (the default guard): the drop-in is picked up, a push acked.
start_sidecar room --rescan-interval 1 --max-memory 48MiB --batch-window 1
"$CLI" push "$W/in.pb.gz" --socket "$SOCK" --service room >/dev/null || fail "push with room refused"
wait_files "$OUT/testnode/dropped-in" 1 20 || fail "the drop-in was not exported once there was room"
wait_files "$OUT/testnode/room" 1 20 || fail "the push was not exported"
stop_sidecar
echo "ok: fixed part $((fixed >> 20)) MiB; over the limit a push is refused (memory_rss) and a drop-in waits; with room both go through"
