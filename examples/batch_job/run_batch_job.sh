#!/bin/sh
# Runs batch_job (or any unmodified program) with pushprof preloaded: the SDK
# samples it and pushes one profile to the sidecar when it exits, so a job
# that lives under a second is still profiled. Exit status is the job's own.
#
# A crontab line (every 5 minutes):
#   */5 * * * * PUSHPROF_SOCKET=/run/pushprof/pushprof.sock /opt/app/run_batch_job.sh /opt/app/batch_job
#
#   run_batch_job.sh PROGRAM [ARGS...]
# Environment: PUSHPROF_SOCKET (the sidecar's socket, default
# /run/pushprof/pushprof.sock), PUSHPROF_PRELOAD (path of
# libpushprof_preload.so, default: found by the loader), PUSHPROF_SERVICE
# (default: the program's name).
set -eu
[ $# -ge 1 ] || { echo "usage: run_batch_job.sh PROGRAM [ARGS...]" >&2; exit 2; }
: "${PUSHPROF_SOCKET:=/run/pushprof/pushprof.sock}"
: "${PUSHPROF_PRELOAD:=libpushprof_preload.so}"
: "${PUSHPROF_SERVICE:=$(basename "$1")}"
export PUSHPROF_SOCKET PUSHPROF_SERVICE
# A short job pushes once, at exit; give the push up to 2 s so the job is
# never held up longer than that if the sidecar is slow or gone.
export PUSHPROF_EXIT_TIMEOUT_MS="${PUSHPROF_EXIT_TIMEOUT_MS:-2000}"
export LD_PRELOAD="$PUSHPROF_PRELOAD${LD_PRELOAD:+ $LD_PRELOAD}"
exec "$@"
