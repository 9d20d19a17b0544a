/* Four threads hammering malloc/calloc/realloc/free with a fixed sequence
 * while sampled, so signals land inside the allocator. Prints a checksum of
 * the bytes written, identical with and without the profiler. */
#include "st_common.h"
#include <pthread.h>

enum { NTHREADS = 4, SLOTS = 256 };

__attribute__((noipa)) static void *st_malloc_worker(void *arg) {
  uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15u + 1;
  unsigned char *slot[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  uint64_t sum = 0;
  for (long i = 0; i < 3000000; i++) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    unsigned k = (unsigned)(seed >> 33) % SLOTS;
    size_t n = 1 + (size_t)(seed >> 45) % 4096;
    if (slot[k]) {
      sum += slot[k][size[k] - 1];
      if ((seed >> 20) & 1) {
        unsigned char *p = realloc(slot[k], n);
        ST_CHECK(p != NULL, "realloc");
        slot[k] = p;
        size[k] = n;
        p[n - 1] = (unsigned char)i;
        continue;
      }
      free(slot[k]);
      slot[k] = NULL;
      continue;
    }
    slot[k] = (seed >> 21) & 1 ? malloc(n) : calloc(1, n);
    ST_CHECK(slot[k] != NULL, "malloc");
    size[k] = n;
    slot[k][n - 1] = (unsigned char)i;
  }
  for (int k = 0; k < SLOTS; k++)
    free(slot[k]);
  return (void *)(uintptr_t)sum;
}

int main(void) {
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    ST_CHECK(pthread_create(&th[i], NULL, st_malloc_worker, (void *)(uintptr_t)i) == 0,
             "pthread_create");
  uint64_t total = 0;
  for (int i = 0; i < NTHREADS; i++) {
    void *ret;
    ST_CHECK(pthread_join(th[i], &ret) == 0, "pthread_join");
    total += (uint64_t)(uintptr_t)ret;
  }
  printf("threads=%d checksum=%lu\n", NTHREADS, (unsigned long)total);
  return 0;
}
