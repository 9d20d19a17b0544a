/* Shared by the stress workloads: a CPU spin measured on the thread's own
 * CPU clock (same as the SDK workloads), a checked-call helper and a child
 * reaper. Output
 * must not depend on timing: the tests compare stdout with and without the
 * profiler. */
#ifndef ST_COMMON_H
#define ST_COMMON_H
#include "../sdk/wl_common.h"
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#define ST_CHECK(cond, what)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "workload: %s failed\n", what);                                              \
      exit(70);                                                                                    \
    }                                                                                              \
  } while (0)

/* Waits for the child pid: 1 if it exited with status 0, else 0. */
static inline int st_reap(pid_t pid) {
  int status;
  ST_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
#endif
