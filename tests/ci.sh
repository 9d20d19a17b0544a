#!/usr/bin/env bash
# The whole test suite: installs what it needs, then builds and tests
#   1. the normal build (-Werror), every test;
#   2. ASan+UBSan, the unit, fuzz-corpus and integration tests (SDK stress included);
#   3. TSan, the threaded unit tests;
#   4. the aarch64 cross build, its unwinder and arm64 tests under qemu-user.
# Usage: bash tests/ci.sh            (from a clean clone; ~25 min on 2 idle cores)
set -euo pipefail
cd "$(dirname "$0")/.."
ci_t0=$(date +%s)
phase() { echo "== $1 == (at $(($(date +%s) - ci_t0)) s)"; }
bash tests/deps.sh
export GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-/tmp/pushprof-gocache}" HOME="${HOME:-/root}"
jobs=$(nproc)

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DPUSHPROF_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

# run_ctest WHAT [ctest args...]: ctest, then how many of WHAT's tests
# skipped (exit 77) and which, so that a skip is never read as a pass (each
# says why in its output: Testing/Temporary/LastTest.log of the build).
# Returns ctest's exit status.
run_ctest() {
  local what=$1 log rc=0 skipped
  shift
  log=$(mktemp /tmp/pushprof-ctest.XXXXXX)
  ctest "$@" | tee "$log" || rc=$?
  skipped=$(sed -n 's/^[[:space:]]*[0-9][0-9]* - \(.*\) (Skipped)$/\1/p' "$log" | paste -sd' ' -)
  rm -f "$log"
  echo "$what: $(wc -w <<<"$skipped") skipped${skipped:+: $skipped}"
  return "$rc"
}

phase "clang-format"
# The checked-in .clang-format is the style; a file that differs fails CI.
git ls-files '*.c' '*.h' '*.cpp' | xargs clang-format --dry-run --Werror
echo "clang-format: $(git ls-files '*.c' '*.h' '*.cpp' | wc -l) files clean"

phase "normal build"
build build-ci
run_ctest "normal build" --test-dir build-ci --output-on-failure -j2

phase "ASan+UBSan"
# Unit, fuzz-corpus and integration tests, the SDK's stress cases included:
# workloads built here are instrumented, and uninstrumented hosts (bash,
# python3, xz) get the ASan runtime preloaded ahead of the SDK
# (tests/integration/lib.sh). Not run here, and why:
#   it_deploy_files  checks the release images: the final stages' library
#                    lists and the apps' LD_PRELOAD lines name the plain
#                    libraries, which an ASan build's are not (libasan first)
#   it_s3_creds, it_gcs_upload, it_pyroscope_faults, it_otlp_faults
#                    mostly wait out retry schedules (20 s each); the same
#                    exporter code runs under ASan in it_s3_upload,
#                    it_s3_faults, it_pyroscope_push, it_otlp_export and
#                    it_multi_target, their parsers in the fuzz replays
#   it_views_browser Chromium's view of the SVG (it_views runs the same
#                    pushprof binary under ASan)
# (CI's budget is 30 minutes on a machine that may be twice as slow as this
# one; the phase times printed above say where it goes.)
# (Setuid cases skip themselves in a sanitizer build: a setuid process cannot
# read the runtime's options from /proc/self/environ, and LeakSanitizer dies
# there; the normal build runs them.)
asan_skip='^(it_deploy_files|it_s3_creds|it_gcs_upload|it_pyroscope_faults|it_otlp_faults|it_views_browser)$'
build build-ci-asan -DPUSHPROF_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug
t0=$(date +%s)
# RUNS: it_example_batch_job's job count (50 by default, ~90 s under ASan on
# 2 busy cores, near its 120 s limit); 15 check the same path.
RUNS=15 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest "ASan+UBSan" --test-dir build-ci-asan --output-on-failure -L 'unit|fuzz|integration' \
    -E "$asan_skip" -j2
echo "ASan+UBSan tests: $(($(date +%s) - t0)) s"

phase "TSan"
build build-ci-tsan -DPUSHPROF_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
TSAN_OPTIONS=halt_on_error=1 run_ctest TSan --test-dir build-ci-tsan --output-on-failure -L tsan -j2
phase "arm64 (cross build, tests under qemu-user)"
# The whole tree cross-built for aarch64 (cmake/aarch64-linux-gnu.cmake),
# the SDK, sidecar and command installed; then, under qemu-aarch64, the
# SDK's unit tests (the unwinder against libdw on arm64 objects, leaves,
# signal frames, what the handler reaches) and tests/arm64 (aarch64 CFI,
# the 50/30/20 workload plain and pac-ret, preloaded and linked, a push
# through the sidecar read back by pushprof top). deps.sh exits non-zero if
# it cannot install the cross compiler, the arm64 libraries or qemu-user:
# the phase fails, never skips. SDK unit tests not run here, and why:
#   test_api          its cases posix_spawn /proc/self/exe, which qemu-user
#                     cannot start without binfmt_misc
#   test_sampler_linux, test_otel_ctx
#                     their fork cases: the child of a threaded, sampled
#                     process fails under qemu-user (its fork is emulated)
#   test_elfsym[_nopie], test_elfsym_file*
#                     x86-64 assembly (1-byte nops); the host's strip
#   test_otel_read, test_otel_foreign
#                     qemu-user answers process_vm_readv with ENOSYS, so
#                     another tracer's records and context read as nothing
#                     there (the safe outcome, which the tests' hostile
#                     cases check on x86-64)
t0=$(date +%s)
bash tests/deps.sh --arch arm64
command -v qemu-aarch64 >/dev/null || { echo "arm64: qemu-aarch64 missing after deps.sh" >&2; exit 1; }
build build-ci-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
DESTDIR="$PWD/build-ci-arm64/staging" cmake --install build-ci-arm64 --prefix /usr/local >/dev/null
readelf -h build-ci-arm64/staging/usr/local/bin/pushprof-sidecar | grep -q 'Machine: *AArch64' ||
  { echo "arm64: the installed sidecar is not an aarch64 program" >&2; exit 1; }
arm64_skip='^(test_api|test_sampler_linux|test_otel_ctx|test_elfsym|test_elfsym_nopie|test_elfsym_file.*|test_otel_read|test_otel_foreign)$'
run_ctest "arm64 SDK unit" --test-dir build-ci-arm64 --output-on-failure --no-tests=error -j2 -L unit -L sdk \
  -E "$arm64_skip"
run_ctest arm64 --test-dir build-ci-arm64 --output-on-failure --no-tests=error -L arm64
echo "arm64 phase: $(($(date +%s) - t0)) s"

phase "done"
