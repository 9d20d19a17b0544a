#!/usr/bin/env bash
# `cmake --install` into a temporary prefix gives the documented files; a
# consumer builds against them with find_package (shared and static) and
# with pkg-config, runs and writes a profile; the libraries export only
# pushprof_* plus the interpositions it_sdk_exports.sh lists.
. "$(dirname "$0")/../lib.sh"
P=$T/prefix
cmake --install "$B" --prefix "$P" >"$T/install.log" || { cat "$T/install.log"; fail "cmake --install"; }
for f in lib/libpushprof.so lib/libpushprof.a lib/libpushprof_preload.so include/pushprof.h \
  lib/pkgconfig/pushprof.pc lib/cmake/pushprof/pushprofConfig.cmake \
  lib/cmake/pushprof/pushprofConfigVersion.cmake; do
  [ -e "$P/$f" ] || fail "missing $P/$f"
done
echo "ok installed files"

# Exports of the installed libraries: the same check as the build tree's.
bash "$(dirname "$0")/it_sdk_exports.sh" "$P/lib" || fail "installed libraries' exports"

src=$PUSHPROF_SOURCE_DIR/tests/integration/sdk/consumer
run_consumer() { # NAME BINARY
  rm -f "$T/c.pb.gz"
  "$2" "$T/c.pb.gz" || fail "$1 consumer exited with $?"
  "${CHECK[@]}" "$T/c.pb.gz" --quiet --min-samples 10 --expect-function '^consumer_spin$' ||
    fail "$1 consumer's profile"
  echo "ok $1 consumer"
}

# find_package(pushprof) -> pushprof::pushprof and pushprof::pushprof_static.
cmake -S "$src" -B "$T/cbuild" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="-fno-omit-frame-pointer $SAN_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SAN_FLAGS" >"$T/cmake.log" 2>&1 || { cat "$T/cmake.log"; fail "consumer configure"; }
cmake --build "$T/cbuild" >"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "consumer build"; }
readelf -d "$T/cbuild/consumer_shared" | grep -q 'libpushprof.so' || fail "consumer_shared does not link libpushprof.so"
readelf -d "$T/cbuild/consumer_static" | grep -q 'libpushprof.so' && fail "consumer_static links libpushprof.so"
run_consumer find_package-shared "$T/cbuild/consumer_shared"
run_consumer find_package-static "$T/cbuild/consumer_static"

# pkg-config, the .pc file found through PKG_CONFIG_PATH only.
export PKG_CONFIG_PATH=$P/lib/pkgconfig
[ "$(pkg-config --modversion pushprof)" = "$(sed -n 's/^#define PUSHPROF_VERSION_STRING "\(.*\)"/\1/p' "$P/include/pushprof.h")" ] ||
  fail "pkg-config version differs from the header"
# shellcheck disable=SC2046,SC2086
cc -O2 -fno-omit-frame-pointer $SAN_FLAGS "$src/consumer.c" -o "$T/consumer_pc" $(pkg-config --cflags --libs pushprof) \
  -Wl,-rpath,"$P/lib" || fail "pkg-config consumer build"
run_consumer pkg-config "$T/consumer_pc"
echo pass
