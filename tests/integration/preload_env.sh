# Sourced by the integration scripts that load the SDK into a process: how to
# do that in the build under test (normal, ASan+UBSan or TSan). ctest passes
# the values (tests/testing.cmake); a sanitizer build needs its runtime
# preloaded ahead of the SDK in a program the build did not instrument.
#   PRELOAD      LD_PRELOAD value for libpushprof_preload.so
#   SAN_RUNTIME  "" (normal build) or the sanitizer runtime: LD_PRELOAD value
#                for an uninstrumented program that links or dlopens
#                libpushprof.so (python3 via ctypes, a consumer built apart)
#   SAN_FLAGS    compile and link flags for a consumer a test builds
#   HOST_ASAN    ASAN_OPTIONS for an uninstrumented host (bash, python3, xz):
#                leak checking off, their own leaks are not ours (ours are
#                checked in the workloads this build instruments)
: "${PUSHPROF_TEST_PRELOAD:?run through ctest (PUSHPROF_TEST_PRELOAD unset)}"
PRELOAD=$PUSHPROF_TEST_PRELOAD
SAN_RUNTIME=${PUSHPROF_TEST_SAN_RUNTIME:-}
SAN_FLAGS=${PUSHPROF_TEST_SAN_FLAGS:-}
HOST_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
