#!/usr/bin/env bash
# Two targets at once: file:// (the archive) and OTLP (the live backend),
# the OTLP one down for a while. The file target keeps receiving; each push
# stays in the spool until both have it, then leaves; /metrics shows each
# target's counters. A SIGKILL while OTLP is down, then a restart with it
# up: the recovered batches reach OTLP and the file target still holds each
# batch once (the same object names: nothing sent twice there).
source "$(dirname "$0")/lib_otlp.sh"
export PUSHPROF_TEST_BACKOFF_MS=200
port=$(free_port)
url="otlp+http://127.0.0.1:$port"
start_sidecar multi --export "file://$OUT" --export "$url" --batch-window 1
for i in 1 2 3; do
  "$GEN" profile "$W/in$i.pb" --seed "$i" --samples 50 >"$W/in$i.tot"
  "$CLI" push "$W/in$i.pb" --socket "$SOCK" --service "svc$i" >/dev/null || fail "push $i"
done
wait_files "$OUT" 3 30 || fail "the file target did not get 3 batches while OTLP was down"
wait_metric "pushprof_target_export_retries_total{target=\"$url\"}" 3 30
[ "$(metric "pushprof_target_batches_exported_total{target=\"file://$OUT\"}")" -eq 3 ] ||
  fail "file target counter: $(metrics | grep '^pushprof_target')"
[ "$(metric "pushprof_target_pending_batches{target=\"$url\"}")" -eq 3 ] ||
  fail "OTLP pending gauge: $(metrics | grep '^pushprof_target')"
[ "$(metric "pushprof_target_pending_batches{target=\"file://$OUT\"}")" -eq 0 ] ||
  fail "file pending gauge: $(metrics | grep '^pushprof_target')"
[ "$(spool_pushes)" -eq 3 ] || fail "pushes left the spool before OTLP had them: $(spool_pushes) left"
# Their batches' manifests hold them meanwhile (the pushes' own copies went
# once those were durable).
[ "$(find "$W/spool/batches" -name '*.batch' | wc -l)" -eq 3 ] ||
  fail "want 3 pending batch manifests: $(ls "$W/spool/batches")"
metrics | grep '^pushprof_target' | sed 's/^/  /'

# A crash while OTLP is down; OTLP comes back before the restart.
kill9_sidecar
start_receiver live --port "$port"
start_sidecar multi2 --export "file://$OUT" --export "$url" --batch-window 1
rx_wait "$RX_OUT" 3 30
rx_clean "$RX_OUT"
for _ in $(seq 100); do
  [ "$(spool_pushes)" -eq 0 ] && break
  sleep 0.1
done
[ "$(spool_pushes)" -eq 0 ] || fail "pushes stayed in the spool after both targets had them"
[ "$(find "$OUT" -name '*.pb.gz' | wc -l)" -eq 3 ] || fail "the file target holds $(find "$OUT" -name '*.pb.gz' | wc -l) objects, want 3"
for i in 1 2 3; do
  read -r n c <"$W/in$i.tot"
  got=$(pprof_totals "$OUT"/testnode/svc$i/*.pb.gz)
  [ "$got" = "$n $c" ] || fail "svc$i file totals $got, pushed $n $c"
  got=$(rx_q "$RX_OUT" '" ".join(str(sum(p["total"] for p in profs if p["type"] == t and p["resource"]["service.name"] == "svc'$i'")) for t in ("samples/count", "cpu/nanoseconds"))')
  [ "$got" = "$n $c" ] || fail "svc$i OTLP totals $got, pushed $n $c"
done
[ "$(rx_accepted "$RX_OUT")" -eq 3 ] || fail "OTLP got $(rx_accepted "$RX_OUT") requests, want 3"
stop_sidecar
echo "ok: file kept receiving while OTLP was down, pushes stayed until both had them, a crash sent nothing twice to the file target"
