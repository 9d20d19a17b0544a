#!/usr/bin/env bash
# A sealed batch whose manifest becomes unreadable while its target is down:
# the file:// target's node directory is a plain file, so every export
# fails and the batch waits in its manifest; then every pending manifest is
# cut short by one byte and the target comes back. The sidecar sets each
# manifest aside (counted) and rebuilds its batch from the pushes it still
# holds in the spool, byte for byte (so under the object name the first
# attempts used): every acked push arrives exactly once, long before
# --max-batch-age, and the spool drains.
source "$(dirname "$0")/lib.sh"
export PUSHPROF_TEST_BACKOFF_MS=200
mkdir -p "$OUT"
: >"$OUT/testnode" # not a directory: the target is down
start_sidecar a --batch-window 1
want_n=0 want_c=0
for i in 1 2 3; do
  read -r n c < <("$GEN" profile "$W/p$i.pb" --seed $((i + 60)) --samples 100)
  want_n=$((want_n + n)) want_c=$((want_c + c))
  "$CLI" push "$W/p$i.pb" --socket "$SOCK" --service unreadable >/dev/null || fail "push $i"
done
wait_metric pushprof_export_retries_total 1 20
cut=0
for f in "$W"/spool/batches/*.batch; do
  [ -f "$f" ] || continue
  truncate -s -1 "$f" && cut=$((cut + 1))
done
[ $cut -ge 1 ] || fail "no pending manifest to cut: $(ls -a "$W/spool/batches")"
rm "$OUT/testnode"
wait_files "$OUT/testnode/unreadable" 1 20 || fail "nothing exported after the manifest was cut"
for _ in $(seq 100); do
  [ "$(metric pushprof_spool_files)" -eq 0 ] && [ "$(metric pushprof_pending_batches)" -eq 0 ] && break
  sleep 0.1
done
[ "$(metric pushprof_spool_files)" -eq 0 ] || fail "spool not drained: $(ls "$W/spool")"
[ "$(metric pushprof_batch_manifests_set_aside_total)" -eq $cut ] ||
  fail "set aside $(metric pushprof_batch_manifests_set_aside_total) manifests, cut $cut"
got=$(pprof_totals $(find "$OUT/testnode/unreadable" -name '*.pb.gz'))
[ "$got" = "$want_n $want_c" ] || fail "exported $got, acked $want_n $want_c"
[ "$(grep -c 'msg="batch rebuilt from its pushes: same bytes, same object key"' "$SC_LOG")" -eq $cut ] ||
  fail "not every batch was rebuilt to the same bytes: $(grep -E 'rebuilt|set aside' "$SC_LOG")"
[ "$(metric 'pushprof_drops_total{reason="batch_unreadable"}')" -eq 0 ] || fail "pushes dropped"
stop_sidecar
echo "ok: $cut cut manifest(s) set aside, batches rebuilt, exported once ($got)"
