/* Handler cost per sample: recurse to a given depth, capture the context
 * there with getcontext(), and call the signal handler directly with a
 * forged siginfo it accepts as one of its timer signals. Each run gives the
 * median ns per call over many batches; prints the median of the runs and
 * their range. Also the whole round trip through the kernel
 * (rt_tgsigqueueinfo to ourselves with the same siginfo: send, delivery,
 * handler, sigreturn), an upper bound for a timer signal.
 * A benchmark: it never fails on time.
 *   bench_handler [--runs N] [--batches N] [--rows FILE] */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "bench_rows.h"

#include "collector.h"
#include "pp_parse_ref.h"
#include "sampler_internal.h"
#include "sigprof_test_util.h"
#include "threads_linux.h"
#include "unwind_tables.h"
#include "bench_clock.h"

#define BATCH 64
#define MAX_BATCHES 3000
#define MAX_RUNS 31

static double batch_ns[MAX_BATCHES];
static int g_batches = MAX_BATCHES;

static int64_t now_ns(void) {
  return bench_ns(CLOCK_MONOTONIC);
}

static int g_round_trip;

static double measure_here(void) {
  ucontext_t uc;
  siginfo_t si;
  sigprof_forge_self(&si);
  if (getcontext(&uc) != 0)
    return -1;
  for (int b = 0; b < g_batches; b++) {
    collector_drain(); /* keep the ring from filling: drops would be cheaper */
    int64_t t0 = now_ns();
    if (g_round_trip) {
      for (int i = 0; i < BATCH; i++)
        syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGPROF, &si);
    } else {
      for (int i = 0; i < BATCH; i++)
        sampler_handle_signal(SIGPROF, &si, &uc);
    }
    batch_ns[b] = (double)(now_ns() - t0) / BATCH;
  }
  qsort(batch_ns, (size_t)g_batches, sizeof *batch_ns, bench_rows_cmp);
  return batch_ns[g_batches / 2];
}

/* Eight functions that call each other in a ring: consecutive frames have
 * different return addresses (as in a stack of distinct functions), so the
 * unwinder looks up every frame rather than reusing the previous lookup as
 * it does for plain recursion. */
static double recurse(int n);
#define BENCH_RING_FN(name, next)                                                                  \
  __attribute__((noinline)) static double name(int n) {                                            \
    double r = n <= 0 ? measure_here() : next(n - 1);                                              \
    __asm__ volatile("" ::: "memory"); /* no tail call: one frame per level */                     \
    return r;                                                                                      \
  }
BENCH_RING_FN(ring7, recurse)
BENCH_RING_FN(ring6, ring7)
BENCH_RING_FN(ring5, ring6)
BENCH_RING_FN(ring4, ring5)
BENCH_RING_FN(ring3, ring4)
BENCH_RING_FN(ring2, ring3)
BENCH_RING_FN(ring1, ring2)
BENCH_RING_FN(recurse, ring1)

/* The deepest stack in the profile cut after a run, to prove the depth. */
static size_t max_depth_in_profile(void) {
  uint8_t *buf = NULL;
  size_t len = 0, best = 0;
  int64_t a, b;
  char why[200];
  if (sampler_cut(&buf, &len, &a, &b) != 0)
    return 0;
  Perftools__Profiles__Profile *p = pp_ref_parse(buf, len, 64 << 20, why, sizeof why);
  free(buf);
  if (!p)
    return 0;
  for (size_t i = 0; i < p->n_sample; i++)
    if (p->sample[i]->n_location_id > best)
      best = p->sample[i]->n_location_id;
  perftools__profiles__profile__free_unpacked(p, NULL);
  return best;
}

int main(int argc, char **argv) {
  bench_rows_opts o = {
      .runs = 5, .max_runs = MAX_RUNS, .batches = &g_batches, .max_batches = MAX_BATCHES};
  int rc = bench_rows_options(argc, argv, "bench_handler", &o);
  if (rc)
    return rc;
  char err[200] = "";
  sampler_config cfg = {.hz = 1, .signo = SIGPROF}; /* real timers stay out of the way */
  if (sampler_start(&cfg, err, sizeof err) != 0 || !threads_self) {
    fprintf(stderr, "bench_handler: cannot start the sampler: %s\n", err);
    return 1;
  }
  /* Warm: every frame on DWARF rows, as in a process sampled for a while. */
  for (int i = 0; i < 2000 && !utab_ready(); i++)
    usleep(1000);
  static const int depths[] = {8, 64, 128};
  static const char *const names[] = {"handler_ns_per_sample", "signal_round_trip_ns"};
  int runs = o.runs;
  printf("%-28s %8s %12s %20s   (%d runs of %d batches of %d)\n", "benchmark", "depth", "median_ns",
         "range", runs, g_batches, BATCH);
  for (g_round_trip = 0; g_round_trip < 2; g_round_trip++) {
    for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
      double ns[MAX_RUNS];
      size_t seen = 0;
      for (int r = 0; r < runs; r++) {
        max_depth_in_profile(); /* start from an empty window */
        ns[r] = recurse(depths[i]);
        seen = max_depth_in_profile();
      }
      double med = bench_rows_median(ns, (size_t)runs);
      printf("%-28s %8d %12.1f %9.1f..%-9.1f   (frames recorded: %zu)\n", names[g_round_trip],
             depths[i], med, ns[0], ns[runs - 1], seen);
      char key[64], label[128];
      if (g_round_trip) {
        if (depths[i] != 64)
          continue; /* the table keeps the round trip at one depth */
        snprintf(key, sizeof key, "signal_round_trip_ns_d%d", depths[i]);
        snprintf(label, sizeof label, "Signal round trip incl. kernel, stack depth %d (ns)",
                 depths[i]);
      } else {
        snprintf(key, sizeof key, "handler_ns_d%d", depths[i]);
        snprintf(label, sizeof label, "Signal handler cost per sample, stack depth %d (ns)",
                 depths[i]);
      }
      if (bench_rows_add(o.rows, key, label, !g_round_trip && depths[i] == 64 ? "< 2000" : "", ns,
                         (size_t)runs, 1) != 0)
        rc = 1;
    }
  }
  sampler_stop();
  return bench_rows_finish(&o, "bench_handler", rc);
}
