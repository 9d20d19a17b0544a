#!/usr/bin/env bash
# The SDK under stress: the host's own signals land while the collector
# drains, aggregates, builds and pushes profiles of many distinct stacks
# (st_collector.c: 250 Hz, pushprof_flush every 0-175 ms plus a 1 s upload
# period, SIGUSR1 to the workers with a handler that allocates, SIGUSR2 to
# the process, SIGCHLD from 100 forks). Run without the profiler and under
# LD_PRELOAD pushing to the real sidecar: stdout and exit status identical,
# the pushes accepted, every exported profile valid for `go tool pprof -raw`
# and holding the workload's functions. A hang (over $ST_LIMIT s, default
# 60) dumps every thread's stack and fails.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=st_lib.sh
. "$(dirname "$0")/st_lib.sh"
case_=collector
LIMIT=${ST_LIMIT:-60}
bin=$B/tests/stress_workloads/st_collector
[ -x "$bin" ] || fail "$bin not built"

guarded plain "$bin"
rc_plain=$rc
start_sidecar collector --batch-window 1
guarded prof env LD_PRELOAD="$PRELOAD" PUSHPROF_HZ=250 PUSHPROF_SOCKET="$SOCK" \
  PUSHPROF_SERVICE=st-collector PUSHPROF_UPLOAD_PERIOD=1 "$bin"
rc_prof=$rc
stop_sidecar
cat "$T/prof.err" >&2
same_as_plain "$rc_plain" "$rc_prof"
grep -q 'signals=yes' "$T/prof.out" || fail "not every kind of signal was handled: $(cat "$T/prof.out")"
grep -q 'flushes=on' "$T/prof.err" || fail "pushprof_flush not found in the preloaded SDK"
pid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/prof.err")
[ -n "$pid" ] || fail "no pid line: $(cat "$T/prof.err")"
pushes=$(grep 'msg="push accepted"' "$SC_LOG" | grep -c " pid=$pid " || true)
[ "$pushes" -ge 5 ] || fail "only $pushes pushes from pid $pid accepted (flushes every 0-175 ms)"

files=$(find "$OUT" -name '*.pb.gz' | sort)
[ -n "$files" ] || fail "nothing exported"
for f in $files; do
  "${CHECK[@]}" "$f" --quiet || fail "exported profile $f"
done
# shellcheck disable=SC2086
go tool pprof -proto -symbolize=none $files >"$W/merged.pb.gz" 2>/dev/null || fail "pprof merge"
"${CHECK[@]}" "$W/merged.pb.gz" --value samples/count --min-samples 100 \
  --expect-function '^st_collector_leaf$' --expect-function '^st_hop[0-7]$' >"$W/report.json" ||
  fail "the merged profile check failed"
echo "pass [collector]: $(cat "$T/prof.out") $pushes pushes, $(echo "$files" | wc -l) exported," \
  "$(python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print(r['total']['samples/count'], 'samples')" "$W/report.json")"
