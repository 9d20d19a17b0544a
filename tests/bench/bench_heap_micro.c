/* Benchmark programs for the heap profiler's costs that a ratio hides
 * (heap_micro_bench.py runs them with and without the profiler):
 *   bench_heap_micro pairs [BATCHES] [PAIRS_PER_BATCH]
 *     malloc(32) then free, in a tight loop on one thread; prints
 *     ns_per_pair=X, the median over batches of the thread's CPU time per
 *     pair (defaults 15 batches of 1000000).
 *   bench_heap_micro live [MIB] [SETTLE_MS]
 *     allocates MIB MiB (default 1024) in blocks of 16-512 bytes and keeps
 *     them, waits SETTLE_MS (default 300) for the profiler's threads, then
 *     prints blocks=N, rss_kib=X and hwm_kib=Y from /proc/self/status. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "bench_rows.h"

static double thread_cpu_ns(void) {
  return (double)bench_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int pairs(long batches, long per_batch) {
  double *ns = calloc((size_t)batches, sizeof *ns);
  if (!ns)
    return 1;
  for (long b = 0; b < batches; b++) {
    double t0 = thread_cpu_ns();
    for (long i = 0; i < per_batch; i++) {
      void *p = malloc(32);
      /* p escapes: the compiler may not drop the pair */
      __asm__ volatile("" : : "r"(p) : "memory");
      free(p);
    }
    ns[b] = (thread_cpu_ns() - t0) / (double)per_batch;
  }
  qsort(ns, (size_t)batches, sizeof *ns, bench_rows_cmp);
  double med = batches % 2 ? ns[batches / 2] : (ns[batches / 2 - 1] + ns[batches / 2]) / 2;
  printf("ns_per_pair=%.3f\n", med);
  free(ns);
  return 0;
}

/* VmRSS and VmHWM of this process, in KiB. */
static int status_kib(long *rss, long *hwm) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  *rss = *hwm = -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmRSS:", 6) == 0)
      *rss = atol(line + 6);
    else if (strncmp(line, "VmHWM:", 6) == 0)
      *hwm = atol(line + 6);
  }
  fclose(f);
  return *rss < 0 || *hwm < 0 ? -1 : 0;
}

static int live(long mib, long settle_ms) {
  uint64_t want = (uint64_t)mib << 20, got = 0, rng = 0x9E3779B97F4A7C15ull;
  size_t n = 0, cap = 1 << 20;
  void **keep = malloc(cap * sizeof *keep);
  if (!keep)
    return 1;
  while (got < want) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    size_t size = 16 + (size_t)((rng * 0x2545F4914F6CDD1Dull) >> 32) % 497;
    unsigned char *p = malloc(size);
    if (!p)
      return 1;
    memset(p, 1, size); /* resident, as a live heap is */
    if (n == cap) {
      void **k = realloc(keep, (cap *= 2) * sizeof *keep);
      if (!k)
        return 1;
      keep = k;
    }
    keep[n++] = p;
    got += size;
  }
  struct timespec ts = {settle_ms / 1000, (settle_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  long rss, hwm;
  if (status_kib(&rss, &hwm) != 0)
    return 1;
  printf("blocks=%zu\nrss_kib=%ld\nhwm_kib=%ld\n", n, rss, hwm);
  return 0; /* the blocks stay live: a heap profile written at exit holds them */
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "pairs") == 0) {
    long batches = argc > 2 ? atol(argv[2]) : 15, per = argc > 3 ? atol(argv[3]) : 1000000;
    if (batches >= 1 && batches <= 10000 && per >= 1 && per <= 1000000000)
      return pairs(batches, per);
  } else if (argc >= 2 && strcmp(argv[1], "live") == 0) {
    long mib = argc > 2 ? atol(argv[2]) : 1024, settle = argc > 3 ? atol(argv[3]) : 300;
    if (mib >= 1 && mib <= 65536 && settle >= 0 && settle <= 60000)
      return live(mib, settle);
  }
  fprintf(stderr, "usage: bench_heap_micro pairs [BATCHES 1..10000] [PAIRS_PER_BATCH]\n"
                  "       bench_heap_micro live [MIB 1..65536] [SETTLE_MS 0..60000]\n");
  return 2;
}
