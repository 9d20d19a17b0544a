/* Cost of pushprof_label_set on the per-request path: a new 32-hex-digit
 * trace_id per call (same length: replaced in place), next to two other
 * labels; a value of changing length (the tail moves); set then remove.
 * Profiling is off: the set path is the same either way (the handler only
 * reads). Prints, per run, the median ns per call over many batches, and
 * the median of the runs.
 * A benchmark: it never fails on time.
 *   bench_labels [--runs N] [--batches N] [--rows FILE] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_rows.h"
#include "pushprof.h"
#include "bench_clock.h"

#define BATCH 1000
#define MAX_BATCHES 2000
#define NIDS 1024
#define MAX_RUNS 15 /* each the median of g_batches batches; the last column their median */

static double batch_ns[MAX_BATCHES];
static int g_batches = MAX_BATCHES;
static char ids[NIDS][33];
static char varlen[NIDS][40];

static int64_t now_ns(void) {
  return bench_ns(CLOCK_MONOTONIC);
}

enum { SAME_LEN, VAR_LEN, SET_REMOVE };

static double run(int kind) {
  int rc = 0;
  unsigned j = 0;
  for (int b = 0; b < g_batches; b++) {
    int64_t t0 = now_ns();
    for (int i = 0; i < BATCH; i++, j++) {
      switch (kind) {
      case SAME_LEN:
        rc |= pushprof_label_set("trace_id", ids[j % NIDS]);
        break;
      case VAR_LEN:
        rc |= pushprof_label_set("trace_id", varlen[j % NIDS]);
        break;
      default:
        rc |= pushprof_label_set("span_id", ids[j % NIDS]);
        rc |= pushprof_label_set("span_id", NULL);
        break;
      }
    }
    batch_ns[b] = (double)(now_ns() - t0) / BATCH / (kind == SET_REMOVE ? 2 : 1);
  }
  if (rc) {
    fprintf(stderr, "bench_labels: pushprof_label_set failed: %s\n", pushprof_strerror(rc));
    exit(1);
  }
  qsort(batch_ns, (size_t)g_batches, sizeof *batch_ns, bench_rows_cmp);
  return batch_ns[g_batches / 2];
}

int main(int argc, char **argv) {
  bench_rows_opts o = {
      .runs = 5, .max_runs = MAX_RUNS, .batches = &g_batches, .max_batches = MAX_BATCHES};
  int rc = bench_rows_options(argc, argv, "bench_labels", &o);
  if (rc)
    return rc;
  int runs = o.runs;
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < NIDS; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    snprintf(ids[i], sizeof ids[i], "%016llx%016llx", (unsigned long long)x,
             (unsigned long long)(x * 31));
    snprintf(varlen[i], sizeof varlen[i], "%.*s", 8 + (int)(x % 24), ids[i]);
  }
  /* The first label allocates the thread's block: not part of the figures. */
  if (pushprof_label_set("route", "/api/v1/orders") != 0 ||
      pushprof_label_set("trace_id", ids[0]) != 0 || pushprof_label_set("user", "42") != 0) {
    fprintf(stderr, "bench_labels: cannot set the first labels\n");
    return 1;
  }
  static const char *const names[] = {"label_set_same_length_ns", "label_set_new_length_ns",
                                      "label_set_or_remove_ns"};
  static const char *const labels[] = {
      "pushprof_label_set, new trace_id of the same length (ns per call)",
      "pushprof_label_set, value of a new length (ns per call)",
      "pushprof_label_set, set or remove (ns per call)"};
  printf("%-28s", "benchmark (3 labels set)");
  for (int i = 0; i < runs; i++)
    printf(" %7s%-2d", "run", i + 1);
  printf(" %10s\n", "median_ns");
  for (int k = 0; k < 3; k++) {
    double r[MAX_RUNS];
    printf("%-28s", names[k]);
    for (int i = 0; i < runs; i++) {
      r[i] = run(k);
      printf(" %9.1f", r[i]);
    }
    printf(" %10.1f\n", bench_rows_median(r, (size_t)runs));
    if (bench_rows_add(o.rows, names[k], labels[k], "<= 40", r, (size_t)runs, 1) != 0)
      rc = 1;
  }
  return bench_rows_finish(&o, "bench_labels", rc);
}
