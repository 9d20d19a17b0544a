/* demo_work: a small batch job with three hot spots of known weight, used by
 * the README's main command. It knows nothing of pushprof: it is profiled
 * from outside with LD_PRELOAD. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each stage spins for a share of the job's CPU time. noipa keeps each a
 * frame of its own (and stops the compiler from folding the three identical
 * bodies into one), so the profile can name it. The clock is read only every
 * 200k iterations so the time goes to the stage, not to clock_gettime. */
#define STAGE(name)                                                                                \
  __attribute__((noipa)) static uint64_t name(double seconds) {                                    \
    volatile uint64_t acc = 0;                                                                     \
    double end = cpu_seconds() + seconds;                                                          \
    while (cpu_seconds() < end)                                                                    \
      for (int i = 0; i < 200000; i++)                                                             \
        acc += (uint64_t)i * 2654435761u;                                                          \
    return acc;                                                                                    \
  }
STAGE(parse_records)
STAGE(compress_blocks)
STAGE(checksum_output)

static void *worker(void *arg) {
  double total = *(double *)arg;
  uint64_t sink = 0;
  for (int round = 0; round < 10; round++) {
    sink += parse_records(total * 0.5 / 10);
    sink += compress_blocks(total * 0.3 / 10);
    sink += checksum_output(total * 0.2 / 10);
  }
  return (void *)(uintptr_t)sink;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  if (seconds <= 0 || seconds > 600) {
    fprintf(stderr, "usage: demo_work [CPU seconds per thread, 0..600]\n");
    return 2;
  }
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, &seconds) != 0) {
      perror("pthread_create");
      return 1;
    }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  printf("demo_work: done, 2 threads x %.1f s CPU\n", seconds);
  return 0;
}
