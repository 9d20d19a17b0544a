#!/usr/bin/env bash
# run_logged.sh CMD...: runs one script test (ctest's command) with its
# stdout and stderr copied to $PUSHPROF_TEST_LOG_DIR/$PUSHPROF_TEST_NAME/
# output.log, as well as to ctest. Area libraries copy the logs of the
# daemons they start (the sidecar's) into the same directory, so that
# it_sec_log_scan, which runs after every other test, reads every log line of
# the suite. Without PUSHPROF_TEST_LOG_DIR it only runs CMD.
[ -n "${PUSHPROF_TEST_LOG_DIR:-}" ] && [ -n "${PUSHPROF_TEST_NAME:-}" ] || exec "$@"
d=$PUSHPROF_TEST_LOG_DIR/$PUSHPROF_TEST_NAME
rm -rf "$d"
mkdir -p "$d" || exec "$@"
# One stream, so stdout and stderr lines stay in order; tee keeps ctest's
# live output (and what a test that times out printed).
rc=0
"$@" > >(tee "$d/output.log") 2>&1 || rc=$?
wait $! 2>/dev/null || true
exit $rc
