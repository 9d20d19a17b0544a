#!/usr/bin/env bash
# SDK benchmarks: CPU overhead at 100 Hz and accuracy, pushprof next
# to gperftools, interleaved runs, medians. Prints figures; never fails on time.
#   bash tests/bench/sdk_bench.sh [--build DIR] [--runs N] [--hz HZ] [--units U]
set -euo pipefail
cd "$(dirname "$0")/../.."
export HOME="${HOME:-/root}" GOCACHE="${GOCACHE:-/tmp/pushprof-gocache}"
build=build
args=()
while (($#)); do
  case $1 in
  --build) build=$2; shift ;;
  *) args+=("$1") ;;
  esac
  shift
done
[ -e "$build/sdk/libpushprof_preload.so" ] || {
  cmake -S . -B "$build" >/dev/null && cmake --build "$build" -j"$(nproc)" >/dev/null
}
python3 tests/bench/sdk_bench.py --build "$build" "${args[@]}"
