/* Shared by the SDK integration workloads: CPU clocks and a spin loop whose
 * time is measured on the thread's own CPU clock, so a function's share of
 * CPU is known exactly whatever the machine's load. */
#ifndef WL_COMMON_H
#define WL_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef WL_LINKED
#include "pushprof.h"
#endif

static inline double wl_clock(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) {
    perror("clock_gettime");
    exit(70);
  }
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static inline double wl_thread_cpu(void) {
  return wl_clock(CLOCK_THREAD_CPUTIME_ID);
}
static inline double wl_process_cpu(void) {
  return wl_clock(CLOCK_PROCESS_CPUTIME_ID);
}

/* Defines `uint64_t name(double seconds)`, spinning for that much thread CPU.
 * The clock is read every ~0.5 ms of work so almost every sample's leaf is
 * the function itself, not clock_gettime. noipa keeps one frame with one
 * plain symbol name: no inlining, no .constprop clone, and no folding of
 * these identical bodies into one address. */
#define WL_SPIN_FN(name)                                                                           \
  __attribute__((noipa)) uint64_t name(double seconds);                                            \
  __attribute__((noipa)) uint64_t name(double seconds) {                                           \
    volatile uint64_t acc = 0;                                                                     \
    double end = wl_thread_cpu() + seconds;                                                        \
    while (wl_thread_cpu() < end)                                                                  \
      for (uint64_t i = 0; i < 500000; i++)                                                        \
        acc += i * 2654435761u;                                                                    \
    return acc;                                                                                    \
  }

/* Linked variants start profiling from the environment at the top of main
 * and leave the write to the exit handler, as a service would. */
static inline void wl_start(void) {
#ifdef WL_LINKED
  int rc = pushprof_start(NULL);
  if (rc != 0) {
    fprintf(stderr, "workload: pushprof_start: %s\n", pushprof_strerror(rc));
    exit(3);
  }
#endif
}

/* The workload's one optional argument, argv[1] (dflt without it): a
 * number in (0, max]. Anything else prints "usage: USAGE" and exits 2. */
static inline double wl_arg(int argc, char **argv, double dflt, double max, const char *usage) {
  double v = argc > 1 ? atof(argv[1]) : dflt;
  if (!(v > 0 && v <= max)) {
    fprintf(stderr, "usage: %s\n", usage);
    exit(2);
  }
  return v;
}

/* One line the test scripts read: the process's CPU time so far. */
static inline void wl_report(void) {
  printf("cpu_seconds=%.6f\n", wl_process_cpu());
  fflush(stdout);
}
#endif
