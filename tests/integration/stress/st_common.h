/* Shared by the stress workloads: a CPU spin measured on the thread's own
 * CPU clock (same as the SDK workloads) and a checked-call helper. Output
 * must not depend on timing: the tests compare stdout with and without the
 * profiler. */
#ifndef ST_COMMON_H
#define ST_COMMON_H
#include "../sdk/wl_common.h"
#include <string.h>

#define ST_CHECK(cond, what)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "workload: %s failed\n", what);                                              \
      exit(70);                                                                                    \
    }                                                                                              \
  } while (0)
#endif
