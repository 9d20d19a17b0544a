/* The sampler's thread table (sdk/threads_linux.c) without the sampler:
 * the main thread's stack bounds and the CPU time of the SDK's own
 * threads. test_sampler_linux drives the slots and timers through the
 * sampler. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pp_test.h"
#include "threads_linux.h"

/* The main thread's bounds come from AT_EXECFN, not /proc/self/maps: the top
 * is the end of the [stack] mapping (never past it: the unwinder would read
 * unmapped memory), the caller's frame lies inside, and another thread's
 * stack is refused. */
static void *main_bounds_off_main(void *arg) {
  uintptr_t lo, hi;
  *(int *)arg = threads_main_stack_bounds(&lo, &hi);
  return NULL;
}

static void test_threads_main_stack_bounds_match_the_stack_mapping(void) {
  uintptr_t lo = 0, hi = 0;
  volatile char here = 0;
  PP_CHECK_INT(threads_main_stack_bounds(&lo, &hi), ==, 0);
  PP_CHECK(lo < (uintptr_t)&here && (uintptr_t)&here < hi);
  FILE *f = fopen("/proc/self/maps", "r");
  PP_CHECK(f != NULL);
  char line[512];
  unsigned long a = 0, b = 0, found = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &a, &b) == 2)
      found = 1;
  if (f)
    fclose(f);
  PP_CHECK(found);
  PP_CHECK_INT(hi, ==, b);
  PP_CHECK(lo <= a);
  pthread_t t;
  int rc = 0;
  PP_CHECK_INT(pthread_create(&t, NULL, main_bounds_off_main, &rc), ==, 0);
  pthread_join(t, NULL);
  PP_CHECK_INT(rc, ==, -1);
}

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *own_thread_spin(void *arg) {
  int64_t *used = arg;
  threads_exclude_self();
  int64_t t0 = thread_cpu_ns();
  volatile uint64_t acc = 0;
  while (thread_cpu_ns() - t0 < 50000000LL)
    for (int i = 0; i < 10000; i++)
      acc += (uint64_t)i;
  *used = thread_cpu_ns();
  threads_exclude_end();
  return NULL;
}

/* The SDK's own threads' CPU (subtracted from the sampled CPU in each
 * profile's comment) counts a running own thread, keeps what an ended one
 * used, and leaves the host's threads out. */
static void test_threads_counts_own_threads_cpu(void) {
  int64_t before = threads_own_cpu_ns();
  int64_t used = 0;
  pthread_t t;
  PP_CHECK_INT(pthread_create(&t, NULL, own_thread_spin, &used), ==, 0);
  pthread_join(t, NULL);
  int64_t after = threads_own_cpu_ns();
  PP_CHECK(used >= 50000000LL);
  PP_CHECK(after - before >= used);
  PP_CHECK(after - before < used + 20000000LL); /* not this thread's work too */
  int64_t t0 = thread_cpu_ns();
  volatile uint64_t acc = 0;
  while (thread_cpu_ns() - t0 < 30000000LL)
    acc += 1;
  PP_CHECK(threads_own_cpu_ns() - after < 10000000LL);
}

int main(void) {
  PP_RUN(test_threads_counts_own_threads_cpu);
  PP_RUN(test_threads_main_stack_bounds_match_the_stack_mapping);
  PP_DONE();
}
