#!/usr/bin/env bash
# Installs the Debian packages pushprof builds and tests with, if missing.
# Shared by the README's two commands (examples/demo.sh and tests/ci.sh).
# chromium (test-only): it_views_browser opens the flame graphs in it.
# heaptrack (test-only): it_heap_debian compares heap profiles with it.
# nginx-light, apache2-utils (test-only): it_sdk_fork_nginx profiles nginx's
# forked workers under ab's load.
# libjemalloc2 (test-only): heap_overhead_bench.py runs jemalloc's heap profiler beside pushprof's.
# python3-protobuf (test-only): the OTLP receiver of tests/integration/otlp decodes with it.
# --arch arm64 adds what the aarch64 cross build (cmake/aarch64-linux-gnu.cmake)
# and its tests under qemu-user need: the cross compiler, the arm64 (multiarch)
# libraries and headers, and qemu-user. Any failure exits non-zero.
set -euo pipefail
arch=
case "${1-}" in
'') ;;
--arch)
  arch=${2-}
  [ "$arch" = arm64 ] || { echo "pushprof: deps.sh --arch: only arm64 is supported" >&2; exit 2; }
  ;;
*) echo "usage: tests/deps.sh [--arch arm64]" >&2; exit 2 ;;
esac
pkgs=(cmake make gcc g++ pkg-config git protobuf-c-compiler libprotobuf-c-dev zlib1g-dev libisal-dev
  python3-protobuf
  libelf-dev libdw-dev libmicrohttpd-dev libinih-dev libssl-dev libcurl4-openssl-dev libjansson-dev libxml2-dev
  golang-go libgoogle-perftools-dev python3 python3-yaml clang clang-format libclang-rt-14-dev curl
  util-linux procps xz-utils sqlite3 linux-perf binutils chromium heaptrack libjemalloc2
  nginx-light apache2-utils)
# npm (test-only: s3rver) may come from Debian or from a NodeSource nodejs that
# bundles it and conflicts with Debian's npm package: ask only when it is absent.
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
updated=0
if [ "$arch" = arm64 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo_cmd[@]}" dpkg --add-architecture arm64
    "${sudo_cmd[@]}" apt-get update -qq
    updated=1
  fi
  pkgs+=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user libc6:arm64)
  for p in zlib1g-dev libprotobuf-c-dev libelf-dev libdw-dev libmicrohttpd-dev \
    libinih-dev libssl-dev libcurl4-openssl-dev libjansson-dev libxml2-dev; do
    pkgs+=("$p:arm64")
  done
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "pushprof: installing ${missing[*]}" >&2
  ((updated)) || "${sudo_cmd[@]}" apt-get update -qq
  # Multiarch packages that cannot co-install replace the host's (as libisal
  # would): refuse rather than break the amd64 build.
  if [ "$arch" = arm64 ] && apt-get install -s "${missing[@]}" | grep '^Remv' >&2; then
    echo "pushprof: installing the arm64 packages would remove the packages above" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian's libisal packages are not multiarch: installing libisal-dev:arm64
# removes the amd64 one the host build needs. The arm64 files are unpacked
# into their own root instead, where cmake/aarch64-linux-gnu.cmake looks
# (its pkg-config file rewritten to point there).
if [ "$arch" = arm64 ]; then
  root=/opt/pushprof-arm64
  pc=$root/usr/lib/aarch64-linux-gnu/pkgconfig/libisal.pc
  if [ ! -f "$pc" ]; then
    echo "pushprof: unpacking libisal2:arm64 and libisal-dev:arm64 into $root" >&2
    tmp=$(mktemp -d)
    chmod 755 "$tmp" # apt-get download runs as _apt
    (cd "$tmp" && apt-get download -q libisal2:arm64 libisal-dev:arm64) >&2
    "${sudo_cmd[@]}" mkdir -p "$root"
    for d in "$tmp"/*.deb; do "${sudo_cmd[@]}" dpkg-deb -x "$d" "$root"; done
    "${sudo_cmd[@]}" sed -i "s|^prefix=.*|prefix=$root/usr|" "$pc"
    rm -rf "$tmp"
  fi
  grep -q "^prefix=$root/usr" "$pc" || { echo "pushprof: $pc is not usable" >&2; exit 1; }
fi
