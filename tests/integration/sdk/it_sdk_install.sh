#!/usr/bin/env bash
# `cmake --install` into a temporary prefix gives the documented files; a
# consumer builds against them with find_package (shared and static) and
# with pkg-config, runs and writes a profile; the .so files export only
# pushprof_* plus the symbols listed below.
. "$(dirname "$0")/sdk_lib.sh"
P=$T/prefix
cmake --install "$B" --prefix "$P" >"$T/install.log" || { cat "$T/install.log"; fail "cmake --install"; }
for f in lib/libpushprof.so lib/libpushprof.a lib/libpushprof_preload.so include/pushprof.h \
  lib/pkgconfig/pushprof.pc lib/cmake/pushprof/pushprofConfig.cmake \
  lib/cmake/pushprof/pushprofConfigVersion.cmake; do
  [ -e "$P/$f" ] || fail "missing $P/$f"
done
echo "ok installed files"

# Exports. Each allowed extra is deliberate:
#   pthread_create  interposed so threads created later are sampled
#   dlclose         interposed so a library's symbols outlive its unloading
#   exec*, _exit, _Exit (preload only): flush the last window before the
#                   process replaces itself or skips atexit
allowed='^(pushprof_[A-Za-z0-9_]+|pthread_create|dlclose)$'
allowed_preload='^(execve|execv|execvp|execvpe|fexecve|execl|execlp|execle|_exit|_Exit)$'
for so in libpushprof.so libpushprof_preload.so; do
  syms=$(nm -D --defined-only "$P/lib/$so" | awk '{print $3}' | sed 's/@.*//' | sort -u)
  [ -n "$syms" ] || fail "$so exports nothing"
  bad=$(grep -Ev "$allowed" <<<"$syms" || true)
  [ "$so" = libpushprof_preload.so ] && bad=$(grep -Ev "$allowed_preload" <<<"$bad" || true)
  [ -z "$bad" ] || fail "$so exports symbols outside the API: $(echo $bad)"
  for api in pushprof_start pushprof_stop pushprof_thread_register pushprof_strerror pushprof_version; do
    grep -qx "$api" <<<"$syms" || fail "$so does not export $api"
  done
  echo "ok $so exports: $(echo $syms)"
done
# The preload library starts itself; the linked one must not.
nm -D --defined-only "$P/lib/libpushprof.so" | grep -q ' pthread_create' ||
  fail "libpushprof.so does not interpose pthread_create"

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
