#!/usr/bin/env bash
# Off-CPU and lock profiles of a real process through the sidecar into the
# strict OTLP receiver (tests/integration/otlp): one Profile per sample
# type, so each push becomes a contentions/count Profile and a
# delay/nanoseconds one, whose totals are the exported batches' own (the
# same run exports to a file:// target too, read with go tool pprof -raw);
# the waiting sites are in the stacks.
source "$(dirname "$0")/../otlp/lib_otlp.sh"
start_receiver wait
start_sidecar wait --export "otlp+$RX_URL" --export "file://$OUT" --batch-window 1
PRELOAD=$PRELOAD_WAIT
export PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=waitsvc PUSHPROF_PROFILES=offcpu,lock \
  PUSHPROF_EXIT_TIMEOUT_MS=10000
run_workload preload wl_wait_sites 1
rx_wait "$RX_OUT" 2 40
rx_clean "$RX_OUT"
wait_files "$OUT" 2 30 || fail "no file batches: $(find "$OUT")"
types=$(rx_q "$RX_OUT" 'sorted(p["type"] for p in profs if p["resource"]["service.name"] == "waitsvc")')
[ "$types" = "['contentions/count', 'contentions/count', 'delay/nanoseconds', 'delay/nanoseconds']" ] ||
  fail "OTLP profiles of waitsvc: $types"
got=$(rx_q "$RX_OUT" 'sorted(p["total"] for p in profs if p["type"] == "delay/nanoseconds")')
sum_otlp=$(python3 -c "print(sum($got))")
sum_files=0
for kind in offcpu lock; do
  f=$(find "$OUT" -name "*-$kind-*.pb.gz" | head -1)
  [ -n "$f" ] || fail "no $kind batch in $(find "$OUT")"
  v=$("${CHECK[@]}" "$f" --value delay/nanoseconds | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["total"]["delay/nanoseconds"]))')
  sum_files=$((sum_files + v))
done
[ "$sum_otlp" -eq "$sum_files" ] || fail "OTLP delay total $sum_otlp ns, the file batches' $sum_files ns"
stacks=$(rx_q "$RX_OUT" '" ".join(k for p in profs if p["type"] == "delay/nanoseconds" for k in p["stacks"])')
for fn in site_sleep site_pipe site_lock; do
  grep -q "$fn" <<<"$stacks" || fail "no $fn in the OTLP stacks"
done
stop_sidecar
echo "pass: delay $sum_otlp ns in OTLP as in the files"
