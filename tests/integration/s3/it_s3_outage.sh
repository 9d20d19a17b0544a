#!/usr/bin/env bash
# A long S3 outage under a memory limit. The S3-compatible server
# (s3rver) is down for the whole push phase: N pushes of ~130 KiB, each with
# its own service (so its own batch), from 8 clients that retry what the
# sidecar asks them to retry. Halfway through, the sidecar is SIGKILLed and
# started again on the same spool (the clients keep retrying meanwhile). RSS
# is sampled every 100 ms throughout, both sidecars: it must stay under
# --max-memory (48 MiB); the restart must be quick. Then s3rver starts:
# every push arrives exactly once (one object per service, N services), and
# the spool drains.
#
# N is 3,000 (~45 s), 600 in a sanitizer build (PUSHPROF_OUTAGE_PUSHES
# overrides; tests/bench/outage_bench.sh measures 1,000 to 10,000 pending).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/lib_s3.sh"
N=3000
BENCH=$B/tests/bench_sidecar
[ -x "$BENCH" ] || fail "bench_sidecar not built"
rss_limit=$((48 * 1024)) restart_limit=5 sanitized=
if grep -q '^PUSHPROF_SANITIZE:[A-Z]*=[a-z]' "$B/CMakeCache.txt" 2>/dev/null; then
  # ASan's shadow memory and quarantine alone exceed the bound; figures are printed.
  rss_limit=$((1 << 20)) restart_limit=30 N=600 sanitized=1
fi
N=${PUSHPROF_OUTAGE_PUSHES:-$N}

ensure_s3rver
S3RVER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 # s3rver's own account
export PUSHPROF_TEST_BACKOFF_MS=200
SC_ARGS=(--export s3://outage/p --s3-endpoint "http://127.0.0.1:$S3RVER_PORT" --batch-window 1
  --max-memory 48MiB --rescan-interval 1)

# sample PID: VmRSS (KiB) every 100 ms into $W/rss.log until PID ends.
sample() {
  while kill -0 "$1" 2>/dev/null; do
    awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null >>"$W/rss.log" || true
    sleep 0.1
  done
}

# The S3 exporter's libraries make the fixed part larger than what 16 MiB
# leaves the budget: refused at start, naming the flag and the size that fits.
if [ -z "$sanitized" ]; then
  rc=0
  "$SIDECAR" --socket "$W/small.sock" --spool "$W/small-spool" "${SC_ARGS[@]}" \
    --max-memory 16MiB 2>"$W/small.err" || rc=$?
  [ "$rc" -eq 2 ] || fail "--max-memory 16MiB with an S3 target exited $rc, want 2"
  grep -q -- '--max-memory 16 MiB is too small.*set --max-memory to [0-9]* MiB or more' \
    "$W/small.err" || fail "no clear message for a too small --max-memory: $(cat "$W/small.err")"
fi

start_sidecar outage1 "${SC_ARGS[@]}"
# The fixed part is measured once the exporter is up and reported; the rest
# of --max-memory is the budget, and the RSS guard sits inside the limit.
fixed=$(metric pushprof_memory_fixed_bytes)
guard=$(metric pushprof_memory_rss_limit_bytes)
grep -q "msg=\"memory budget\" max_memory=$((48 << 20)) fixed=$fixed " "$SC_LOG" ||
  fail "no start-up line with the fixed part $fixed: $(grep 'memory budget' "$SC_LOG")"
[ "$fixed" -gt $((4 << 20)) ] || fail "pushprof_memory_fixed_bytes is $fixed"
if [ -z "$sanitized" ]; then
  [ "$guard" -gt "$fixed" ] && [ "$guard" -lt $((48 << 20)) ] ||
    fail "pushprof_memory_rss_limit_bytes is $guard (fixed $fixed, limit $((48 << 20)))"
fi
sample "$SC_PID" &
"$BENCH" --socket "$SOCK" --size 133120 --clients 8 --count "$N" --distinct-services --retry \
  --timeout-ms 30000 >"$W/bench.out" 2>"$W/bench.err" &
BENCH_PID=$!
for _ in $(seq 1200); do
  [ "$(metric pushprof_pushes_accepted_total)" -ge $((N / 2)) ] && break
  kill -0 "$BENCH_PID" 2>/dev/null || break
  sleep 0.1
