#!/usr/bin/env bash
# Hostile local clients against the default limits (256 connections, 10 s
# read timeout): 1,000 connections that never send (reopened as the sidecar
# evicts them), frames of random sizes and content, and a client sending one
# byte per second. Meanwhile a well-behaved client pushes on a new connection
# every 20 ms: every push must be acked, with p99 connect-to-ack under 50 ms,
# and the sidecar's RSS (VmRSS sampled, and VmHWM) stays under 64 MiB. The
# good pushes are all exported intact; evictions are counted and logged.
source "$(dirname "$0")/../lib.sh"
H="python3 $S/tests/integration/sidecar/hostile.py"
SECS=${HOSTILE_SECONDS:-20}
[ "$(ulimit -Hn)" -ge 1100 ] || fail "need 1,100 fds for 1,000 idle connections; ulimit -Hn is $(ulimit -Hn)"

read -r n c < <("$GEN" profile "$W/good.pb" --seed 7 --samples 300 --functions 200)
"$GEN" frame "$W/good.frame" ok --seed 7 --samples 300 --service good
"$GEN" frame "$W/slow.frame" ok --seed 9 --service slow
# Started with a soft fd limit too low for 256 connections plus those being
# evicted: the sidecar raises it itself (toward the hard limit): 2 x 256 +
# 256, and 4096 more for on-demand subscriptions (--metrics-addr is on).
ulimit -Sn 400
start_sidecar a --batch-window 5
ulimit -Sn "$(ulimit -Hn)"
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 4864 ]; then
  raised='msg="file descriptor limit raised" from=400 to=4864'
else # raised to the hard limit, with a warning that it is short
  raised="msg=\"file descriptor limit below what --max-connections needs\" soft=$(ulimit -Hn)"
fi
grep -q "$raised" "$SC_LOG" ||
  fail "fd limit not raised: $(grep -i 'descriptor' "$SC_LOG")"
sleep 0.2
vmkb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$SC_PID/status"; }
rss_idle=$(vmkb VmRSS)
# The same client without an attack first: the machine's own noise.
$H "$SOCK" good "$W/good.frame" 3 >"$W/base.out"
base_p99=$(sed -n 's/.* p99_ms=\([0-9.]*\).*/\1/p' "$W/base.out")
base_acked=$(sed -n 's/.* acked=\([0-9]*\).*/\1/p' "$W/base.out")

$H "$SOCK" good "$W/good.frame" "$SECS" >"$W/good.out" &
good=$!
sleep 0.5
$H "$SOCK" idle 1000 $((SECS - 1)) >"$W/idle.out" &
idle=$!
$H "$SOCK" random $((SECS - 1)) 42 >"$W/random.out" &
rnd=$!
$H "$SOCK" slow "$W/slow.frame" $((SECS - 1)) >"$W/slow.out" &
slow=$!

# Sample RSS; every second also push with the real CLI.
rss_max=0 cli_ok=0 cli_fail=0
while kill -0 $good 2>/dev/null; do
  for _ in 1 2 3 4 5; do
    r=$(vmkb VmRSS)
    [ "${r:-0}" -le "$rss_max" ] || rss_max=$r
    sleep 0.2
  done
  if "$CLI" push "$W/good.pb" --socket "$SOCK" --service good-cli >/dev/null 2>"$W/cli.err"; then
    cli_ok=$((cli_ok + 1))
  else
    cli_fail=$((cli_fail + 1))
    echo "pushprof push failed: $(cat "$W/cli.err")" >&2
  fi
done
wait $good $idle $rnd $slow
hwm=$(vmkb VmHWM)
cat "$W"/good.out "$W"/idle.out "$W"/random.out "$W"/slow.out
kill -0 "$SC_PID" || fail "the sidecar died"

