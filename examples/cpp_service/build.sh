#!/bin/sh
# Builds cpp_service against an installed pushprof found by pkg-config:
#   PKG_CONFIG_PATH=/usr/local/lib/pkgconfig examples/cpp_service/build.sh [OUTPUT]
# (frame pointers let the sampler unwind the service's own code.)
set -eu
out=${1:-cpp_service}
here=$(dirname "$0")
# shellcheck disable=SC2046
c++ -std=c++17 -O2 -g -fno-omit-frame-pointer -pthread "$here/cpp_service.cpp" -o "$out" \
  $(pkg-config --cflags --libs pushprof) \
  -Wl,-rpath,"$(pkg-config --variable=libdir pushprof)"
