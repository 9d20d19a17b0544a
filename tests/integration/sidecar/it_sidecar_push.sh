#!/usr/bin/env bash
# Pushes through the real sidecar with `pushprof push`: every push is acked,
# the exported profiles parse with go tool pprof and their sample totals equal
# the sum of the inputs; the client's own errors exit non-zero.
source "$(dirname "$0")/../lib.sh"

# Settings from an INI file (flags from start_sidecar override the rest).
printf '[sidecar]\ndump_duration_seconds = 5\nrescan_interval = 1\nmax_spool_bytes = 64MiB\n' >"$W/sc.ini"
start_sidecar a --config "$W/sc.ini"
grep -q 'window_s=5' "$SC_LOG" || fail "dump_duration_seconds from --config not applied"
want_n=0 want_c=0
for i in 1 2 3 4; do
  gz=
  [ $((i % 2)) -eq 0 ] && gz=--gzip
  read -r n c < <("$GEN" profile "$W/in$i.pb.gz" --seed "$i" --samples 300 $gz)
  want_n=$((want_n + n)) want_c=$((want_c + c))
  out=$("$CLI" push "$W/in$i.pb.gz" --socket "$SOCK" --service checkout --label env=test) ||
    fail "push $i exited $?: $out"
  echo "$out" | grep -q 'push id ' || fail "no push id printed: $out"
done
# The client's default service is the file's base name.
read -r n c < <("$GEN" profile "$W/billing-42.pb.gz" --seed 9 --gzip)
PUSHPROF_SOCKET=$SOCK "$CLI" push "$W/billing-42.pb.gz" >/dev/null || fail "push via PUSHPROF_SOCKET"

wait_files "$OUT/testnode/checkout" 1 20 || fail "nothing exported for checkout"
wait_files "$OUT/testnode/billing-42" 1 20 || fail "nothing exported for billing-42 (default service)"
wait_metric pushprof_batches_exported_total 2 20
# Let any second window of checkout close too, then compare totals.
wait_spool_drained 6 "spool not drained"
got=$(pprof_totals $(find "$OUT/testnode/checkout" -name '*.pb.gz'))
[ "$got" = "$want_n $want_c" ] || fail "exported totals $got, pushed $want_n $want_c"
files=$(find "$OUT/testnode/checkout" -name '*.pb.gz' | wc -l)
[ "$files" -le 2 ] || fail "4 pushes in one 5 s window became $files files (not merged)"
# The batch's process labels are in each object, as comments.
for f in $(find "$OUT/testnode/checkout" -name '*.pb.gz'); do
  go tool pprof -comments "$f" 2>/dev/null | grep -qx 'pushprof label env=test' ||
    fail "no 'pushprof label env=test' comment in $f: $(go tool pprof -comments "$f" 2>&1 | head -5)"
done
[ "$(metric pushprof_pushes_accepted_total)" -eq 5 ] || fail "accepted_total $(metric pushprof_pushes_accepted_total)"
curl -sf "http://127.0.0.1:$METRICS_PORT/healthz" | grep -q ok || fail "/healthz not ok"

# An SDK drop-in (PROTOCOL.md: write ".name", fsync, rename to name.push) is
# picked up by the periodic rescan and exported.
"$GEN" frame "$W/dropin.frame" ok --seed 21 --service dropped-in
cp "$W/dropin.frame" "$W/spool/.sdk-1.push"
mv "$W/spool/.sdk-1.push" "$W/spool/sdk-1.push"
wait_files "$OUT/testnode/dropped-in" 1 20 || fail "drop-in file not exported"
pprof_totals $(find "$OUT/testnode/dropped-in" -name '*.pb.gz') >/dev/null

# Client-side failures: not a pprof -> 2; no sidecar -> 3.
head -c 1000 /dev/urandom >"$W/junk.pb"
rc=0; "$CLI" push "$W/junk.pb" --socket "$SOCK" 2>"$W/err" || rc=$?
[ $rc -eq 2 ] || fail "junk file: exit $rc, want 2"
grep -q 'not a valid pprof' "$W/err" || fail "junk file message: $(cat "$W/err")"
rc=0; "$CLI" push "$W/in1.pb.gz" --socket "$W/nope.sock" 2>"$W/err" || rc=$?
[ $rc -eq 3 ] || fail "missing socket: exit $rc, want 3"
grep -q 'is the sidecar running' "$W/err" || fail "missing socket message: $(cat "$W/err")"

stop_sidecar
[ ! -e "$SOCK" ] || fail "socket left behind after a clean stop"
grep -q 'msg="sidecar stopped"' "$SC_LOG" || fail "no stop log line"
# That run was at --log-level debug (lib.sh): a line per push. The default,
# info, writes the start, the exports and the stop, but no line per push.
[ "$(grep -c 'level=debug msg="push accepted"' "$SC_LOG")" -eq 5 ] ||
  fail "debug: $(grep -c 'msg="push accepted"' "$SC_LOG") 'push accepted' lines, want 5"
start_sidecar quiet --log-level info --batch-window 1
for i in 1 2 3; do
  "$CLI" push "$W/in$i.pb.gz" --socket "$SOCK" --service quiet >/dev/null || fail "quiet push $i"
done
wait_files "$OUT/testnode/quiet" 1 20 || fail "nothing exported for quiet"
stop_sidecar
grep -q 'msg="sidecar started"' "$SC_LOG" || fail "info: no start line"
grep -q 'msg="batch exported" service="quiet"' "$SC_LOG" || fail "info: no export line"
! grep -q 'level=debug' "$SC_LOG" || fail "info: debug lines written: $(grep -m1 'level=debug' "$SC_LOG")"
rc=0; "$SIDECAR" --log-level loud 2>"$W/err" || rc=$?
[ $rc -eq 2 ] || fail "--log-level loud: exit $rc, want 2"
grep -q 'expected debug, info, warn or error' "$W/err" || fail "--log-level message: $(cat "$W/err")"
echo "ok: 5 pushes acked, exported totals $got match, client errors exit 2/3, log levels"
