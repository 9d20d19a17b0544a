/* Cost of pushprof_label_set on the per-request path: a new 32-hex-digit
 * trace_id per call (same length: replaced in place), next to two other
 * labels; a value of changing length (the tail moves); set then remove.
 * Profiling is off: the set path is the same either way (the handler only
 * reads). Prints, per run, the median ns per call over many batches, and
 * the median of the runs.
 * A benchmark: it never fails on time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pushprof.h"

#define BATCH 1000
#define BATCHES 2000
#define NIDS 1024
#define RUNS 5 /* each the median of BATCHES batches; the last column their median */

static double batch_ns[BATCHES];
static char ids[NIDS][33];
static char varlen[NIDS][40];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { SAME_LEN, VAR_LEN, SET_REMOVE };

static double run(int kind) {
  int rc = 0;
  unsigned j = 0;
  for (int b = 0; b < BATCHES; b++) {
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
  qsort(batch_ns, BATCHES, sizeof *batch_ns, cmp_double);
  return batch_ns[BATCHES / 2];
}

int main(void) {
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
  printf("%-28s %8s %8s %8s %8s %8s %10s\n", "benchmark (3 labels set)", "run1", "run2", "run3",
         "run4", "run5", "median_ns");
  for (int k = 0; k < 3; k++) {
    double r[RUNS], sorted[RUNS];
    for (int i = 0; i < RUNS; i++)
      sorted[i] = r[i] = run(k);
    qsort(sorted, RUNS, sizeof *sorted, cmp_double);
    printf("%-28s %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f\n", names[k], r[0], r[1], r[2], r[3], r[4],
           sorted[RUNS / 2]);
  }
  return 0;
}
