#!/bin/sh
# Profiles an unmodified Debian binary, xz, with environment variables only:
# no rebuild, no code change. The SDK is preloaded into each xz process,
# samples it, and pushes the profile to the sidecar when xz exits. The story:
# compress a disk-image-like file (log text, then mostly zeros) and verify
# the archive with xz -t, as a backup job would.
#
#   profile_xz.sh [MEGABYTES]      (default 150; the work is in a temp dir)
# Environment: PUSHPROF_SOCKET (the sidecar's socket, default
# /run/pushprof/pushprof.sock), PUSHPROF_PRELOAD (path of
# libpushprof_preload.so, default: found by the loader).
#
# The same variables profile any dynamically linked program:
#   LD_PRELOAD=libpushprof_preload.so PUSHPROF_SOCKET=/run/pushprof/pushprof.sock \
#     PUSHPROF_SERVICE=nightly-backup  tar -cJf /backup/etc.tar.xz /etc
set -eu
mb=${1:-150}
case $mb in '' | *[!0-9]*) echo "profile_xz.sh: MEGABYTES must be a number, got \"$mb\"" >&2; exit 2 ;; esac
: "${PUSHPROF_SOCKET:=/run/pushprof/pushprof.sock}"
: "${PUSHPROF_PRELOAD:=libpushprof_preload.so}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/profile_xz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
profiled() { # only these processes get the SDK
  PUSHPROF_SERVICE=xz PUSHPROF_SOCKET=$PUSHPROF_SOCKET LD_PRELOAD=$PUSHPROF_PRELOAD "$@"
}
{
  seq 1 20000 | awk '{ printf "%08d GET /api/v1/items/%d?page=%d status=%d\n", $1, ($1 * 7919) % 100003, $1 % 97, 200 + ($1 % 5) }'
  head -c "$((mb * 1024 * 1024))" /dev/zero
} | profiled xz -1 -T1 --check=crc32 -c >"$tmp/image.xz"
profiled xz -t "$tmp/image.xz"
echo "profile_xz.sh: compressed $mb MiB to $(wc -c <"$tmp/image.xz") bytes and verified it"
