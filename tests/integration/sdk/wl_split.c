/* Two threads, each splitting its CPU 50/30/20 across three functions in
 * rounds of ~100 ms (randomly scaled 0.6..1.4 so round boundaries do not
 * stay in phase with the sampling period).
 *   wl_split [CPU seconds per thread, default 1.6] */
#include <pthread.h>

#include "wl_common.h"

WL_SPIN_FN(split_fifty)
WL_SPIN_FN(split_thirty)
WL_SPIN_FN(split_twenty)

static void *worker(void *arg) {
  double total = *(double *)arg, done = 0;
  unsigned seed = (unsigned)(uintptr_t)&total;
  uint64_t sink = 0;
  while (done < total) {
    double round = 0.1 * (0.6 + 0.8 * (double)(rand_r(&seed) % 1000) / 1000.0);
    if (round > total - done)
      round = total - done;
    sink += split_fifty(round * 0.5);
    sink += split_thirty(round * 0.3);
    sink += split_twenty(round * 0.2);
    done += round;
  }
  return (void *)(uintptr_t)sink;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.6;
  if (!(seconds > 0 && seconds <= 600)) {
    fprintf(stderr, "usage: wl_split [CPU seconds per thread, 0..600]\n");
    return 2;
  }
  wl_start();
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, &seconds) != 0) {
      fprintf(stderr, "wl_split: pthread_create failed\n");
      return 1;
    }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  wl_report();
  return 0;
}
