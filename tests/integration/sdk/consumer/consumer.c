/* An outside program built against an installed pushprof (find_package and
 * pkg-config): starts with options, works, stops, checks the result codes.
 *   pushprof_consumer OUTPUT_PATH */
#include <pushprof.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t consumer_spin(double s);
__attribute__((noinline)) uint64_t consumer_spin(double s) {
  volatile uint64_t acc = 0;
  double end = cpu() + s;
  while (cpu() < end)
    for (uint64_t i = 0; i < 50000; i++)
      acc += i;
  return acc;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  if (strcmp(pushprof_version(), PUSHPROF_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: header %s, library %s\n", PUSHPROF_VERSION_STRING,
            pushprof_version());
    return 3;
  }
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = argv[1];
  o.hz = 100;
  int rc = pushprof_start(&o);
  if (rc != PUSHPROF_OK) {
    fprintf(stderr, "consumer: pushprof_start: %s\n", pushprof_strerror(rc));
    return 4;
  }
  consumer_spin(0.3 * argc / 2); /* a runtime argument: no .constprop clone */
  rc = pushprof_stop();
  if (rc != PUSHPROF_OK) {
    fprintf(stderr, "consumer: pushprof_stop: %s\n", pushprof_strerror(rc));
    return 5;
  }
  return 0;
}
