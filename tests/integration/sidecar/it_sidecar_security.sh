#!/usr/bin/env bash
# Security: the socket is 0660 the moment it exists (directory made 0750),
# the spool is 0750 with 0640 files, exports 0750/0640, whatever the umask; a
# spool directory others can write in is closed (ours, not sticky) or warned
# about (sticky, not ours, or only readable);
# a peer uid outside --allow-uid is refused, for real as user nobody through
# a shared group, while a user outside the group cannot reach the socket; a
# hostile service name stays inside the export directory, the connection
# limit holds, a non-socket file at the socket path is never removed, bad
# settings exit 2 with one clear line.
source "$(dirname "$0")/../lib.sh"
me=$(id -u)
other=$((me + 4242))
"$GEN" profile "$W/p.pb" --seed 5 >/dev/null
mode() { stat -c %a "$1"; }

# 1. Mode from the start: watch the path while the sidecar creates it. A
# umask of 000 must not widen anything.
SOCK=$W/sockdir/sub/s.sock
$RAW /dev/null watchmode "$SOCK" 10 >"$W/mode" &
watcher=$!
sleep 0.2
umask 000
start_sidecar mode --batch-window 1
umask 022
wait $watcher
[ "$(cat "$W/mode")" = "660 socket" ] || fail "socket first seen as '$(cat "$W/mode")', want '660 socket'"
[ "$(mode "$W/sockdir/sub")" = 750 ] || fail "socket dir mode $(mode "$W/sockdir/sub"), want 750"
[ "$(mode "$SOCK")" = 660 ] || fail "socket mode changed to $(mode "$SOCK")"
for d in "$W/spool" "$W/spool/quarantine" "$W/spool/failed" "$OUT"; do
  [ "$(mode "$d")" = 750 ] || fail "$d is mode $(mode "$d"), want 750 (umask 000)"
done

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
# Made under umask 000: directories 0750, profiles 0640.
bad=$(find "$OUT" \( -type d ! -perm 0750 \) -o \( -type f ! -perm 0640 \) -printf '%m %p\n')
[ -z "$bad" ] || fail "export modes (want dirs 750, files 640): $bad"
stop_sidecar

# 2b. A push waiting in the spool is 0640 (umask 000 again): held in the
# journal, and, after a restart with the journal off, in its own file.
umask 000
start_sidecar spoolfile --batch-window 60
umask 022
"$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "push to spoolfile"
[ "$(metric pushprof_spool_files)" -eq 1 ] || fail "the push is not pending"
[ -f "$W/spool/journal" ] || fail "no journal: $(ls -la "$W/spool")"
kill9_sidecar
umask 000
start_sidecar nojournal --batch-window 60 --journal-bytes 0
umask 022
f=$(find "$W/spool" -maxdepth 1 -type f -name '*.push' | head -1)
[ -n "$f" ] || fail "the journal's push was not replayed into a file: $(ls -la "$W/spool")"
[ ! -e "$W/spool/journal" ] || fail "the journal stayed with the journal off"
grep -q 'msg="journal off: the previous run' "$SC_LOG" || fail "journal removal not logged"
bad=$(find "$W/spool" \( -type f ! -perm 0640 \) -o \( -type d ! -perm 0750 \) -printf '%m %p\n')
[ -z "$bad" ] || fail "spool modes (want files 640, dirs 750): $bad"
kill9_sidecar

# 2c. A spool directory others can write in, ours: closed at start (group
# and setgid kept, for SDK drop-ins), with a warning; the push survives.
# Readable only (mkdir under umask 022), or sticky like /tmp: left alone,
# with a warning (it may be shared on purpose).
chmod 2777 "$W/spool"
start_sidecar reopen --batch-window 1
[ "$(mode "$W/spool")" = 2770 ] || fail "spool left at mode $(mode "$W/spool"), want 2770"
grep -q 'msg="spool directory was writable by other users; removed their access".*mode=2777 now=2770' \
  "$SC_LOG" || fail "no warning about the spool mode: $(cat "$SC_LOG")"
