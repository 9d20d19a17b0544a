#!/usr/bin/env bash
# S3 exporter benchmarks. Not a test: prints figures, never fails on
# time. Uses the real pushprof-sidecar and s3rver (npm, cached in BUILD/npm),
# signing for real (s3rver checks the SigV4 signature with its default
# S3RVER/S3RVER account).
#
#   bash tests/bench/s3_bench.sh [--build DIR] [--runs N] [--batches N] [--samples N]
#        [--pending N] [--settle SECONDS] [--rows FILE] [--no-build]
#
# 1. Upload throughput, --runs times: N push frames with distinct services
#    (so N batches) are placed in the spool before the sidecar starts; it
#    resumes them and uploads; batches/s and MB/s come from the first to the
#    last "batch exported" log line, CPU from /proc/PID/stat (everything:
#    resume, merge, gzip, hash, sign, upload) divided by the MB uploaded.
# 2. RSS with --pending batches waiting: the same with the endpoint down
#    (a closed port), measured once every batch is formed and has been
#    failing for --settle seconds (default 5).
# --rows FILE appends the figures as rows for tests/bench/run (benchrows.py);
# --no-build uses the binaries in --build as they are.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib_bench.sh
build=build runs=3 batches=200 samples=30000 pending=10000 settle=5 rows="" build_it=1
bench_args s3_bench "build runs batches samples pending settle rows" "$@"
bench_build pushprof-sidecar gen_pprof
B=$(realpath "$build")
npm_dir=$B/npm
mkdir -p "$npm_dir"
( # flock'ed like tests/integration/s3/lib_s3.sh: tests may install it meanwhile
  flock 9
  if [ ! -x "$npm_dir/node_modules/.bin/s3rver" ]; then
    npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error s3rver@3.7.1 >/dev/null
  fi
) 9>"$npm_dir/.lock"
bench_workdir s3bench
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

make_spool() {
  mkdir -p "$1"
  "$B/tests/gen_pprof" frame "$W/tmpl.push" ok --service bsvc-00000 --samples "$3" >/dev/null
  python3 - "$W/tmpl.push" "$1" "$2" <<'PY'
import sys
t = open(sys.argv[1], "rb").read()
assert t.count(b"bsvc-00000") == 1
for i in range(int(sys.argv[3])):
    with open("%s/sdk-%05d.push" % (sys.argv[2], i), "wb") as f:
        f.write(t.replace(b"bsvc-00000", b"bsvc-%05d" % i))
PY
}

s3p=$(free_port)
"$npm_dir/node_modules/.bin/s3rver" -d "$W/s3data" -a 127.0.0.1 -p "$s3p" --silent \
  --no-vhost-buckets --configure-bucket bench >"$W/s3rver.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$s3p/" && break; sleep 0.1; done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI

# --- 1. throughput, --runs times (a fresh sidecar on a fresh copy of the spool) ---
make_spool "$W/spool0" "$batches" "$samples"
spool_mb=$(du -sm "$W/spool0" | cut -f1)
for r in $(seq "$runs"); do
  rm -rf "$W/spool1"
  cp -r "$W/spool0" "$W/spool1"
  "$B/sidecar/pushprof-sidecar" --socket "$W/s1.sock" --spool "$W/spool1" --export "s3://bench/t$r" \
    --s3-endpoint "http://127.0.0.1:$s3p" --batch-window 1 --node-name bench 2>"$W/s1.log" &
  sc=$!
  pids+=("$sc")
  t0=$(cpu_ticks $sc)
  for _ in $(seq 6000); do
    n=$(grep -c 'msg="batch exported"' "$W/s1.log" || true)
    [ "$n" -ge "$batches" ] && break
    sleep 0.1
  done
  t1=$(cpu_ticks $sc)
  kill -TERM $sc
  wait $sc || true
  python3 - "$W/s1.log" "$((t1 - t0))" "$hz" "$W/runs" <<'PY'
import re, sys, datetime
ts, total = [], 0
for line in open(sys.argv[1]):
    if 'msg="batch exported"' in line:
        t = re.search(r"ts=(\S+)Z", line).group(1)
        ts.append(datetime.datetime.fromisoformat(t).timestamp())
        total += int(re.search(r" bytes=(\d+)", line).group(1))
