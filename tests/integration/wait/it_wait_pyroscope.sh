#!/usr/bin/env bash
# Off-CPU and lock profiles of a real process reach Pyroscope (the
# stand-in of tests/integration/pyroscope) as Go's block and mutex
# profiles: __name__=block and __name__=mutex, each with __delta__=false
# (a batch's values are its window's), beside the CPU profile's
# process_cpu; every profile a valid pprof by the stand-in's go tool pprof.
source "$(dirname "$0")/../pyroscope/lib_pyroscope.sh"
start_standin wait
start_sidecar wait --export "pyroscope+$PY_URL" --batch-window 1
PRELOAD=$PRELOAD_WAIT
export PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=waitsvc PUSHPROF_PROFILES=cpu,offcpu,lock \
  PUSHPROF_EXIT_TIMEOUT_MS=10000
run_workload preload wl_wait_sites 1
names() { pyq "$PY_OUT" 'len({s["labels"]["__name__"] for r in reqs for s in r["series"] if s["labels"]["service_name"] == "waitsvc"})'; }
wait_count "waitsvc series names at the stand-in" 3 40 names
for n in block mutex; do
  labels=$(pyq "$PY_OUT" "[s['labels'] for r in reqs for s in r['series'] if s['labels']['__name__'] == '$n'][0]")
  want="{'__delta__': 'false', '__name__': '$n', 'service_name': 'waitsvc'}"
  [ "$labels" = "$want" ] || fail "the $n series: $labels, want $want"
done
pyq "$PY_OUT" "[s['labels']['__name__'] for r in reqs for s in r['series']]" | grep -q process_cpu ||
  fail "no process_cpu series beside them"
no_violations "$PY_OUT"
stop_sidecar
echo pass
