/* A small library the dlopen stress test loads and unloads in a loop. */
#include "st_common.h"

__attribute__((visibility("default"))) uint64_t st_dlburn(double seconds);
WL_SPIN_FN(st_dlburn)
