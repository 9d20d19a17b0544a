#!/usr/bin/env bash
# One sidecar per socket and per spool: a second one on the same socket, or
# on the same spool with another socket, exits 1 at once with one message
# naming the running one's pid and the fix, and disturbs nothing; the lock
# does not outlive a kill -9.
source "$(dirname "$0")/../lib.sh"
read -r n c < <("$GEN" profile "$W/p.pb" --seed 5)
start_sidecar first --batch-window 3600
first=$SC_PID

second() { # second LOG FLAGS...: runs a second sidecar, expects exit 1 within 5 s
  local log=$W/sidecar-$1.log rc=0
  shift
  timeout 5 "$SIDECAR" --node-name testnode --export "file://$OUT" "$@" 2>"$log" || rc=$?
  [ $rc -eq 1 ] || fail "second sidecar ($*): exit $rc, want 1: $(cat "$log")"
  # (ASan builds add a mallopt warning: not ours to count)
  [ "$(grep -vc 'msg="mallopt failed' "$log")" -eq 1 ] || fail "want one line, got: $(cat "$log")"
  grep -q "in use by another pushprof-sidecar (pid $first, holding .*\.lock): stop that one" "$log" ||
    fail "message does not name pid $first and the fix: $(cat "$log")"
}
second same --socket "$SOCK" --spool "$W/spool"
grep -q -- "--spool $W/spool is in use" "$W/sidecar-same.log" || fail "$(cat "$W/sidecar-same.log")"
second spool --socket "$W/other.sock" --spool "$W/spool"
[ ! -e "$W/other.sock" ] || fail "the refused sidecar left a socket behind"
second socket --socket "$SOCK" --spool "$W/spool2"
grep -q -- "--socket $SOCK: it is in use" "$W/sidecar-socket.log" || fail "$(cat "$W/sidecar-socket.log")"

# The first one was not disturbed.
[ -S "$SOCK" ] || fail "the refused sidecars removed the socket"
"$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "push to the first sidecar after the refusals"
[ "$(cat "$W/spool/.sidecar.lock")" = "$first" ] || fail "lock file does not hold pid $first"

# kill -9: the kernel drops the lock; a restart on the same paths works.
kill9_sidecar
start_sidecar again --batch-window 1
"$CLI" push "$W/p.pb" --socket "$SOCK" >/dev/null || fail "push after restart"
wait_spool_drained 10
stop_sidecar
got=$(pprof_totals $(find "$OUT" -name '*.pb.gz'))
[ "$got" = "$((2 * n)) $((2 * c))" ] || fail "exported $got, want both pushes: $((2 * n)) $((2 * c))"
echo "ok: second sidecars refused with the holder's pid; restart after kill -9 takes the lock"
