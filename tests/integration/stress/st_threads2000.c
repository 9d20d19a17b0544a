/* 2000 threads created and destroyed in waves of 50 while sampled; each
 * spins ~2 ms of CPU. Prints the thread count and a checksum of their ids. */
#include "st_common.h"
#include <pthread.h>

WL_SPIN_FN(st_thread_spin)

static void *worker(void *arg) {
  st_thread_spin(0.002);
  return arg;
}

int main(void) {
  enum { TOTAL = 2000, WAVE = 50 };
  pthread_t th[WAVE];
  uintptr_t sum = 0;
  for (int base = 0; base < TOTAL; base += WAVE) {
    for (int i = 0; i < WAVE; i++) {
      int rc = pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(base + i));
      ST_CHECK(rc == 0, "pthread_create");
    }
    for (int i = 0; i < WAVE; i++) {
      void *ret;
      ST_CHECK(pthread_join(th[i], &ret) == 0, "pthread_join");
      sum += (uintptr_t)ret;
    }
  }
  printf("threads=%d sum=%lu\n", TOTAL, (unsigned long)sum);
  return 0;
}
