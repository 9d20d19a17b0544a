/* Two threads, each splitting its CPU 50/30/20 across three functions in
 * rounds of ~400 ms (randomly scaled 0.6..1.4 so round boundaries do not
 * stay in phase with the sampling period).
 *   wl_split [CPU seconds per thread, default 1.6 [round seconds, default 0.4]]
 * (Shorter rounds for a profile of a window of the run: a window cuts at
 * most a round short at each end.)
 * Prints cpu_seconds and, per function, the CPU seconds it really took
 * (true_split_fifty=...), measured on the thread clock around each call. */
#include <pthread.h>

#include "wl_common.h"

WL_SPIN_FN(split_fifty)
WL_SPIN_FN(split_thirty)
WL_SPIN_FN(split_twenty)

static double g_round = 0.4;

typedef struct {
  double seconds;
  unsigned seed;
  double spent[3];
  uint64_t sink;
} job;

static void *worker(void *arg) {
  job *j = arg;
  double done = 0;
  while (done < j->seconds) {
    double round = g_round * (0.6 + 0.8 * (double)(rand_r(&j->seed) % 1000) / 1000.0);
    if (round > j->seconds - done)
      round = j->seconds - done;
    double t0 = wl_thread_cpu();
    j->sink += split_fifty(round * 0.5);
    double t1 = wl_thread_cpu();
    j->sink += split_thirty(round * 0.3);
    double t2 = wl_thread_cpu();
    j->sink += split_twenty(round * 0.2);
    double t3 = wl_thread_cpu();
    j->spent[0] += t1 - t0;
    j->spent[1] += t2 - t1;
    j->spent[2] += t3 - t2;
    done += round;
  }
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = wl_arg(argc, argv, 1.6, 600,
                          "wl_split [CPU seconds per thread, 0..600 [round seconds, 0..10]]");
  if (argc > 2 && !((g_round = atof(argv[2])) > 0 && g_round <= 10)) {
    fprintf(stderr, "usage: wl_split [CPU seconds per thread, 0..600 [round seconds, 0..10]]\n");
    return 2;
  }
  wl_start();
  job jobs[2] = {{seconds, 1, {0, 0, 0}, 0}, {seconds, 2, {0, 0, 0}, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0) {
      fprintf(stderr, "wl_split: pthread_create failed\n");
      return 1;
    }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  wl_report();
  const char *names[3] = {"split_fifty", "split_thirty", "split_twenty"};
  for (int f = 0; f < 3; f++)
    printf("true_%s=%.6f\n", names[f], jobs[0].spent[f] + jobs[1].spent[f]);
  printf("sink=%llu\n", (unsigned long long)((jobs[0].sink ^ jobs[1].sink) & 1));
  return 0;
}
