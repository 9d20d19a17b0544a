/* Many short threads: N threads (default 1000) of ~5 ms CPU each, at most
 * W (default 50) alive at once.
 *   wl_short_threads [N] [W] */
#include <pthread.h>
#include <stdatomic.h>

#include "wl_common.h"

WL_SPIN_FN(short_thread_spin)

/* CPU the workers spent in their start routine, the part a per-thread timer
 * armed at thread start always covers. The process's CPU time also holds
 * thread creation and teardown (in the creating thread, and in the new
 * thread before its timer is armed or after it is gone), which a sanitizer
 * runtime makes as long as the work itself. */
static _Atomic uint64_t g_worker_cpu_ns;

static void *worker(void *arg) {
  (void)arg;
  double t0 = wl_thread_cpu();
  uint64_t r = short_thread_spin(0.005);
  atomic_fetch_add(&g_worker_cpu_ns, (uint64_t)((wl_thread_cpu() - t0) * 1e9));
  return (void *)(uintptr_t)r;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  int w = argc > 2 ? atoi(argv[2]) : 50;
  if (n < 1 || n > 100000 || w < 1 || w > 1000) {
    fprintf(stderr, "usage: wl_short_threads [threads 1..100000] [alive at once 1..1000]\n");
    return 2;
  }
  wl_start();
  pthread_t *t = calloc((size_t)w, sizeof *t);
  if (!t)
    return 1;
  for (int done = 0; done < n;) {
    int k = n - done < w ? n - done : w;
    for (int i = 0; i < k; i++)
      if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
        fprintf(stderr, "wl_short_threads: pthread_create failed after %d threads\n", done + i);
        return 1;
      }
    for (int i = 0; i < k; i++)
      pthread_join(t[i], NULL);
    done += k;
  }
  free(t);
  wl_report();
  printf("worker_cpu_seconds=%.6f\n", (double)atomic_load(&g_worker_cpu_ns) / 1e9);
  printf("threads=%d\n", n);
  return 0;
}
