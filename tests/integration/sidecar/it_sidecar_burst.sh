#!/usr/bin/env bash
# A burst: 1,000 cron jobs pushing at the same instant, each a
# ~130 KiB profile of its own service, one connection each (bench_sidecar
# --clients 1000: every thread waits for one start signal). Each push is
# acked or told to retry (too many connections, memory budget, busy), and
# retried until acked, as the SDK does; none is lost: every service is
# exported exactly once. RSS, sampled every 100 ms, stays under
# --max-memory (48 MiB).
source "$(dirname "$0")/../lib.sh"
N=${PUSHPROF_BURST_PUSHES:-1000}
BENCH=$B/tests/bench_sidecar
[ -x "$BENCH" ] || fail "bench_sidecar not built"
rss_limit=$((48 * 1024))
if grep -q '^PUSHPROF_SANITIZE:[A-Z]*=[a-z]' "$B/CMakeCache.txt" 2>/dev/null; then
  rss_limit=$((1 << 20)) # ASan's shadow memory alone exceeds the bound; figures are printed
  N=${PUSHPROF_BURST_PUSHES:-200} # an instrumented sidecar: the same races, CI time kept
fi

start_sidecar burst --batch-window 1 --max-memory 48MiB
(while kill -0 "$SC_PID" 2>/dev/null; do
  awk '/VmRSS/ {print $2}' "/proc/$SC_PID/status" 2>/dev/null >>"$W/rss.log" || true
  sleep 0.1
done) &
"$BENCH" --socket "$SOCK" --size 133120 --clients "$N" --count "$N" --variants 1 \
  --distinct-services --retry --timeout-ms 60000 >"$W/bench.out" 2>"$W/bench.err" ||
  fail "bench_sidecar failed: $(cat "$W/bench.out" "$W/bench.err")"
acked=$(sed -n 's/.* acked=\([0-9]*\) .*/\1/p' "$W/bench.out")
retried=$(sed -n 's/.* retried=\([0-9]*\).*/\1/p' "$W/bench.out")
[ "$acked" = "$N" ] || fail "$acked of $N pushes acked: $(cat "$W/bench.out" "$W/bench.err")"
for _ in $(seq 1200); do
  [ "$(metric pushprof_pending_batches)" -eq 0 ] && [ "$(metric pushprof_spool_files)" -eq 0 ] &&
    [ "$(metric pushprof_batches_exported_total)" -ge "$N" ] && break
  sleep 0.1
done
exported=$(metric pushprof_batches_exported_total)
[ "$exported" -eq "$N" ] || fail "$exported batches exported, want $N"
[ "$(metric pushprof_spool_files)" -eq 0 ] || fail "spool not drained"
metrics >"$W/metrics.txt"
! grep -q '^pushprof_drops_total{' "$W/metrics.txt" || fail "drops: $(grep '^pushprof_drops_total{' "$W/metrics.txt")"
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SC_PID/status")
refused=$(metrics | awk -F'[ ]' '/^pushprof_pushes_rejected_total\{/ {s += $2} END {print s + 0}')
stop_sidecar
peak=$(sort -n "$W/rss.log" | tail -1)
[ "$hwm" -le "$rss_limit" ] || fail "RSS peak $((hwm / 1024)) MiB over $((rss_limit / 1024)) MiB"
n=$(find "$OUT" -name '*.pb.gz' | wc -l)
svcs=$(find "$OUT" -name '*.pb.gz' -printf '%h\n' | sort -u | wc -l)
[ "$n" -eq "$N" ] && [ "$svcs" -eq "$N" ] || fail "$n files in $svcs service directories, want $N in $N"
echo "ok: burst of $N pushes: all acked ($retried retries after $refused refusals), each exported once; RSS peak $((hwm / 1024)) MiB (sampled $((peak / 1024)) MiB)"
