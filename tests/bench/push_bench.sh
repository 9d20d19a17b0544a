#!/usr/bin/env bash
# Exit-flush latency that pushing adds to a short job: the same 20 ms job run
# interleaved without the profiler and under LD_PRELOAD pushing to the real
# sidecar (file:// export), RUNS times each; prints p50/p99 wall times and
# the added latency. A figure, never a pass/fail.
#   tests/bench/push_bench.sh [--build DIR] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build runs=40
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  *) echo "usage: push_bench.sh [--build DIR] [--runs N]" >&2; exit 2 ;;
  esac
done
w=$(mktemp -d /tmp/push_bench.XXXXXX)
"$build/sidecar/pushprof-sidecar" --socket "$w/s.sock" --spool "$w/spool" --export "file://$w/out" \
  --batch-window 5 2>"$w/side.log" &
side=$!
trap 'kill $side 2>/dev/null; wait $side 2>/dev/null; rm -rf "$w"' EXIT
for _ in $(seq 100); do [ -S "$w/s.sock" ] && break; sleep 0.05; done
job=("$build/examples/demo_work" 0.01)
for i in $(seq "$runs"); do
  t0=$(date +%s%N); "${job[@]}" >/dev/null; t1=$(date +%s%N)
  LD_PRELOAD="$PWD/$build/sdk/libpushprof_preload.so" PUSHPROF_SOCKET="$w/s.sock" "${job[@]}" >/dev/null
  t2=$(date +%s%N)
  echo "$(((t1 - t0) / 1000)) $(((t2 - t1) / 1000))"
done >"$w/times"
accepted=$(grep -c 'msg="push accepted"' "$w/side.log" || true)
python3 - "$w/times" "$runs" "$accepted" <<'PY'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
base = sorted(r[0] for r in rows); pushed = sorted(r[1] for r in rows)
def pct(v, p): return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] / 1000
print("exit-flush latency, 20 ms job (2 threads x 10 ms CPU), %s runs each, interleaved" % sys.argv[2])
print("| | p50 ms | p99 ms |")
print("|---|---|---|")
print("| no profiler | %.1f | %.1f |" % (pct(base, 50), pct(base, 99)))
print("| pushprof, pushing at exit | %.1f | %.1f |" % (pct(pushed, 50), pct(pushed, 99)))
added = sorted(r[1] - r[0] for r in rows)
print("| added (paired) | %.1f | %.1f |" % (pct(added, 50), pct(added, 99)))
print("pushes acked by the sidecar: %s of %s" % (sys.argv[3], sys.argv[2]))
PY
