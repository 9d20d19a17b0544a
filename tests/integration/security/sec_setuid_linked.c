/* A program linked with libpushprof that starts profiling with no options,
 * so the environment alone would configure it. A setuid test installs it
 * setuid to another user: then the caller's PUSHPROF_* must be ignored.
 *   sec_setuid_linked STATUS
 * prints "secure=<AT_SECURE> start=<rc of pushprof_start>", burns 0.3 s of
 * CPU, stops the profiler and exits with STATUS. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <time.h>

#include "pushprof.h"

__attribute__((noipa)) static uint64_t spin(double seconds) {
  volatile uint64_t acc = 0;
  struct timespec ts;
  double end = 0, now = 0;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
  while (now < end && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
    now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    for (uint64_t i = 0; i < 200000; i++)
      acc += i * 2654435761u;
  }
  return acc;
}

int main(int argc, char **argv) {
  int status = argc > 1 ? atoi(argv[1]) : 0;
  int rc = pushprof_start(NULL);
  printf("secure=%lu start=%d\n", getauxval(AT_SECURE), rc);
  fflush(stdout);
  spin(0.3);
  if (rc == 0)
    pushprof_stop();
  return status;
}
