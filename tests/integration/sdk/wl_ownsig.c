/* A program with its own SIGPROF handler and ITIMER_PROF (installed by
 * libwl_ownsig_init.so before profiling starts, or with WL_OWNSIG_LATE=1
 * after) that must keep receiving its own signals while pushprof samples it.
 *   wl_ownsig [CPU seconds per thread, default 1.0]
 * Prints cpu_seconds, own_signals and foreign_signals. */
#include <pthread.h>
#include <string.h>

#include "wl_common.h"
#include "wl_ownsig.h"

WL_SPIN_FN(ownsig_spin)

static void *worker(void *arg) {
  return (void *)(uintptr_t)ownsig_spin(*(double *)arg);
}

int main(int argc, char **argv) {
  double seconds = wl_arg(argc, argv, 1.0, 600, "wl_ownsig [CPU seconds per thread, 0..600]");
  wl_start();
  const char *late = getenv("WL_OWNSIG_LATE");
  if (late && strcmp(late, "1") == 0 && ownsig_install_late() != 0) {
    fprintf(stderr, "wl_ownsig: setting SIGPROF's action failed\n");
    return 1;
  }
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, &seconds) != 0)
      return 1;
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  ownsig_disarm();
  wl_report();
  printf("own_signals=%ld\nforeign_signals=%ld\n", ownsig_own(), ownsig_foreign());
  return 0;
}
