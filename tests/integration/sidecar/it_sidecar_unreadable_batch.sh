#!/usr/bin/env bash
# A sealed batch whose manifest becomes unreadable while its target is down:
# the file:// target's node directory is a plain file, so every export
# fails and the batch waits in its manifest; then every pending manifest is
# cut short by one byte and the target comes back. A durable manifest is
# its batch's only copy (the pushes left the spool when it was written), so
# the sidecar sets each cut manifest aside and drops its batch: every push
# in it is counted (drops_total{reason="batch_unreadable"}) and logged,
# nothing half-read is exported, the spool drains, and later pushes export
# as usual.
source "$(dirname "$0")/../lib.sh"
export PUSHPROF_TEST_BACKOFF_MS=200
mkdir -p "$OUT"
: >"$OUT/testnode" # not a directory: the target is down
start_sidecar a --batch-window 1
for i in 1 2 3; do
  "$GEN" profile "$W/p$i.pb" --seed $((i + 60)) --samples 100 >/dev/null
  "$CLI" push "$W/p$i.pb" --socket "$SOCK" --service unreadable >/dev/null || fail "push $i"
done
wait_metric pushprof_export_retries_total 1 20
sleep 1.5 # every window has ended: all three pushes are in manifests
[ -z "$(find "$W/spool" -maxdepth 1 -name '*.push')" ] || fail "pushes in files: $(ls "$W/spool")"
cut=0
for f in "$W"/spool/batches/*.batch; do
  [ -f "$f" ] || continue
  truncate -s -1 "$f" && cut=$((cut + 1))
done
[ $cut -ge 1 ] || fail "no pending manifest to cut: $(ls -a "$W/spool/batches")"
rm "$OUT/testnode"
for _ in $(seq 100); do
  [ "$(metric pushprof_spool_files)" -eq 0 ] && [ "$(metric pushprof_pending_batches)" -eq 0 ] && break
  sleep 0.1
done
[ "$(metric pushprof_spool_files)" -eq 0 ] || fail "spool not drained: $(ls "$W/spool")"
[ "$(metric pushprof_pending_batches)" -eq 0 ] || fail "batches still pending"
[ "$(metric pushprof_batch_manifests_set_aside_total)" -eq $cut ] ||
  fail "set aside $(metric pushprof_batch_manifests_set_aside_total) manifests, cut $cut"
[ "$(metric 'pushprof_drops_total{reason="batch_unreadable"}')" -eq 3 ] ||
  fail "dropped $(metric 'pushprof_drops_total{reason="batch_unreadable"}') pushes, want 3"
[ "$(grep -c 'msg="batch dropped: its manifest, the only copy of its pushes, is unreadable"' "$SC_LOG")" -eq $cut ] ||
  fail "drops not logged per batch: $(grep -E 'dropped|set aside' "$SC_LOG")"
[ -z "$(find "$OUT" -name '*.pb.gz')" ] || fail "a cut batch was exported: $(find "$OUT" -name '*.pb.gz')"
# The sidecar goes on: a new push is exported whole.
read -r n c < <("$GEN" profile "$W/p4.pb" --seed 64 --samples 100)
"$CLI" push "$W/p4.pb" --socket "$SOCK" --service after >/dev/null || fail "push after"
wait_files "$OUT/testnode/after" 1 20 || fail "nothing exported after the drop"
got=$(pprof_totals $(find "$OUT/testnode/after" -name '*.pb.gz'))
[ "$got" = "$n $c" ] || fail "exported $got, pushed $n $c"
stop_sidecar
echo "ok: $cut cut manifest(s) set aside, their 3 pushes counted as dropped, later pushes exported"
