#!/usr/bin/env bash
# The whole test suite: installs what it needs, then builds and tests
#   1. the normal build (-Werror), every test;
#   2. ASan+UBSan, the unit and integration tests;
#   3. TSan, the threaded unit tests.
# Usage: bash tests/ci.sh            (from a clean clone; takes ~15 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
export GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-/tmp/pushprof-gocache}" HOME="${HOME:-/root}"
jobs=$(nproc)

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DPUSHPROF_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

echo "== clang-format =="
# The checked-in .clang-format is the style; a file that differs fails CI.
git ls-files '*.c' '*.h' '*.cpp' | xargs clang-format --dry-run --Werror
echo "clang-format: $(git ls-files '*.c' '*.h' '*.cpp' | wc -l) files clean"

echo "== normal build =="
build build-ci
ctest --test-dir build-ci --output-on-failure -j2

echo "== ASan+UBSan =="
build build-ci-asan -DPUSHPROF_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-ci-asan --output-on-failure -L 'unit|fuzz' -j2

echo "== TSan =="
build build-ci-tsan -DPUSHPROF_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-ci-tsan --output-on-failure -L tsan -j2