read -r pushes acked p50 p99 < <(sed -n 's/^good pushes=\([0-9]*\) acked=\([0-9]*\) p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\).*/\1 \2 \3 \4/p' "$W/good.out")
[ -n "${p99:-}" ] || fail "no result from the good client: $(cat "$W/good.out")"
[ "$pushes" -ge $((SECS * 10)) ] || fail "only $pushes good pushes in $SECS s"
[ "$acked" -eq "$pushes" ] || fail "good client: $acked of $pushes acked: $(cat "$W/good.out")"
[ "$cli_fail" -eq 0 ] || fail "$cli_fail pushprof push runs failed"
# Sanitizer builds: ASan's shadow memory and quarantine alone exceed 64 MiB,
# and instrumented code is slower; the figures are printed, the RSS bound
# is not enforced, and the latency bound is looser.
# A machine so loaded that p99 without any attack is over half the budget
# cannot judge 50 ms: then the bound is twice that baseline (said below).
p99_max=50 rss_limit=65536
if grep -q '^PUSHPROF_SANITIZE:[A-Z]*=[a-z]' "$B/CMakeCache.txt" 2>/dev/null; then
  p99_max=150 rss_limit=$((1 << 30))
fi
if awk -v b="$base_p99" -v m="$p99_max" 'BEGIN { exit !(b * 2 > m) }'; then
  p99_max=$(awk -v b="$base_p99" 'BEGIN { print b * 2 }')
  echo "note: p99 without attack was $base_p99 ms (loaded machine): bound raised to $p99_max ms"
fi
awk -v p="$p99" -v m="$p99_max" 'BEGIN { exit !(p < m) }' ||
  fail "good client ack p99 ${p99} ms, want < $p99_max ms"
[ "$rss_max" -lt $rss_limit ] && [ "$hwm" -lt $rss_limit ] ||
  fail "RSS max ${rss_max} kB, VmHWM ${hwm} kB: want < $((rss_limit / 1024)) MiB"

opened=$(sed -n 's/^idle n=[0-9]* opened=\([0-9]*\).*/\1/p' "$W/idle.out")
[ "${opened:-0}" -ge 1000 ] || fail "idle client opened only ${opened:-0} connections"
ev_idle=$(metric 'pushprof_connections_evicted_total{reason="idle"}')
ev_slow=$(metric 'pushprof_connections_evicted_total{reason="slow_frame"}')
[ "$ev_idle" -ge 700 ] || fail "only $ev_idle idle evictions for 1,000 idle connections over a 256 limit"
grep -q 'msg="connection evicted" reason=idle' "$SC_LOG" || fail "evictions not logged"
grep -q 'completed=0' "$W/slow.out" || fail "the one-byte-a-second client completed a frame"
[ $((ev_slow + $(rejected read_timeout))) -ge 1 ] || fail "the slow client was never cut"
grep -q '^random sent=[1-9]' "$W/random.out" || fail "random client sent nothing"
bad=0
for r in bad_magic bad_version bad_frame_type frame_too_large truncated_frame invalid_push; do
  bad=$((bad + $(rejected $r)))
done
[ "$bad" -ge 10 ] || fail "only $bad random frames were rejected"

# The good pushes all arrive, each once, merged. They are all the same
# push, so two batches of as many pushes are the same object (named by its
# content): count pushes from the export log lines, and check each object.
wait_spool_drained 10
stop_sidecar
exported=$(sed -n 's/.*msg="batch exported" service="good" pushes=\([0-9]*\) .*/\1/p' "$SC_LOG" |
  awk '{ s += $1 } END { print s + 0 }')
[ "$exported" -eq $((acked + base_acked)) ] ||
  fail "exported $exported good pushes, acked $((acked + base_acked))"
for f in $(find "$OUT/testnode/good" -name '*.pb.gz'); do
  read -r gn gc < <(pprof_totals "$f")
  [ $((gn % n)) -eq 0 ] && [ $((gn / n * c)) -eq "$gc" ] || fail "$f holds $gn $gc, not k x $n $c"
done
echo "ok: $acked good pushes acked (p50 $p50 ms, p99 $p99 ms; $base_p99 ms without attack) and exported; $cli_ok pushprof push ok;" \
  "evicted idle=$ev_idle slow=$ev_slow; random rejected=$bad; RSS idle ${rss_idle} kB," \
  "max ${rss_max} kB, VmHWM ${hwm} kB"
