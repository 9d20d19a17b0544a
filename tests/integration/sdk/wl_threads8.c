/* Eight threads doing equal CPU work, each in a function of its own so each
 * thread's share is visible in the profile.
 *   wl_threads8 [CPU seconds per thread, default 0.75]
 * The static-library variant (WL_STATIC) registers each thread itself and
 * calls pushprof_stop() explicitly, checking its result. */
#include <pthread.h>

#include "wl_common.h"

WL_SPIN_FN(thread_work_0)
WL_SPIN_FN(thread_work_1)
WL_SPIN_FN(thread_work_2)
WL_SPIN_FN(thread_work_3)
WL_SPIN_FN(thread_work_4)
WL_SPIN_FN(thread_work_5)
WL_SPIN_FN(thread_work_6)
WL_SPIN_FN(thread_work_7)

static uint64_t (*const work[8])(double) = {thread_work_0, thread_work_1, thread_work_2,
                                            thread_work_3, thread_work_4, thread_work_5,
                                            thread_work_6, thread_work_7};
static double seconds;

static void *worker(void *arg) {
#ifdef WL_STATIC
  int rc = pushprof_thread_register();
  if (rc != 0) {
    fprintf(stderr, "wl_threads8: pushprof_thread_register: %s\n", pushprof_strerror(rc));
    exit(4);
  }
#endif
  return (void *)(uintptr_t)work[(uintptr_t)arg](seconds);
}

int main(int argc, char **argv) {
  seconds = wl_arg(argc, argv, 0.75, 600, "wl_threads8 [CPU seconds per thread, 0..600]");
  wl_start();
  pthread_t t[8];
  for (uintptr_t i = 0; i < 8; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
      fprintf(stderr, "wl_threads8: pthread_create failed\n");
      return 1;
    }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  wl_report();
#ifdef WL_STATIC
  int rc = pushprof_stop();
  if (rc != 0) {
    fprintf(stderr, "wl_threads8: pushprof_stop: %s\n", pushprof_strerror(rc));
    return 5;
  }
  if (pushprof_stop() != PUSHPROF_ENOTSTARTED) {
    fprintf(stderr, "wl_threads8: a second pushprof_stop did not say ENOTSTARTED\n");
    return 6;
  }
#endif
  return 0;
}
