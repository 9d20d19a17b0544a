/* Machine-readable rows for tests/bench/run, written by the C benches in the
 * format tests/bench/benchrows.py documents: one TSV line per figure,
 *   key, label, target, median, range (min..max over runs), met.
 * A target is "" or an operator and a number ("<= 50", "< 2000"). */
#ifndef PUSHPROF_BENCH_ROWS_H
#define PUSHPROF_BENCH_ROWS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int bench_rows_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v[0..n), n > 0, and returns its median. */
static inline double bench_rows_median(double *v, size_t n) {
  qsort(v, n, sizeof *v, bench_rows_cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "yes"/"no" for median against target, "" without a (readable) target. */
static inline const char *bench_rows_met(double median, const char *target) {
  char op[3] = "";
  double t;
  if (sscanf(target, "%2[<>=] %lf", op, &t) != 2)
    return "";
  if (strcmp(op, "<=") == 0)
    return median <= t ? "yes" : "no";
  if (strcmp(op, "<") == 0)
    return median < t ? "yes" : "no";
  if (strcmp(op, ">=") == 0)
    return median >= t ? "yes" : "no";
  if (strcmp(op, ">") == 0)
    return median > t ? "yes" : "no";
  return "";
}

/* Appends one row to f (NULL: nothing) from the per-run values v[0..n).
 * Sorts v in place. Returns 0, or -1 when the write failed. */
static inline int bench_rows_add(FILE *f, const char *key, const char *label, const char *target,
                                 double *v, size_t n, int digits) {
  if (!f)
    return 0;
  if (n == 0)
    return fprintf(f, "%s\t%s\t%s\tn/a\t-\t\n", key, label, target) < 0 ? -1 : 0;
  double median = bench_rows_median(v, n);
  char rng[64] = "-";
  if (n > 1)
    snprintf(rng, sizeof rng, "%.*f..%.*f", digits, v[0], digits, v[n - 1]);
  char med[32];
  snprintf(med, sizeof med, "%.*f", digits, median);
  /* met compares the median as printed, as benchrows.py does. */
  return fprintf(f, "%s\t%s\t%s\t%s\t%s\t%s\n", key, label, target, med, rng,
                 bench_rows_met(strtod(med, NULL), target)) < 0
             ? -1
             : 0;
}

/* The options the C benches share. runs and batches hold the defaults on
 * entry; batches NULL: no --batches option; socket NULL: no SOCKET operand. */
typedef struct bench_rows_opts {
  int runs, max_runs;
  int *batches, max_batches;
  const char **socket;
  const char *rows_path;
  FILE *rows; /* opened for appending by bench_rows_options, NULL without --rows */
} bench_rows_opts;

/* Parses [--runs N] [--batches N] [--rows FILE] [SOCKET]; returns 0, or the
 * exit status after a message (2: usage, 1: the rows file cannot be opened). */
static inline int bench_rows_options(int argc, char **argv, const char *prog, bench_rows_opts *o) {
  int bad = 0;
  for (int i = 1; i < argc && !bad; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--runs") == 0)
      o->runs = atoi(argv[++i]);
    else if (o->batches && i + 1 < argc && strcmp(argv[i], "--batches") == 0)
      *o->batches = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--rows") == 0)
      o->rows_path = argv[++i];
    else if (o->socket && !*o->socket && argv[i][0] != '-')
      *o->socket = argv[i];
    else
      bad = 1;
  }
  if (bad || o->runs < 1 || o->runs > o->max_runs ||
      (o->batches && (*o->batches < 1 || *o->batches > o->max_batches))) {
    fprintf(stderr, "usage: %s [--runs 1..%d]", prog, o->max_runs);
    if (o->batches)
      fprintf(stderr, " [--batches 1..%d]", o->max_batches);
    fprintf(stderr, " [--rows FILE]%s\n", o->socket ? " [SOCKET]" : "");
    return 2;
  }
  if (o->rows_path && !(o->rows = fopen(o->rows_path, "a"))) {
    fprintf(stderr, "%s: cannot open %s: %s\n", prog, o->rows_path, strerror(errno));
    return 1;
  }
  return 0;
}

/* Closes the rows file; returns the exit status: 1 if rc or the close failed. */
static inline int bench_rows_finish(bench_rows_opts *o, const char *prog, int rc) {
  if (o->rows && fclose(o->rows) != 0)
    rc = 1;
  o->rows = NULL;
  if (rc)
    fprintf(stderr, "%s: writing %s failed\n", prog, o->rows_path ? o->rows_path : "the rows");
  return rc ? 1 : 0;
}

#endif
