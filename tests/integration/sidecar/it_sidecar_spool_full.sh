#!/usr/bin/env bash
# Spool full: pushes are refused with RESOURCE_EXHAUSTED (counted) and
# accepted again once exports free space; with --spool-drop-oldest the
# oldest pending push is dropped (counted) instead.
source "$(dirname "$0")/../lib.sh"
"$GEN" profile "$W/p.pb" --seed 8 --samples 400 >/dev/null
size=$(stat -c %s "$W/p.pb")

start_sidecar a --batch-window 8 --max-spool-bytes $((size * 4))
refused=0
for i in $(seq 12); do
  rc=0; "$CLI" push "$W/p.pb" --socket "$SOCK" 2>"$W/err" >/dev/null || rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 1 ] && grep -q RESOURCE_EXHAUSTED "$W/err" || fail "push $i: exit $rc, $(cat "$W/err")"
    refused=1
    break
  fi
done
[ $refused -eq 1 ] || fail "12 pushes of $size bytes into a $((size * 4)) byte spool were all accepted"
[ "$(rejected spool_full)" -ge 1 ] || fail "spool_full not counted"
ok=0
for _ in $(seq 150); do
  if "$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.2
done
[ $ok -eq 1 ] || fail "still refused 30 s later; export did not free the spool"
stop_sidecar

start_sidecar drop --batch-window 3600 --max-spool-bytes $((size * 3)) --spool-drop-oldest
for i in $(seq 6); do
  "$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "drop-oldest push $i refused"
done
drops=$(metrics | awk '/^pushprof_drops_total/ { s += $2 } END { print s + 0 }')
[ "$drops" -ge 1 ] || fail "drop-oldest: no drops counted"
files=$(find "$W/spool" -maxdepth 1 -name '*.push' | wc -l)
[ "$files" -le 3 ] || fail "drop-oldest: $files files in a 3-push spool"
stop_sidecar
echo "ok: spool full refused then accepted again; drop-oldest dropped $drops"
