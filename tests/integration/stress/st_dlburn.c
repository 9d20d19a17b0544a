/* A small library the dlopen stress test loads and unloads in a loop. Built
 * -O2 -fomit-frame-pointer (sdk_stress.cmake), so only its CFI unwinds it:
 * each exported entry point is a non-leaf without a frame pointer calling a
 * frameless leaf (st_mix.h). "early" runs right after dlopen (the SDK may
 * have no table for this load yet), "late" once it has had time to build
 * one. */
#include "st_mix.h"

__attribute__((visibility("default"))) uint64_t st_dlburn_early(double seconds);
__attribute__((visibility("default"))) uint64_t st_dlburn_late(double seconds);

ST_MIX_LEAF(__attribute__((noipa)) static, st_dlburn_leaf_early)
ST_MIX_LEAF(__attribute__((noipa)) static, st_dlburn_leaf_late)
ST_MIX_OUTER(st_dlburn_early, st_dlburn_leaf_early)
ST_MIX_OUTER(st_dlburn_late, st_dlburn_leaf_late)
