#!/usr/bin/env bash
# Debian's own binaries, built without frame pointers, profiled by
# pushprof (LD_PRELOAD, file output) and by `perf record --call-graph dwarf`
# on the same workload, compared by sk_vs_perf.py: pushprof's mean stack
# depth >= 0.9 x perf's, and the same callers of the hot leaves.
#   it_sk_vs_perf.sh sqlite3|xz
# sqlite3: an in-memory recursive CTE grouped, aggregated and sorted (~2 s);
# xz: -9 on ~2 MB of generated log lines (~2 s). Both sample every 4 ms of
# CPU (pushprof at 250 Hz, perf's cpu-clock with a period of 4 ms).
# Needs perf (Debian linux-perf) allowed to record: as root, or
# kernel.perf_event_paranoid <= 1. When perf cannot record at all the test
# says why and exits 77 (ctest: skipped).
. "$(dirname "$0")/../lib.sh"
what=${1:?usage: it_sk_vs_perf.sh sqlite3|xz}
case $what in
  sqlite3)
    q="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<2500000)
       SELECT count(*), sum(n), max(k) FROM (SELECT (x*7919)%10007 AS k, count(*) AS n,
       group_concat(printf('%x', x%997)) AS g FROM c GROUP BY k ORDER BY length(g), k);"
    cmd=(sqlite3 :memory: "$q")
    ;;
  xz)
    python3 "$(dirname "$0")/sk_gen_log.py" "$T/log.txt" 2200000
    cmd=(xz -9 -T1 -c "$T/log.txt")
    ;;
  *) fail "unknown workload $what" ;;
esac
command -v "${cmd[0]}" >/dev/null || fail "${cmd[0]} not installed (bash tests/deps.sh)"
command -v readelf >/dev/null || fail "readelf not installed (binutils)"

skip() { echo "SKIP: $*" >&2; exit 77; }
command -v perf >/dev/null || fail "perf not installed (Debian linux-perf; bash tests/deps.sh)"
# perf must be able to sample this user's processes, kernel included (its
# kernel-mode samples carry the user stack of the syscall or fault, as
# pushprof's signal does).
perf_probe() { perf record -q -e cpu-clock -o "$T/probe.data" -- true >"$T/probe.log" 2>&1; }
if ! perf_probe; then
  para=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')
  if [ "$(id -u)" = 0 ] && [ "$para" != "-1" ]; then
    echo "perf record failed with kernel.perf_event_paranoid=$para; setting it to -1" >&2
    sysctl -q -w kernel.perf_event_paranoid=-1 || true
  fi
  perf_probe || skip "perf cannot record here (uid $(id -u), kernel.perf_event_paranoid=$(cat \
    /proc/sys/kernel/perf_event_paranoid 2>/dev/null)): $(tr '\n' ' ' <"$T/probe.log" | cut -c1-300)"
fi

mkdir -p "$T/prof"
rc=0
nice env LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="$HOST_ASAN" PUSHPROF_HZ=250 \
  PUSHPROF_OUTPUT="$T/prof/$what-%p.pb.gz" "${cmd[@]}" >"$T/out.pushprof" 2>"$T/err" || rc=$?
cat "$T/err" >&2
[ "$rc" -eq 0 ] || fail "$what under pushprof exited $rc"
prof=$(the_profile)
rc=0
nice perf record -q -e cpu-clock -c 4000000 --call-graph dwarf,65528 -o "$T/perf.data" \
  -- "${cmd[@]}" >"$T/out.perf" 2>"$T/perf.err" || rc=$?
[ "$rc" -eq 0 ] || fail "perf record of $what exited $rc: $(cat "$T/perf.err")"
cmp -s "$T/out.pushprof" "$T/out.perf" || fail "$what printed different output under pushprof and perf"
nice perf script -i "$T/perf.data" -F comm,tid,ip,sym,dso --no-inline >"$T/perf.txt" 2>"$T/script.err" ||
  fail "perf script failed: $(head -5 "$T/script.err")"
python3 "$(dirname "$0")/sk_vs_perf.py" --name "$what" --pushprof "$prof" --perf-script "$T/perf.txt" ||
  fail "$what: pushprof's stacks do not match perf's"
echo "pass ($what)"
