#!/usr/bin/env bash
# S3 exporter benchmarks (issue 5). Not a test: prints figures, never fails on
# time. Uses the real pushprof-sidecar and s3rver (npm, cached in BUILD/npm),
# signing for real (s3rver checks the SigV4 signature with its default
# S3RVER/S3RVER account).
#
#   bash tests/bench/s3_bench.sh [--build DIR] [--batches N] [--samples N] [--pending N]
#
# 1. Upload throughput: N push frames with distinct services (so N batches)
#    are placed in the spool before the sidecar starts; it resumes them and
#    uploads; batches/s and MB/s come from the first to the last "batch
#    exported" log line, CPU from /proc/PID/stat (everything: resume, merge,
#    gzip, hash, sign, upload) divided by the MB uploaded.
# 2. RSS with --pending batches waiting: the same with the endpoint down
#    (a closed port), measured once every batch is formed and failing.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build batches=200 samples=30000 pending=10000
while (($#)); do
  case $1 in
  --build) build=$2; shift ;;
  --batches) batches=$2; shift ;;
  --samples) samples=$2; shift ;;
  --pending) pending=$2; shift ;;
  *) echo "s3_bench: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" --target pushprof-sidecar gen_pprof >/dev/null
B=$PWD/$build
npm_dir=$B/npm
if [ ! -x "$npm_dir/node_modules/.bin/s3rver" ]; then
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error s3rver@3.7.1 >/dev/null
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/pushprof-s3bench.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# make_spool DIR COUNT SAMPLES: COUNT frames, services bsvc-00000.. (patched
# in place: same length, so the protobuf stays valid).
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

# --- 1. throughput ---
make_spool "$W/spool1" "$batches" "$samples"
spool_mb=$(du -sm "$W/spool1" | cut -f1)
"$B/sidecar/pushprof-sidecar" --socket "$W/s1.sock" --spool "$W/spool1" --export s3://bench/t \
  --s3-endpoint "http://127.0.0.1:$s3p" --batch-window 1 --node-name bench 2>"$W/s1.log" &
sc=$!
pids+=($sc)
t0=$(cpu_ticks $sc)
for _ in $(seq 6000); do
  n=$(grep -c 'msg="batch exported"' "$W/s1.log" || true)
  [ "$n" -ge "$batches" ] && break
  sleep 0.1
done
t1=$(cpu_ticks $sc)
kill -TERM $sc; wait $sc || true
python3 - "$W/s1.log" "$((t1 - t0))" "$hz" <<'PY'
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
print("upload: %d batches, %.1f MB gzipped (%.0f KB each)" % (len(ts), mb, total / 1e3 / len(ts)))
print("upload throughput: %.1f batches/s, %.2f MB/s (first to last upload, %.2f s)" % ((len(ts) - 1) / dur, mb * (len(ts) - 1) / len(ts) / dur, dur))
print("sidecar CPU: %.2f s in all (resume+merge+gzip+upload), %.3f CPU-s per MB uploaded" % (cpu, cpu / mb))
PY
echo "(spool input: ${spool_mb} MB of frames)"

# --- 2. RSS with many batches pending ---
make_spool "$W/spool2" "$pending" 200
mport=$(free_port) dead=$(free_port)
"$B/sidecar/pushprof-sidecar" --socket "$W/s2.sock" --spool "$W/spool2" --export s3://bench/p \
  --s3-endpoint "http://127.0.0.1:$dead" --batch-window 1 --node-name bench \
  --metrics-addr "127.0.0.1:$mport" 2>"$W/s2.log" &
sc=$!
pids+=($sc)
start=$(date +%s)
for _ in $(seq 1200); do
  p=$(curl -sf "http://127.0.0.1:$mport/metrics" | awk '$1 == "pushprof_pending_batches" {print $2}')
  [ "${p:-0}" -ge "$pending" ] && break
  sleep 0.5
done
sleep 5 # every batch sealed and retrying
rss=$(awk '/VmRSS/ {print $2}' "/proc/$sc/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$sc/status")
retries=$(curl -sf "http://127.0.0.1:$mport/metrics" | awk '$1 == "pushprof_export_retries_total" {print $2}')
echo "pending: ${p:-?} batches waiting (endpoint down, $retries retries so far, $(( $(date +%s) - start )) s): RSS $((rss / 1024)) MiB, peak $((hwm / 1024)) MiB"
kill -TERM $sc; wait $sc || true