wait_metric pushprof_batches_exported_total 1 20
stop_sidecar
for m in 755 1777; do
  chmod g-s "$W/spool" && chmod $m "$W/spool"
  start_sidecar "mode$m"
  stop_sidecar
  [ "$(mode "$W/spool")" = $m ] || fail "a $m spool changed to $(mode "$W/spool")"
  grep -q "msg=\"spool directory is .* by other users.*mode=0*$m fix=" "$SC_LOG" ||
    fail "no warning for a $m spool: $(cat "$SC_LOG")"
done
chmod 750 "$W/spool"

# 2d. Not ours to change (a Kubernetes emptyDir is root's, 2777): the sidecar,
# run as nobody, warns with the fix and serves.
chmod 711 "$W"
mkdir -m 2777 "$W/nbspool"
mkdir -m 700 "$W/nbsock" "$W/nbout"
chown nobody "$W/nbsock" "$W/nbout"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$SIDECAR" --socket "$W/nbsock/s.sock" \
  --spool "$W/nbspool" --export "file://$W/nbout" 2>"$W/sidecar-nobody.log" &
nb=$!
SC_PID=$nb
for _ in $(seq 100); do grep -q 'msg="sidecar started"' "$W/sidecar-nobody.log" && break; sleep 0.1; done
grep -q 'msg="sidecar started"' "$W/sidecar-nobody.log" || fail "sidecar as nobody: $(cat "$W/sidecar-nobody.log")"
grep -q 'msg="spool directory is writable by other users: they can drop pushes in".*mode=2777.*fix=' \
  "$W/sidecar-nobody.log" || fail "no warning for a spool not ours: $(cat "$W/sidecar-nobody.log")"
[ "$(mode "$W/nbspool")" = 2777 ] || fail "a directory not ours changed mode"
"$CLI" push "$W/p.pb" --socket "$W/nbsock/s.sock" >/dev/null || fail "push to the sidecar run as nobody"
kill -TERM $nb
wait $nb || fail "sidecar as nobody exited $? after SIGTERM"
SC_PID=

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

# 3b. For real, as another user: nobody reaches the socket through a shared
# group (setgid socket directory, as in the deploy files), and is refused by
# --allow-uid, counted and logged with its uid; admitted once listed. A user
# outside the group cannot even connect (0750 directory, 0660 socket).
SOCK=$W/shared/s.sock
mkdir -m 2750 "$W/shared"
chgrp nogroup "$W/shared"
chmod 711 "$W"
chmod 644 "$W/p.pb"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
start_sidecar peer --allow-uid "$me"
[ "$(stat -c '%a %G' "$SOCK")" = "660 nogroup" ] || fail "shared socket is $(stat -c '%a %G' "$SOCK")"
rc=0; as_nobody "$CLI" push "$W/p.pb" --socket "$SOCK" 2>"$W/err" || rc=$?
[ $rc -eq 1 ] && grep -q PERMISSION_DENIED "$W/err" || fail "nobody not refused: exit $rc, $(cat "$W/err")"
[ "$(rejected permission_denied)" -eq 1 ] || fail "nobody's refusal not counted"
grep -q "peer_uid=$(id -u nobody)" "$SC_LOG" || fail "refusal not logged with nobody's uid"
conns=$(metric pushprof_connections_total)
rc=0; setpriv --reuid=nobody --regid=$((me + 4243)) --clear-groups \
  "$CLI" push "$W/p.pb" --socket "$SOCK" 2>"$W/err" || rc=$?
[ $rc -eq 3 ] && grep -q 'Permission denied' "$W/err" ||
  fail "a user outside the socket's group: exit $rc, $(cat "$W/err") (want 3, Permission denied)"
[ "$(metric pushprof_connections_total)" -eq "$conns" ] || fail "the outsider reached the sidecar"
stop_sidecar
start_sidecar peer2 --allow-uid "$me,nobody"
as_nobody "$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "listed nobody refused: $(cat "$SC_LOG")"
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
echo "ok: 0660 socket from the start, spool/export modes under umask 000, spool mode fixed or warned,"
echo "    uid checks as nobody, path containment, connection limit, config errors"
