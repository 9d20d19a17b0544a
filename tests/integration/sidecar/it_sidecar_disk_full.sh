#!/usr/bin/env bash
# Disk full: the spool on a 2 MiB tmpfs. Pushes past the space left are
# refused with RESOURCE_EXHAUSTED (counted as disk_full), leave no temp file,
# and are accepted again by the same sidecar process once space returns:
# first because exports free the spool, then after another tenant's file
# filling the disk is removed. Every acked push is exported, samples summed.
# Then again with the write-ahead journal, which can still ack into its
# preallocated ring on a full disk: those pushes are exported once it frees.
# Skips (exit 77) only if this environment cannot mount a tmpfs.
source "$(dirname "$0")/../lib.sh"
mkdir -p "$W/spool"
if ! mount -t tmpfs -o size=2m,mode=0750 tmpfs "$W/spool" 2>"$W/mount.err"; then
  echo "SKIP: cannot mount a tmpfs as the spool ($(cat "$W/mount.err")); needs root or CAP_SYS_ADMIN"
  exit 77
fi
trap 'rc=$?; [ -z "$SC_PID" ] || kill -9 "$SC_PID" 2>/dev/null; wait 2>/dev/null; umount -l "$W/spool"; (exit $rc); on_exit' EXIT

no_temps() { # no half-written push may stay behind
  local t
  t=$(find "$W/spool" -maxdepth 1 -name '.*.push')
  [ -z "$t" ] || fail "$1: temp files left in the spool: $t"
}

want_n=0 want_c=0 acked=0
# push FILE N C: 0 if acked (and adds N C to the totals), 1 if refused for
# lack of space; anything else fails the test.
push() {
  local rc=0
  "$CLI" push "$1" --socket "$SOCK" --service diskfull >/dev/null 2>"$W/err" || rc=$?
  if [ $rc -eq 0 ]; then
    want_n=$((want_n + $2)) want_c=$((want_c + $3)) acked=$((acked + 1))
    return 0
  fi
  [ $rc -eq 1 ] && grep -q 'RESOURCE_EXHAUSTED.*disk full' "$W/err" ||
    fail "push refused with exit $rc, not RESOURCE_EXHAUSTED/disk full: $(cat "$W/err")"
  return 1
}

# fill: pushes p1.pb, p2.pb, ... until one is refused; refused is its
# number, or 0 if all 24 were acked.
fill() {
  refused=0
  for i in $(seq 24); do
    read -r n c <"$W/p$i.sum"
    if ! push "$W/p$i.pb" "$n" "$c"; then refused=$i; break; fi
  done
}

for i in $(seq 24); do
  read -r n c < <("$GEN" profile "$W/p$i.pb" --seed $((i + 100)) --samples 2000 --functions 800)
  echo "$n $c" >"$W/p$i.sum"
done

# A memory budget large enough that no batch is sealed early (past 1/12 of
# --max-memory the largest open one is): the spool, not memory, must fill.
start_sidecar a --batch-window 3 --max-memory 1GiB
pid=$SC_PID

# 1. Fill the disk with pushes (about 100 KiB each) until one is refused.
fill
[ $refused -gt 0 ] || fail "24 pushes of ~100 KiB all fit a 2 MiB spool; the test proves nothing"
[ "$(rejected disk_full)" -ge 1 ] || fail "disk_full refusal not counted in /metrics"
no_temps "after the first refusal"
grep -q 'msg="cannot write spool file".*No space left' "$SC_LOG" || fail "ENOSPC not logged"
echo "phase 1: $acked acked, push $refused refused (disk full)"

# ... and the same sidecar accepts it again once exports free the spool.
ok=0
for _ in $(seq 150); do
  read -r n c <"$W/p$refused.sum"
  if push "$W/p$refused.pb" "$n" "$c"; then ok=1; break; fi
  no_temps "while the disk is full"
  sleep 0.2
done
[ $ok -eq 1 ] || fail "still refused 30 s later: exports did not free the spool"

# 2. Another tenant fills the disk; its file goes away; no restart needed.
wait_spool_drained 10
dd if=/dev/zero of="$W/spool/filler" bs=4k 2>/dev/null || true
read -r n c <"$W/p1.sum"
if push "$W/p1.pb" "$n" "$c"; then fail "a push was acked on a full disk"; fi
no_temps "with the filler"
before=$(rejected disk_full)
rm -f "$W/spool/filler"
push "$W/p1.pb" "$n" "$c" || fail "refused after the filler was removed: $(cat "$W/err")"
[ "$SC_PID" = "$pid" ] && kill -0 "$pid" || fail "the sidecar restarted or died"

# Every acked push is exported exactly once, samples summed.
wait_spool_drained 15 "acked pushes still pending"
stop_sidecar
got=$(pprof_totals $(find "$OUT/testnode/diskfull" -name '*.pb.gz'))
[ "$got" = "$want_n $want_c" ] || fail "exported $got, acked $want_n $want_c ($acked pushes)"
[ -z "$(find "$W/spool/quarantine" "$W/spool/failed" -type f)" ] || fail "files quarantined/failed"
no_temps "at the end"
echo "phase 2: $acked acked pushes all exported ($got); disk_full refusals: $before; recovered twice without a restart"

# 3. With the write-ahead journal (preallocated, so pushes may still be
# acked into it on a full disk): acked pushes wait there until their own
# files can be written, and are all exported once the disk has room again.
umount -l "$W/spool"
mount -t tmpfs -o size=3m,mode=0750 tmpfs "$W/spool" || fail "remount"
rm -rf "$OUT"
want_n=0 want_c=0 acked=0
start_sidecar j --batch-window 2 --journal-bytes 1MiB --rescan-interval 1 --max-memory 1GiB
grep -q 'msg="spool journal not used' "$SC_LOG" && fail "journal not created: $(cat "$SC_LOG")"
dd if=/dev/zero of="$W/spool/filler" bs=4k 2>/dev/null || true
fill
[ $refused -gt 0 ] || fail "journal: 24 pushes acked on a full disk"
no_temps "journal, disk full"
sleep 1
[ -z "$(find "$OUT" -name '*.pb.gz' 2>/dev/null)" ] || fail "exported while no push could have its own file"
rm -f "$W/spool/filler"
for _ in $(seq 200); do
  [ "$(metric pushprof_spool_files)" -eq 0 ] && [ "$(metric pushprof_pushes_accepted_total)" -ge "$acked" ] &&
    [ -n "$(find "$OUT" -name '*.pb.gz' 2>/dev/null)" ] && break
  sleep 0.1
done
read -r n c <"$W/p$refused.sum"
push "$W/p$refused.pb" "$n" "$c" || fail "journal: refused after the filler was removed: $(cat "$W/err")"
wait_spool_drained 15
stop_sidecar
got=$(pprof_totals $(find "$OUT/testnode/diskfull" -name '*.pb.gz'))
[ "$got" = "$want_n $want_c" ] || fail "journal: exported $got, acked $want_n $want_c ($acked pushes)"
no_temps "journal, at the end"
echo "ok: with the journal, $acked pushes acked on a full disk (push $refused refused) all exported ($got)"
