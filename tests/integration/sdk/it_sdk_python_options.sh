#!/usr/bin/env bash
# The Python binding's start() options and error codes (python_options_test.py).
. "$(dirname "$0")/../lib.sh"
LD_PRELOAD=$SAN_RUNTIME SAN_RUNTIME=$SAN_RUNTIME ASAN_OPTIONS=$HOST_ASAN PUSHPROF_LIBRARY=$B/sdk/libpushprof.so \
  PYTHONPATH=$PUSHPROF_SOURCE_DIR/bindings/python \
  python3 "$(dirname "$0")/python_options_test.py" || fail "python_options_test.py"
echo pass
