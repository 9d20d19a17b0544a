#!/usr/bin/env bash
# Sidecar memory through an export outage. Not a test: prints
# figures, never fails on them.
#
#   bash tests/bench/outage_bench.sh [--build DIR] [--pending N,N,...] [--size BYTES]
#        [--window SECONDS] [--max-memory SIZE] [--rows FILE] [--no-build]
#
# For each N (default 0,1000,3000,10000): a fresh sidecar exports to S3 at a
# closed port; bench_sidecar pushes N pushes of --size bytes (default 133120,
# ~130 KiB, bench_sidecar's realistic profiles), each with its own service
# (so its own batch; --max-spool-bytes 4GiB so 10,000 fit), from 8 clients that retry what the sidecar asks them to;
# RSS is sampled every 100 ms while pushing and until every batch is sealed
# and pending. Then the sidecar is SIGKILLed and started again on the same
# spool: the restart time is until /metrics shows the N batches pending, and
# the RSS peak of the restarted sidecar is read from VmHWM.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib_bench.sh
build=build pending=0,1000,3000,10000 size=133120 window=5 max_memory="" rows="" build_it=1
bench_args outage_bench "build pending size window max-memory rows" "$@"
bench_build pushprof-sidecar bench_sidecar
B=$(realpath "$build")
bench_workdir outage
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI
mem_args=()
[ -n "$max_memory" ] && mem_args=(--max-memory "$max_memory")

metric() { curl -sf "http://127.0.0.1:$2/metrics" | awk -v k="$1" '$1 == k {print $2}' || true; }
kib() { awk "/$1/ {print \$2}" "/proc/$2/status"; }

# start_sidecar NAME: sets sc (pid) and mport
start_sidecar() {
  mport=$(free_port)
  "$B/sidecar/pushprof-sidecar" --socket "$W/s.sock" --spool "$W/spool" --export s3://bench/p \
    --s3-endpoint "http://127.0.0.1:$dead" --batch-window "$window" --node-name bench \
    --metrics-addr "127.0.0.1:$mport" --max-spool-bytes 4GiB "${mem_args[@]}" 2>>"$W/$1.log" &
  sc=$!
  pids+=("$sc")
  for _ in $(seq 200); do [ -S "$W/s.sock" ] && curl -sf -o /dev/null "http://127.0.0.1:$mport/healthz" && return; sleep 0.05; done
  echo "outage_bench: sidecar did not start (see $1.log)" >&2
  cat "$W/$1.log" >&2
  exit 2
}

# sample PID FILE: VmRSS in KiB every 100 ms until PID ends or FILE.stop exists
sample() {
  while [ ! -e "$2.stop" ] && [ -e "/proc/$1" ]; do
    awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null >>"$2" || true
    sleep 0.1
  done
}

wait_pending() { # N PORT LIMIT_S -> prints seconds waited
  local t0 p
  t0=$(date +%s.%N)
  for _ in $(seq $(($3 * 20))); do
    p=$(metric pushprof_pending_batches "$2")
    [ "${p:-0}" -ge "$1" ] && break
    sleep 0.05
  done
  python3 -c "import time,sys; print('%.2f' % (time.time() - float(sys.argv[1])))" "$t0"
}

printf '| pending batches | RSS peak while pushing and pending (MiB) | RSS after (MiB) | restart to all pending (s) | RSS peak after restart (MiB) | retried pushes |\n|---|---|---|---|---|---|\n'
IFS=, read -ra ns <<<"$pending"
for n in "${ns[@]}"; do
  rm -rf "$W/spool" "$W"/rss.*
  dead=$(free_port)
  start_sidecar "run$n"
  sample "$sc" "$W/rss.push" &
  sp=$!
  out="retried=0"
  if ((n > 0)); then
    out=$("$B/tests/bench_sidecar" --socket "$W/s.sock" --size "$size" --clients 8 --count "$n" \
      --distinct-services --retry --timeout-ms 30000)
    wait_pending "$n" "$mport" 600 >/dev/null
    sleep 1
  else
    sleep 3
  fi
  touch "$W/rss.push.stop"
  wait "$sp" || true
  peak=$(($(kib VmHWM "$sc") / 1024))
  now=$(($(kib VmRSS "$sc") / 1024))
  kill -KILL "$sc"
  wait "$sc" 2>/dev/null || true
  # restart on the same spool
  rm -f "$W/s.sock"
  t0=$(date +%s.%N)
  start_sidecar "restart$n"
  waited=$(wait_pending "$n" "$mport" 120)
  rt=$(python3 -c "import time,sys; print('%.2f' % (time.time() - float(sys.argv[1])))" "$t0")
  sleep 1
  rpeak=$(($(kib VmHWM "$sc") / 1024))
  kill -KILL "$sc"
  wait "$sc" 2>/dev/null || true
  rm -f "$W/s.sock"
  retried=$(sed -n 's/.*retried=\([0-9]*\).*/\1/p' <<<"$out")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$n" "$peak" "$now" "$rt" "$rpeak" "${retried:-0}"
  if [ -n "$rows" ]; then
    # The targets: <= 48 MiB at 3,000 pending, <= 64 MiB and a
    # restart within 5 s at 10,000.
    rss_target="" rt_target=""
    ((n == 3000)) && rss_target="<= 48"
    ((n == 10000)) && rss_target="<= 64" rt_target="<= 5"
    python3 tests/bench/benchrows.py add "$rows" "outage_rss_$n" \
      "Sidecar RSS peak, $n batches pending, S3 down (MiB)" "$rss_target" 0 "$peak"
    if ((n > 0)); then
      python3 tests/bench/benchrows.py add "$rows" "outage_restart_s_$n" \
        "Sidecar restart with $n batches pending, until all are pending again (s)" "$rt_target" 2 "$rt"
    fi
  fi
done
