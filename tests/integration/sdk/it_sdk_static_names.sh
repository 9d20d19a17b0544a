#!/usr/bin/env bash
# libpushprof.a keeps its internal names to itself: a program defining the
# same names as the SDK's modules and protobuf-c code (wl_static_names.c)
# links against it without duplicate symbols (built here, so a collision is
# this test's failure, not the build's), calls its own definitions, and is
# profiled. See also it_sdk_exports.sh.
. "$(dirname "$0")/../lib.sh"
src=$PUSHPROF_SOURCE_DIR/tests/integration/sdk
mkdir -p "$T/prof"
# shellcheck disable=SC2086
cc -O1 -fno-omit-frame-pointer $SAN_FLAGS -DWL_LINKED -I"$PUSHPROF_SOURCE_DIR/sdk/include" \
  "$src/wl_static_names.c" -o "$T/wl_static_names" "$B/sdk/libpushprof.a" \
  $(pkg-config --libs libprotobuf-c libelf zlib) -lpthread -ldl -lrt >"$T/cc.log" 2>&1 ||
  fail "linking against libpushprof.a: $(cat "$T/cc.log")"
echo "ok linked with the SDK's internal names defined by the program"
rc=0
"$T/wl_static_names" "$T/prof/names-%p.pb.gz" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 0 ] || fail "wl_static_names exited $rc: $(cat "$T/out" "$T/err")"
echo "ok $(out_value names_ok) of the program's own definitions called and intact"
prof=$(the_profile)
cpu=$(out_value cpu_seconds)
"${CHECK[@]}" "$prof" --quiet --value samples/count --expect-total "$(calc "$cpu*100")":15 \
  --expect-function '^static_names_spin$' || fail "the profile"
echo pass
