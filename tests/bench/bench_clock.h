/* The clocks the C benches read: one call, checked, in nanoseconds. */
#ifndef PUSHPROF_BENCH_CLOCK_H
#define PUSHPROF_BENCH_CLOCK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Nanoseconds on clock id (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...);
 * a clock that cannot be read ends the bench (exit 70), as no figure
 * taken with it would mean anything. */
static inline int64_t bench_ns(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) {
    perror("clock_gettime");
    exit(70);
  }
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
#endif