cpu = int(sys.argv[2]) / float(sys.argv[3])
dur = ts[-1] - ts[0] if len(ts) > 1 else float("nan")
mb = total / 1e6
nan = float("nan")
bps = (len(ts) - 1) / dur if len(ts) > 1 else nan
mbps = mb * (len(ts) - 1) / len(ts) / dur if len(ts) > 1 else nan
cpu_mb = cpu / mb if mb else nan
print("upload: %d batches, %.1f MB gzipped (%.0f KB each)" % (len(ts), mb, total / 1e3 / max(1, len(ts))))
print("upload throughput: %.1f batches/s, %.2f MB/s (first to last upload, %.2f s)" % (bps, mbps, dur))
print("sidecar CPU: %.2f s in all (resume+merge+gzip+upload), %.3f CPU-s per MB uploaded" % (cpu, cpu_mb))
with open(sys.argv[4], "a") as f:
    f.write("%r %r %r %d\n" % (bps, mbps, cpu_mb, total // max(1, len(ts))))
PY
done
echo "(spool input: ${spool_mb} MB of frames; $runs runs)"
if [ -n "$rows" ]; then
  python3 - "$W/runs" "$rows" "$batches" <<'PY'
import os, sys
sys.path.insert(0, os.path.join("tests", "bench"))
import benchrows
runs = [l.split() for l in open(sys.argv[1])]
kb = sorted(int(r[3]) for r in runs)[len(runs) // 2] / 1e3
what = "%s batches of ~%.0f KB gzipped" % (sys.argv[3], kb)
benchrows.add(sys.argv[2], "s3_upload_batches_per_s", "S3 upload via s3rver, %s (batches/s)" % what, "",
              [r[0] for r in runs], 1)
benchrows.add(sys.argv[2], "s3_upload_mb_per_s", "S3 upload via s3rver, the same (MB/s)", "", [r[1] for r in runs], 2)
benchrows.add(sys.argv[2], "s3_cpu_s_per_mb", "Sidecar CPU per MB uploaded to S3 (CPU s/MB)", "",
              [r[2] for r in runs], 3)
PY
fi

# --- 2. RSS with many batches pending ---
make_spool "$W/spool2" "$pending" 200
mport=$(free_port) dead=$(free_port)
"$B/sidecar/pushprof-sidecar" --socket "$W/s2.sock" --spool "$W/spool2" --export s3://bench/p \
  --s3-endpoint "http://127.0.0.1:$dead" --batch-window 1 --node-name bench \
  --metrics-addr "127.0.0.1:$mport" 2>"$W/s2.log" &
sc=$!
pids+=("$sc")
start=$(date +%s)
for _ in $(seq 1200); do
  p=$(curl -sf "http://127.0.0.1:$mport/metrics" | awk '$1 == "pushprof_pending_batches" {print $2}' || true)
  [ "${p:-0}" -ge "$pending" ] && break
  sleep 0.5
done
sleep "$settle" # every batch sealed and retrying
rss=$(awk '/VmRSS/ {print $2}' "/proc/$sc/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$sc/status")
retries=$(curl -sf "http://127.0.0.1:$mport/metrics" | awk '$1 == "pushprof_export_retries_total" {print $2}' || true)
echo "pending: ${p:-?} batches waiting (endpoint down, $retries retries so far, $(( $(date +%s) - start )) s): RSS $((rss / 1024)) MiB, peak $((hwm / 1024)) MiB"
if [ -n "$rows" ]; then
  # Only a figure when every batch was pending, else it says less than its label.
  [ "${p:-0}" -ge "$pending" ] || rss=nan
  python3 tests/bench/benchrows.py add "$rows" s3_rss_pending_mib \
    "Sidecar RSS with $pending S3 batches pending, endpoint down (MiB)" "" 1 \
    "$(awk -v k="$rss" 'BEGIN {if (k == "nan") print "nan"; else printf "%.1f", k / 1024}')"
fi
kill -KILL $sc # its batches are only there to be counted: no grace period
wait $sc 2>/dev/null || true
