#!/usr/bin/env bash
# Durability: pushes acked before a kill -9 are all exported after a restart;
# a corrupt spool file is quarantined and the rest proceed; on SIGTERM open
# batches are exported within the grace period.
source "$(dirname "$0")/../lib.sh"

# A window far longer than the test: nothing is exported before the kill.
# No journal here, so every acked push is a spool file at once (the journal's
# own crash case is the next section and test_journal).
start_sidecar a --batch-window 3600 --journal-bytes 0
want_n=0 want_c=0
for i in 1 2 3; do
  read -r n c < <("$GEN" profile "$W/p$i.pb" --seed $((i + 10)) --samples 150)
  want_n=$((want_n + n)) want_c=$((want_c + c))
  "$CLI" push "$W/p$i.pb" --socket "$SOCK" --service durable >/dev/null || fail "push $i"
done
kill9_sidecar
[ -z "$(find "$OUT" -name '*.pb.gz' 2>/dev/null)" ] || fail "exported before the kill; the test proves nothing"
[ -S "$SOCK" ] || fail "expected a stale socket after kill -9"
spooled=$(find "$W/spool" -maxdepth 1 -name '*.push' | wc -l)
[ "$spooled" -eq 3 ] || fail "expected 3 spooled pushes after kill -9, found $spooled"

# A torn file (as if a crash hit mid-write by an older writer) and garbage.
head -c 5000 "$(find "$W/spool" -maxdepth 1 -name '*.push' | head -1)" >"$W/spool/zz-torn.push"
head -c 3000 /dev/urandom >"$W/spool/zz-garbage.push"

# Restart on the stale socket; a short window now.
start_sidecar b --batch-window 1
wait_files "$OUT/testnode/durable" 1 20 || fail "nothing exported after restart"
wait_metric pushprof_spool_quarantined_total 2 10
wait_spool_drained 10
got=$(pprof_totals $(find "$OUT/testnode/durable" -name '*.pb.gz'))
[ "$got" = "$want_n $want_c" ] || fail "after restart exported $got, acked $want_n $want_c"
[ "$(find "$W/spool/quarantine" -type f -name 'zz-*' | wc -l)" -ge 2 ] ||
  fail "corrupt files not in quarantine/: $(ls -R "$W/spool")"
[ -z "$(find "$W/spool" -maxdepth 1 -name '*.push')" ] || fail "spool not empty: $(ls "$W/spool")"

# With the journal (the default): an acked push is held in the journal, with
# no file of its own, until its batch's manifest is durable; a batch window
# of an hour keeps all six there. After a kill -9 the restart replays them
# into spool files before its scan, and every one is exported once.
stop_sidecar
rm -rf "${OUT:?}"/*
start_sidecar j --batch-window 3600
jn=0 jc=0
for i in 1 2 3 4 5 6; do
  read -r n c < <("$GEN" profile "$W/j$i.pb" --seed $((i + 40)) --samples 120)
  jn=$((jn + n)) jc=$((jc + c))
  "$CLI" push "$W/j$i.pb" --socket "$SOCK" --service journaled >/dev/null || fail "journal push $i"
done
[ "$(metric pushprof_spool_files)" -eq 6 ] || fail "want 6 pending pushes, have $(metric pushprof_spool_files)"
kill9_sidecar
[ -z "$(find "$W/spool" -maxdepth 1 -name '*.push')" ] ||
  fail "held pushes got files: $(ls "$W/spool")"
[ -z "$(find "$W/spool/batches" -name '*.batch')" ] || fail "a batch was written within its window"
[ -s "$W/spool/journal" ] || fail "no journal in the spool: $(ls -a "$W/spool")"
start_sidecar k --batch-window 1
grep -q 'msg="spool journal replayed".* records=6' "$SC_LOG" ||
  fail "restart did not replay 6 journal records: $(grep journal "$SC_LOG")"
for _ in $(seq 100); do
  [ "$(metric pushprof_spool_files)" -eq 0 ] && [ -n "$(find "$OUT" -name '*.pb.gz')" ] && break
  sleep 0.1
done
got=$(pprof_totals $(find "$OUT/testnode/journaled" -name '*.pb.gz'))
[ "$got" = "$jn $jc" ] || fail "journal: after kill -9 and restart exported $got, acked $jn $jc"

# SIGTERM with an open batch: exported within the grace period, exit 0.
"$GEN" profile "$W/late.pb" --seed 77 >/dev/null
stop_sidecar
start_sidecar c --batch-window 3600 --shutdown-grace 10
"$CLI" push "$W/late.pb" --socket "$SOCK" --service at-shutdown >/dev/null || fail "late push"
stop_sidecar
wait_files "$OUT/testnode/at-shutdown" 1 1 || fail "open batch not exported on SIGTERM"
pprof_totals $(find "$OUT/testnode/at-shutdown" -name '*.pb.gz') >/dev/null

# SIGTERM while a frame is half read: that frame is still finished and acked,
# new connections are no longer accepted, exit 0.
start_sidecar d --batch-window 3600 --shutdown-grace 5
"$GEN" frame "$W/slow.frame" ok --seed 31 --service in-flight
$RAW "$SOCK" slow "$W/slow.frame" 1.5 >"$W/slow.out" &
slow=$!
for _ in $(seq 50); do grep -q half "$W/slow.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$SC_PID"
sleep 0.5
rc=0; "$CLI" push "$W/late.pb" --socket "$SOCK" 2>/dev/null || rc=$?
[ $rc -eq 3 ] || fail "a new push during shutdown got exit $rc, want 3 (not accepted)"
wait $slow
grep -q '^code=0 ' "$W/slow.out" || fail "frame in flight at SIGTERM: $(cat "$W/slow.out")"
rc=0; wait "$SC_PID" || rc=$?
SC_PID=
[ $rc -eq 0 ] || fail "exit $rc after SIGTERM with a frame in flight"
wait_files "$OUT/testnode/in-flight" 1 1 || fail "the in-flight push was not exported at shutdown"

echo "ok: 3 acked pushes survived kill -9 ($got), 2 corrupt files quarantined, SIGTERM flushed"