done
[ "$(metric pushprof_pushes_accepted_total)" -ge $((N / 2)) ] || fail "only $(metric pushprof_pushes_accepted_total) of $((N / 2)) pushes acked before the kill"
hwm1=$(awk '/VmHWM/ {print $2}' "/proc/$SC_PID/status")
kill9_sidecar
t0=$(date +%s%N)
start_sidecar outage2 "${SC_ARGS[@]}"
t_start=$((($(date +%s%N) - t0) / 1000000))
sample "$SC_PID" &
wait "$BENCH_PID" || fail "bench_sidecar failed: $(cat "$W/bench.err")"
acked=$(sed -n 's/.* acked=\([0-9]*\) .*/\1/p' "$W/bench.out")
[ "$acked" = "$N" ] || fail "$acked of $N pushes acked: $(cat "$W/bench.out" "$W/bench.err")"
for _ in $(seq 600); do
  [ "$(metric pushprof_pending_batches)" -ge "$N" ] && break
  sleep 0.1
done
pending=$(metric pushprof_pending_batches)
[ "$pending" -ge "$N" ] || fail "$pending batches pending, expected $N"
hwm2=$(awk '/VmHWM/ {print $2}' "/proc/$SC_PID/status")
peak=$(sort -n "$W/rss.log" | tail -1)
for v in "$hwm1" "$hwm2" "$peak"; do
  [ "$v" -le "$rss_limit" ] || fail "RSS reached $((v / 1024)) MiB (limit $((rss_limit / 1024)) MiB): first sidecar peak $((hwm1 / 1024)), second $((hwm2 / 1024)), sampled $((peak / 1024))"
done
[ "$t_start" -le $((restart_limit * 1000)) ] || fail "restart took $t_start ms"
budget=$(metric pushprof_memory_budget_bytes)
[ "$budget" -eq $((48 << 20)) ] || fail "pushprof_memory_budget_bytes is $budget"
# Read whole, then searched: grep -q on the pipe would stop curl mid-write
# (SIGPIPE, a failed pipeline under pipefail).
metrics >"$W/metrics.txt"
grep -q '^pushprof_memory_in_use_bytes [0-9]' "$W/metrics.txt" || fail "no pushprof_memory_in_use_bytes"
grep -q '^process_resident_memory_bytes [1-9]' "$W/metrics.txt" || fail "no process_resident_memory_bytes"
retried=$(sed -n 's/.* retried=\([0-9]*\).*/\1/p' "$W/bench.out")
echo "outage: fixed part $((fixed >> 20)) MiB, RSS guard at $((guard >> 20)) MiB; $N pushes acked ($retried retried), $pending batches pending; RSS peak $((hwm1 / 1024)) MiB before the SIGKILL, $((hwm2 / 1024)) MiB after (sampled max $((peak / 1024)) MiB); restart $t_start ms"

# The server comes back: everything arrives, once.
mkdir -p "$W/s3data"
"$NPM_DIR/node_modules/.bin/s3rver" -d "$W/s3data" -a 127.0.0.1 -p "$S3RVER_PORT" --silent \
  --no-vhost-buckets --configure-bucket outage >"$W/s3rver.log" 2>&1 &
S3RVER_PID=$!
for _ in $(seq 1800); do
  [ "$(metric pushprof_pending_batches)" -eq 0 ] && [ "$(metric pushprof_spool_files)" -eq 0 ] && break
  kill -0 "$S3RVER_PID" 2>/dev/null || { cat "$W/s3rver.log" >&2; fail "s3rver exited"; }
  sleep 0.1
done
[ "$(metric pushprof_pending_batches)" -eq 0 ] || fail "$(metric pushprof_pending_batches) batches still pending after 180 s"
[ "$(metric pushprof_spool_files)" -eq 0 ] || fail "spool not drained: $(metric pushprof_spool_files) files"
hwm3=$(awk '/VmHWM/ {print $2}' "/proc/$SC_PID/status")
[ "$hwm3" -le "$rss_limit" ] || fail "RSS reached $((hwm3 / 1024)) MiB while draining"
stop_sidecar
# s3rver keeps each object as a directory of files under the key's path.
python3 - "$W/s3data/outage" "$N" <<'PY' || fail "objects in S3 do not match the pushes"
import collections, os, re, sys
root, n = sys.argv[1], int(sys.argv[2])
per = collections.Counter()
for d, _, files in os.walk(root):
    for f in files:
        if f.endswith(".pb.gz._S3rver_object"):
            m = re.search(r"/p/testnode/(bench-\d{4}-\d{6})$", d)
            if not m:
                sys.exit("unexpected object %s/%s" % (d, f))
            per[m.group(1)] += 1
twice = [s for s, c in per.items() if c != 1]
if twice or len(per) != n:
    sys.exit("%d services arrived (want %d); more than once: %s" % (len(per), n, twice[:5]))
print("s3: %d objects, one per push" % len(per))
PY
echo "ok: $N pushes through an outage and a SIGKILL, each exported exactly once; RSS <= $((rss_limit / 1024)) MiB"
