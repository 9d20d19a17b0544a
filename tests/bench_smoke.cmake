# tests/bench/run --smoke --check: every benchmark still runs and delivers its
# rows of the one table (tiny runs: the figures mean nothing, nothing is timed).
# (The bench programs are defined by areas included after this one; they exist
# whenever the SDK objects and the sidecar do.)
if(TARGET pushprof_sdk_objs AND TARGET pushprof-sidecar)
  pushprof_script_test(NAME bench_smoke
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/run --smoke --no-build --check
      --build ${CMAKE_BINARY_DIR}
    LABELS bench-smoke TIMEOUT 300)
endif()
