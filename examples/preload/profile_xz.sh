#!/bin/sh
# Profiles an unmodified Debian binary, xz, with environment variables only:
# no rebuild, no code change. The SDK is preloaded, samples xz while it
# compresses generated text, and pushes the profile to the sidecar at exit.
#
#   profile_xz.sh [MEGABYTES]      (default 8)
# Environment: PUSHPROF_SOCKET (the sidecar's socket, default
# /run/pushprof/pushprof.sock), PUSHPROF_PRELOAD (path of
# libpushprof_preload.so, default: found by the loader).
#
# The same three variables profile any dynamically linked program:
#   LD_PRELOAD=libpushprof_preload.so PUSHPROF_SOCKET=/run/pushprof/pushprof.sock \
#     PUSHPROF_SERVICE=nightly-backup  tar -cJf /backup/etc.tar.xz /etc
set -eu
mb=${1:-8}
case $mb in '' | *[!0-9]*) echo "profile_xz.sh: MEGABYTES must be a number, got \"$mb\"" >&2; exit 2 ;; esac
: "${PUSHPROF_SOCKET:=/run/pushprof/pushprof.sock}"
: "${PUSHPROF_PRELOAD:=libpushprof_preload.so}"
# Compressible but not trivial input: numbered log-like lines.
seq 1 $((mb * 1024 * 1024 / 48)) |
  awk '{ printf "%08d GET /api/v1/items/%d?page=%d status=%d\n", $1, ($1 * 7919) % 100003, $1 % 97, 200 + ($1 % 5) }' |
  PUSHPROF_SERVICE=xz PUSHPROF_SOCKET=$PUSHPROF_SOCKET LD_PRELOAD=$PUSHPROF_PRELOAD \
    xz -6 -T1 -c >/dev/null
