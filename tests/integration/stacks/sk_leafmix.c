/* The issue-11 leaf workload: `worker` (a thread) calls func_a, func_b and
 * func_c for about 50/30/20 percent of its CPU time, each of which calls the
 * frameless `leaf` (sk_leaf.c) over and over. Built -O2 with and without
 * frame pointers (sdk_stacks.cmake). A frame-pointer unwinder sampling inside
 * `leaf` reads the caller's frame record and skips func_a/b/c entirely.
 *
 * The worker runs segments of 20-60 ms of CPU, each given to the function
 * furthest below its target share, the length drawn at random (fixed seed):
 * the segments are long next to the sampling period, and irregular so they
 * cannot alias with it. It measures each call
 * on its own thread CPU clock and prints what each function really got:
 *   share_func_a=PCT ...   (percent of the worker thread's CPU time)
 *   worker_cpu=S cpu_seconds=S
 *   sk_leafmix WORKER_CPU_SECONDS */
#include "sk_leaf.h"
#include "wl_common.h"

#include <pthread.h>

#define LEAF_STEPS 4000 /* ~4 us per leaf call */

/* Each body mixes the leaf's result differently, so gcc cannot fold the
 * three into one function (-fipa-icf); noinline keeps each a function. The
 * call is not the last thing each does, so it stays a call, not a jump. */
__attribute__((noinline)) uint64_t func_a(uint64_t rounds);
__attribute__((noinline)) uint64_t func_b(uint64_t rounds);
__attribute__((noinline)) uint64_t func_c(uint64_t rounds);

uint64_t func_a(uint64_t rounds) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < rounds; i++)
    acc += leaf(LEAF_STEPS, acc + i);
  return acc;
}

uint64_t func_b(uint64_t rounds) {
  uint64_t acc = 1;
  for (uint64_t i = 0; i < rounds; i++)
    acc ^= leaf(LEAF_STEPS, acc * 3 + i);
  return acc;
}

uint64_t func_c(uint64_t rounds) {
  uint64_t acc = 2;
  for (uint64_t i = 0; i < rounds; i++)
    acc = (acc << 1) - leaf(LEAF_STEPS, acc ^ i);
  return acc;
}

struct worker_result {
  double seconds; /* CPU time to spend */
  double spent[3];
  double total;
  uint64_t sink;
};

static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *worker(void *arg) {
  struct worker_result *r = arg;
  uint64_t (*const fns[3])(uint64_t) = {func_a, func_b, func_c};
  const double target[3] = {0.5, 0.3, 0.2};
  uint64_t seed = 0x2545f4914f6cdd1du;
  double rate = 0; /* leaf calls per CPU second, measured as we go */
  double start = wl_thread_cpu(), now = start;
  uint64_t rounds = 100; /* the first segment calibrates */
  while (now - start < r->seconds) {
    unsigned f = 0;
    for (unsigned i = 1; i < 3; i++)
      if (r->spent[i] - target[i] * (now - start) < r->spent[f] - target[f] * (now - start))
        f = i;
    if (rate > 0) {
      double seg = 0.020 + 0.040 * (double)(next_random(&seed) % 1000) / 1000.0;
      rounds = (uint64_t)(seg * rate) + 1;
    }
    double t0 = wl_thread_cpu();
    r->sink += fns[f](rounds);
    now = wl_thread_cpu();
    r->spent[f] += now - t0;
    if (now > t0)
      rate = (double)rounds / (now - t0);
  }
  r->total = now - start;
  return NULL;
}

int main(int argc, char **argv) {
  wl_start();
  struct worker_result r = {
      .seconds = wl_arg(argc, argv, 3.0, 60, "sk_leafmix [WORKER_CPU_SECONDS (0..60], default 3]")};
  pthread_t t;
  int rc = pthread_create(&t, NULL, worker, &r);
  if (rc != 0) {
    fprintf(stderr, "sk_leafmix: pthread_create: error %d\n", rc);
    return 1;
  }
  pthread_join(t, NULL);
  const char *names[3] = {"func_a", "func_b", "func_c"};
  for (int i = 0; i < 3; i++)
    printf("share_%s=%.3f\n", names[i], 100.0 * r.spent[i] / r.total);
  printf("worker_cpu=%.6f\nsink=%d\n", r.total, (int)(r.sink & 1));
  wl_report();
  return 0;
}
