#!/usr/bin/env bash
# Security: the socket is 0660 the moment it exists (directory made 0750), a
# peer uid outside --allow-uid is refused, a hostile service name stays inside
# the export directory, the connection limit holds, a non-socket file at the
# socket path is never removed, bad settings exit 2 with one clear line.
source "$(dirname "$0")/lib.sh"
me=$(id -u)
other=$((me + 4242))
"$GEN" profile "$W/p.pb" --seed 5 >/dev/null

# 1. Mode from the start: watch the path while the sidecar creates it.
SOCK=$W/sockdir/sub/s.sock
$RAW /dev/null watchmode "$SOCK" 10 >"$W/mode" &
watcher=$!
sleep 0.2
start_sidecar mode --batch-window 1
wait $watcher
[ "$(cat "$W/mode")" = "660 socket" ] || fail "socket first seen as '$(cat "$W/mode")', want '660 socket'"
[ "$(stat -c %a "$W/sockdir/sub")" = 750 ] || fail "socket dir mode $(stat -c %a "$W/sockdir/sub"), want 750"
[ "$(stat -c %a "$SOCK")" = 660 ] || fail "socket mode changed to $(stat -c %a "$SOCK")"

# 2. A service name trying to climb out of the export directory.
"$CLI" push "$W/p.pb" --socket "$SOCK" --service '../../etc' >/dev/null || fail "push ../../etc"
"$CLI" push "$W/p.pb" --socket "$SOCK" --service '/abs/path' --label 'k=../../v' >/dev/null ||
  fail "push /abs/path"
wait_metric pushprof_batches_exported_total 2 20
outreal=$(realpath "$OUT")
n=0
while IFS= read -r f; do
  n=$((n + 1))
  case "$(realpath "$f")" in "$outreal"/testnode/*) ;; *) fail "exported outside $OUT/testnode: $f" ;; esac
done < <(find "$W" -name '*.pb.gz' -newer "$W/p.pb")
[ $n -eq 2 ] || fail "expected 2 exported files under $W, found $n"
[ -z "$(find "$W" -maxdepth 1 -name '*.pb.gz')" ] || fail "a file escaped to $W"
stop_sidecar

# 3. --allow-uid without our uid: PERMISSION_DENIED, counted.
start_sidecar uid --allow-uid "$other"
rc=0; "$CLI" push "$W/p.pb" --socket "$SOCK" 2>"$W/err" || rc=$?
[ $rc -eq 1 ] || fail "disallowed uid: exit $rc, want 1 (refused)"
grep -q PERMISSION_DENIED "$W/err" || fail "disallowed uid message: $(cat "$W/err")"
[ "$(rejected permission_denied)" -eq 1 ] || fail "permission_denied not counted"
stop_sidecar
start_sidecar uid2 --allow-uid "$other,$me"
"$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "allowed uid refused"
stop_sidecar

# 4. Connection limit: 2 silent clients hold the slots; a push evicts the
#    one waiting longest (counted) instead of being locked out.
start_sidecar conns --max-connections 2 --read-timeout 10
$RAW "$SOCK" hold 2 5 >"$W/hold" &
holder=$!
for _ in $(seq 50); do grep -q holding "$W/hold" 2>/dev/null && break; sleep 0.1; done
sleep 0.3
"$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null 2>"$W/err" || fail "over the limit: $(cat "$W/err")"
[ "$(metric 'pushprof_connections_evicted_total{reason="idle"}')" -ge 1 ] || fail "eviction not counted"
wait $holder
"$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "push after the holders left"
stop_sidecar

# 5. A regular file at the socket path is not ours to delete.
echo precious >"$W/notasocket"
rc=0; "$SIDECAR" --socket "$W/notasocket" --spool "$W/spool" --export "file://$OUT" 2>"$W/err" || rc=$?
[ $rc -ne 0 ] || fail "sidecar started on a regular file"
[ "$(cat "$W/notasocket")" = precious ] || fail "regular file at the socket path was touched"
grep -q 'not a socket' "$W/err" || fail "message: $(cat "$W/err")"

# 6. Bad settings: exit 2, one line naming the flag/key.
rc=0; "$SIDECAR" --socket "$SOCK" --batch-window soon 2>"$W/err" || rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -q -- '--batch-window' "$W/err" ||
  fail "bad flag: exit $rc, $(cat "$W/err")"
printf 'max_spool_bytes = lots\n' >"$W/bad.ini"
rc=0; "$SIDECAR" --config "$W/bad.ini" 2>"$W/err" || rc=$?
[ $rc -eq 2 ] && grep -q 'max_spool_bytes' "$W/err" || fail "bad key: exit $rc, $(cat "$W/err")"
echo "ok: 0660 from the start, uid checks, path containment, connection limit, config errors"
