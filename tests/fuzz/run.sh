#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) in
# build-fuzz/ and runs each for SECONDS (default 60), one after the other.
#   bash tests/fuzz/run.sh [SECONDS] [TARGET...]     TARGET: pprof frame ...
# Each run starts from the committed corpus (tests/fuzz/corpus/<target>/,
# read only) plus the inputs earlier runs found (build-fuzz/fuzz-work/<target>/).
# A crash is saved into tests/fuzz/corpus/<target>/ as crash-<sha1>, so the
# replay test (ctest -L fuzz) keeps re-checking it once it is fixed; commit it
# only with the fix, or the replay test fails. Prints one line per target:
# seconds, executions, coverage, result. Exit status 1 if any target crashed.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
all=(frame pprof procmaps elfsym config env_config aws_creds pyroscope manifest journal cfi views)
targets=("${@:-${all[@]}}")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
build=${PUSHPROF_FUZZ_BUILD:-build-fuzz}

if ! command -v clang >/dev/null; then
  echo "run.sh: clang not found (install clang and libclang-rt-dev: bash tests/deps.sh)" >&2
  exit 2
fi
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DPUSHPROF_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null ||
  { echo "run.sh: the fuzz build failed (see: cmake --build $build)" >&2; exit 2; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
printf '%-12s %8s %12s %8s  %s\n' target seconds execs cov result
for t in "${targets[@]}"; do
  seeds=tests/fuzz/corpus/$t
  work=$build/fuzz-work/$t
  log=$build/fuzz-work/$t.log
  mkdir -p "$work" "$seeds"
  # -artifact_prefix: crashes land in the committed corpus directory.
  "$build/tests/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$seeds/" "$work" "$seeds" \
    >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ $rc -eq 0 ]; then
    result="no finding"
  else
    status=1
    found=$(grep -o "Test unit written to .*" "$log" | sed 's/Test unit written to //' | tail -1)
    result="FOUND: ${found:-exit $rc} (log: $log)"
  fi
  printf '%-12s %8s %12s %8s  %s\n' "$t" "$secs" "${execs:-?}" "${cov:-?}" "$result"
done
exit $status
