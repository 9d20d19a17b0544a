#!/usr/bin/env bash
# A torn spool file: a real spool file (a push the sidecar acked, then
# kill -9) truncated at every byte offset, all put in the spool for one
# start. That start quarantines each truncation (counted, with a reason
# file), exports the intact push, and serves new pushes; two more starts
# (after SIGTERM, after kill -9) find nothing more to quarantine and never
# crash. The spool is a tmpfs when one can be mounted (fsync is cheap there).
source "$(dirname "$0")/../lib.sh"
mkdir -p "$W/spool"
if mount -t tmpfs -o size=64m,mode=0750 tmpfs "$W/spool" 2>/dev/null; then
  trap 'rc=$?; [ -z "$SC_PID" ] || kill -9 "$SC_PID" 2>/dev/null; wait 2>/dev/null; umount -l "$W/spool"; (exit $rc); on_exit' EXIT
fi

read -r n c < <("$GEN" profile "$W/p.pb" --seed 21 --samples 12 --functions 10)
read -r n2 c2 < <("$GEN" profile "$W/p2.pb" --seed 22 --samples 12 --functions 10)
start_sidecar a --batch-window 3600
"$CLI" push "$W/p.pb" --socket "$SOCK" --service torn >/dev/null || fail "push"
kill9_sidecar
real=$(find "$W/spool" -maxdepth 1 -name '*.push')
[ "$(echo "$real" | wc -l)" -eq 1 ] && [ -s "$real" ] || fail "want one spool file, got: $real"
len=$(stat -c %s "$real")
python3 - "$real" "$W/spool" <<'PY'
import os, sys
data = open(sys.argv[1], "rb").read()
for off in range(len(data)):
    with open(os.path.join(sys.argv[2], "0-torn-%06d.push" % off), "wb") as f:
        f.write(data[:off])
PY

start_sidecar b --batch-window 1
wait_files "$OUT/testnode/torn" 1 20 || fail "the intact push was not exported"
[ "$(metric pushprof_spool_quarantined_total)" -eq "$len" ] ||
  fail "quarantined $(metric pushprof_spool_quarantined_total) of $len torn files"
[ "$(find "$W/spool/quarantine" -name '0-torn-*.push' | wc -l)" -eq "$len" ] ||
  fail "quarantine/ holds $(find "$W/spool/quarantine" -name '*.push' | wc -l) of $len"
[ "$(find "$W/spool/quarantine" -name '0-torn-*.push.reason' | wc -l)" -eq "$len" ] ||
  fail "reason files missing"
grep -q 'truncated frame' "$W/spool/quarantine/0-torn-000005.push.reason" ||
  fail "reason: $(cat "$W/spool/quarantine/0-torn-000005.push.reason")"
"$CLI" push "$W/p2.pb" --socket "$SOCK" --service torn >/dev/null || fail "push after the torn start"
wait_spool_drained 10
stop_sidecar

# Two more starts: nothing left to quarantine, no crash loop.
start_sidecar c --batch-window 1
[ "$(metric pushprof_spool_quarantined_total)" -eq 0 ] || fail "quarantined again at restart"
kill9_sidecar
start_sidecar d --batch-window 1
[ "$(metric pushprof_spool_quarantined_total)" -eq 0 ] || fail "quarantined again at the 2nd restart"
stop_sidecar
got=$(pprof_totals $(find "$OUT/testnode/torn" -name '*.pb.gz'))
[ "$got" = "$((n + n2)) $((c + c2))" ] || fail "exported $got, want the 2 pushes: $((n + n2)) $((c + c2))"
[ -z "$(find "$W/spool" -maxdepth 1 -name '*.push')" ] || fail "spool not empty"
echo "ok: a $len-byte spool file torn at each of its $len offsets: all quarantined in one start; 2 restarts clean"
