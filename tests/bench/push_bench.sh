#!/usr/bin/env bash
# Exit-flush latency that pushing adds to a short job: the same 20 ms job run
# interleaved without the profiler and under LD_PRELOAD pushing to the real
# sidecar (file:// export), RUNS times each; prints p50/p99 wall times and
# the added latency. Then bench_push against the same sidecar: the CPU cost
# of one periodic push in the host (1k and 10k unique stacks), --push-reps
# times each. --rows FILE appends the figures as rows for tests/bench/run
# (tests/bench/benchrows.py). A figure, never a pass/fail.
#   tests/bench/push_bench.sh [--build DIR] [--runs N] [--push-reps N] [--rows FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build runs=40 push_reps=7 rows=
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --push-reps) push_reps=$2; shift 2 ;;
  --rows) rows=$2; shift 2 ;;
  *) echo "usage: push_bench.sh [--build DIR] [--runs N] [--push-reps N] [--rows FILE]" >&2; exit 2 ;;
  esac
done
w=$(mktemp -d /tmp/push_bench.XXXXXX)
"$build/sidecar/pushprof-sidecar" --socket "$w/s.sock" --spool "$w/spool" --export "file://$w/out" \
  --batch-window 5 --log-level debug 2>"$w/side.log" &
side=$!
trap 'kill $side 2>/dev/null; wait $side 2>/dev/null; rm -rf "$w"' EXIT
for _ in $(seq 100); do [ -S "$w/s.sock" ] && break; sleep 0.05; done
job=("$build/examples/demo_work" 0.01)
preload=$(realpath "$build/sdk/libpushprof_preload.so")
for _ in $(seq "$runs"); do
  t0=$(date +%s%N); "${job[@]}" >/dev/null; t1=$(date +%s%N)
  LD_PRELOAD="$preload" PUSHPROF_SOCKET="$w/s.sock" "${job[@]}" >/dev/null
  t2=$(date +%s%N)
  echo "$(((t1 - t0) / 1000)) $(((t2 - t1) / 1000))"
done >"$w/times"
accepted=$(grep -c 'msg="push accepted"' "$w/side.log" || true)
python3 - "$w/times" "$runs" "$accepted" "$rows" <<'PY'
import os, statistics, sys
sys.path.insert(0, os.path.join("tests", "bench"))
import benchrows
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
base = sorted(r[0] for r in rows); pushed = sorted(r[1] for r in rows)
def pct(v, p):  # the p50 is the median, as in the rows
    if p == 50: return statistics.median(v) / 1000
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] / 1000
print("exit-flush latency, 20 ms job (2 threads x 10 ms CPU), %s runs each, interleaved" % sys.argv[2])
print("| | p50 ms | p99 ms |")
print("|---|---|---|")
print("| no profiler | %.1f | %.1f |" % (pct(base, 50), pct(base, 99)))
print("| pushprof, pushing at exit | %.1f | %.1f |" % (pct(pushed, 50), pct(pushed, 99)))
added = sorted(r[1] - r[0] for r in rows)
print("| added (paired) | %.1f | %.1f |" % (pct(added, 50), pct(added, 99)))
print("pushes acked by the sidecar: %s of %s" % (sys.argv[3], sys.argv[2]))
if sys.argv[4]:
    ms = [a / 1000 for a in added]
    benchrows.add(sys.argv[4], "exit_flush_added_p50_ms",
                  "Exit-flush latency added to a 20 ms job, pushing to the sidecar, p50 (ms)", "", ms, 1)
    benchrows.add(sys.argv[4], "exit_flush_added_p99_ms",
                  "Exit-flush latency added to a 20 ms job, p99 of %d runs (ms)" % len(ms), "",
                  [pct(added, 99)], 1)
    benchrows.add(sys.argv[4], "exit_flush_acked_pct", "Exit pushes acked by the sidecar (%)", ">= 100",
                  [100.0 * int(sys.argv[3]) / int(sys.argv[2])], 0)
PY
echo
"$build/tests/bench_push" --runs "$push_reps" ${rows:+--rows "$rows"} "$w/s.sock"
