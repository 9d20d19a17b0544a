/* Exits with the status it is given after a little CPU work, so a test can
 * check that profiling (or refusing to) never changes a host's exit status.
 *   wl_exit_probe STATUS [CPU seconds, default 0.1]
 * The linked variant calls pushprof_start(NULL) and prints start_rc=N. */
#include "wl_common.h"

WL_SPIN_FN(probe_spin)

int main(int argc, char **argv) {
  int status = argc > 1 ? atoi(argv[1]) : 0;
  double seconds = argc > 2 ? atof(argv[2]) : 0.1;
#ifdef WL_LINKED
  printf("start_rc=%d\n", pushprof_start(NULL));
  fflush(stdout);
#endif
  probe_spin(seconds);
  return status;
}
