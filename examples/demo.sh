#!/usr/bin/env bash
# The main job: profile an unmodified program with LD_PRELOAD, push its
# profile through the sidecar into a local directory, and show where the
# time went with pushprof itself: a top table and a flame graph (no Go
# needed to read the profiles; Go is only the tests' independent parser).
#   bash examples/demo.sh [CPU seconds per thread]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
seconds=${1:-2}
build=build
cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

work=$(mktemp -d /tmp/pushprof-demo.XXXXXX)
out="$work/profiles"
"$build/sidecar/pushprof-sidecar" --socket "$work/pushprof.sock" --spool "$work/spool" \
  --export "file://$out" --batch-window 1 2>"$work/sidecar.log" &
sidecar=$!
trap 'kill $sidecar 2>/dev/null; wait $sidecar 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$work/pushprof.sock" ] && break; sleep 0.05; done

echo "== running demo_work under LD_PRELOAD=libpushprof_preload.so, pushing to the sidecar"
LD_PRELOAD="$PWD/$build/sdk/libpushprof_preload.so" PUSHPROF_SERVICE=demo-job \
  PUSHPROF_SOCKET="$work/pushprof.sock" PUSHPROF_LABELS=env=demo "$build/examples/demo_work" "$seconds"

for _ in $(seq 100); do
  prof=$(find "$out" -name '*.pb.gz' 2>/dev/null | head -1)
  [ -n "$prof" ] && break
  sleep 0.1
done
[ -n "$prof" ] || { echo "no profile arrived; sidecar log:"; cat "$work/sidecar.log"; exit 1; }
echo "== the sidecar wrote: $prof"
echo "== where the time went (pushprof top $out):"
"$build/views/pushprof" top --nodecount 10 "$out"
"$build/views/pushprof" flame -o "$work/flame.svg" "$out"
echo "== flame graph (open it in a browser; click to zoom, Search to highlight): $work/flame.svg"
