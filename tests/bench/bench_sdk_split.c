/* Benchmark workload: two threads doing a FIXED amount of work split
 * 50/30/20 across three functions (so a profiler's overhead shows as extra
 * CPU time), in rounds of ~100 ms scaled 0.6..1.4 by a fixed pseudo-random
 * sequence (the same work every run). Each function's true CPU time is
 * measured on the thread's CPU clock around each call, so profile shares
 * are compared against what really happened, not only the nominal split.
 *   bench_sdk_split [work units per thread, default 60] (1 unit ~ 25 ms CPU)
 * Prints cpu_seconds and true_<function>=seconds lines. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS_PER_UNIT 50000000ull

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define WORK_FN(name, mult)                                                                        \
  __attribute__((noipa)) uint64_t name(uint64_t n);                                                \
  __attribute__((noipa)) uint64_t name(uint64_t n) {                                               \
    volatile uint64_t acc = 0;                                                                     \
    for (uint64_t i = 0; i < n; i++)                                                               \
      acc += i * (mult);                                                                           \
    return acc;                                                                                    \
  }
WORK_FN(bench_fifty, 2654435761u)
WORK_FN(bench_thirty, 2246822519u)
WORK_FN(bench_twenty, 3266489917u)

typedef struct {
  int units;
  unsigned seed;
  double t[3];
  uint64_t sink;
} job;

static void *worker(void *arg) {
  job *j = arg;
  /* a round is 0.6..1.4 x (1.0 + 0.6 + 0.4) units: ~50 ms on average */
  double left = j->units;
  while (left > 0) {
    double scale = 0.6 + 0.8 * (double)(rand_r(&j->seed) % 1000) / 1000.0;
    if (scale > left)
      scale = left;
    uint64_t n = (uint64_t)(scale * (double)ITERS_PER_UNIT);
    double t0 = thread_cpu();
    j->sink += bench_fifty(n);
    double t1 = thread_cpu();
    j->sink += bench_thirty(n * 3 / 5);
    double t2 = thread_cpu();
    j->sink += bench_twenty(n * 2 / 5);
    double t3 = thread_cpu();
    j->t[0] += t1 - t0;
    j->t[1] += t2 - t1;
    j->t[2] += t3 - t2;
    left -= scale;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int units = argc > 1 ? atoi(argv[1]) : 60;
  if (units < 1 || units > 100000) {
    fprintf(stderr, "usage: bench_sdk_split [work units per thread, 1..100000]\n");
    return 2;
  }
  job jobs[2] = {{units, 1, {0, 0, 0}, 0}, {units, 2, {0, 0, 0}, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0)
      return 1;
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  printf("cpu_seconds=%.6f\n", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
  const char *names[3] = {"bench_fifty", "bench_thirty", "bench_twenty"};
  for (int f = 0; f < 3; f++)
    printf("true_%s=%.6f\n", names[f], jobs[0].t[f] + jobs[1].t[f]);
  printf("sink=%llu\n", (unsigned long long)((jobs[0].sink ^ jobs[1].sink) & 1));
  return 0;
}
