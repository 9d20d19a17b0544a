/* Cost per sample of reading another tracer's OTEP 4947 record in the
 * signal handler (otel_read_record): no record attached; a valid record
 * with ids and two attributes; a pointer into unmapped memory (the copy
 * fails). Measured outside a signal handler, on the same code. Prints,
 * per run, the median ns per call over many batches, and their median.
 * A benchmark: it never fails on time.
 *   bench_otel_read [--runs N] [--batches N] [--rows FILE] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_clock.h"
#include "bench_rows.h"
#include "otel_read.h"

#define BATCH 200
#define MAX_BATCHES 2000
#define MAX_RUNS 15

static double batch_ns[MAX_BATCHES];
static int g_batches = 500;
static void *g_slot; /* what the thread's otel_thread_ctx_v1 holds */
static ring_record g_rec;

static double run(void) {
  for (int b = 0; b < g_batches; b++) {
    int64_t t0 = bench_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < BATCH; i++) {
      g_rec.nlabels = 0;
      g_rec.labels_len = 0;
      otel_read_record((uintptr_t)&g_slot, &g_rec);
    }
    batch_ns[b] = (double)(bench_ns(CLOCK_MONOTONIC) - t0) / BATCH;
  }
  qsort(batch_ns, (size_t)g_batches, sizeof *batch_ns, bench_rows_cmp);
  return batch_ns[g_batches / 2];
}

int main(int argc, char **argv) {
  bench_rows_opts o = {
      .runs = 5, .max_runs = MAX_RUNS, .batches = &g_batches, .max_batches = MAX_BATCHES};
  int rc = bench_rows_options(argc, argv, "bench_otel_read", &o);
  if (rc)
    return rc;
  static uint8_t record[640] __attribute__((aligned(8)));
  memset(record, 0x5a, 24); /* trace and span ids */
  record[24] = 1;           /* valid */
  static const uint8_t attrs[] = {2,   9,   '/', 'c', 'h', 'e', 'c', 'k', 'o',
                                  'u', 't', 3,   4,   'a', 'c', 'm', 'e'};
  uint16_t n = sizeof attrs;
  memcpy(record + 26, &n, 2);
  memcpy(record + 28, attrs, sizeof attrs);
  void *gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 4096);
  void *cases[] = {NULL, record, gone};
  static const char *const names[] = {"otel_read_none_ns", "otel_read_record_ns",
                                      "otel_read_unmapped_ns"};
  static const char *const labels[] = {
      "Tracer record read per sample, none attached (ns)",
      "Tracer record read per sample, ids and 2 attributes (ns)",
      "Tracer record read per sample, pointer into unmapped memory (ns)"};
  printf("%-24s", "benchmark");
  for (int i = 0; i < o.runs; i++)
    printf(" %7s%-2d", "run", i + 1);
  printf(" %10s\n", "median_ns");
  for (int k = 0; k < 3; k++) {
    g_slot = cases[k];
    double r[MAX_RUNS];
    printf("%-24s", names[k]);
    for (int i = 0; i < o.runs; i++) {
      r[i] = run();
      printf(" %9.1f", r[i]);
    }
    printf(" %10.1f\n", bench_rows_median(r, (size_t)o.runs));
    if (k == 1 && g_rec.nlabels != 4) {
      fprintf(stderr, "bench_otel_read: the record gave %u labels, want 4\n", g_rec.nlabels);
      rc = 1;
    }
    if (bench_rows_add(o.rows, names[k], labels[k], "", r, (size_t)o.runs, 1) != 0)
      rc = 1;
  }
  return bench_rows_finish(&o, "bench_otel_read", rc);
}
