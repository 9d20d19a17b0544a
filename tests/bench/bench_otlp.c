/* The pprof -> OTLP conversion (sidecar/exporters/otlp_convert.c) as the OTLP exporter runs
 * it per batch: parse + validate the merged pprof, convert, pack, gzip.
 * Reports CPU ms per MB of (uncompressed) pprof, the same against gzip of
 * the pprof alone (what file/S3 targets pay), and the bytes on the wire,
 * OTLP vs pprof, both gzipped. A benchmark: prints figures, never fails.
 *   bench_otlp [--runs N] [--samples N] [FILE.pprof...]
 * Without files it builds three synthetic profiles (see cases below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp_convert.h"
#include "pp_builder.h"
#include "pp_gzip.h"
#include "pp_parse_ref.h"
#include "bench_clock.h"

static double cpu_ms(void) {
  return (double)bench_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e6;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* nsamples distinct stacks of depth 8..24 over nfuncs functions; labels:
 * 0 none, 1 a route (3 values), 2 a route plus a unique trace_id/span_id. */
static int synth(int nsamples, int nfuncs, int labels, uint8_t **out, size_t *len) {
  pp_builder *b = pp_builder_new();
  if (!b)
    return -1;
  pp_builder_add_sample_type(b, "samples", "count");
  pp_builder_add_sample_type(b, "cpu", "nanoseconds");
  pp_builder_set_period(b, "cpu", "nanoseconds", 10000000);
  uint64_t m = pp_builder_mapping(b, 0x400000, 0x9000000, 0, "/usr/bin/service",
                                  "4f1c2a9be0d7c3a1b2c3d4e5f60718293a4b5c6d", true);
  uint64_t *locs = malloc((size_t)nfuncs * sizeof *locs);
  for (int i = 0; i < nfuncs; i++) {
    char name[96];
    snprintf(name, sizeof name, "service::module%d::Handler<Request>::function_%d(int)", i % 17, i);
    uint64_t f = pp_builder_function(b, name, name, "src/service.cc", i);
    int64_t line = 10 + i;
    locs[i] = pp_builder_location(b, m, 0x400000 + 16 * (uint64_t)i, &f, &line, 1);
  }
  for (int i = 0; i < nsamples; i++) {
    uint64_t st[24];
    size_t depth = 8 + next() % 17;
    for (size_t d = 0; d < depth; d++)
      st[d] = locs[next() % (uint64_t)nfuncs];
    char route[16], trace[33], span[17];
    snprintf(route, sizeof route, "/api/%d", (int)(next() % 3));
    snprintf(trace, sizeof trace, "%016llx%016llx", (unsigned long long)next(),
             (unsigned long long)next());
    snprintf(span, sizeof span, "%016llx", (unsigned long long)next() | 1);
    pp_label l[3] = {{.key = "route", .str = route},
                     {.key = "trace_id", .str = trace},
                     {.key = "span_id", .str = span}};
    int64_t v[2] = {1 + (int64_t)(next() % 4), 0};
    v[1] = v[0] * 10000000;
    if (pp_builder_sample(b, st, depth, v, 2, l, labels == 0 ? 0 : labels == 1 ? 1 : 3) != 0)
      return -1;
  }
  free(locs);
  int rc = pp_builder_pack(b, out, len);
  pp_builder_free(b);
  return rc;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void run_case(const char *name, const uint8_t *pprof, size_t len, int runs) {
  double *conv = calloc((size_t)runs, sizeof *conv), *gz = calloc((size_t)runs, sizeof *gz);
  size_t otlp_raw = 0, otlp_gz = 0, pprof_gz = 0;
  for (int r = 0; r < runs; r++) {
    char why[256];
    double t0 = cpu_ms();
    Perftools__Profiles__Profile *p = pp_ref_parse(pprof, len, (size_t)1 << 30, why, sizeof why);
    pp_otlp *o = pp_otlp_new();
    pp_otlp_attr res[2] = {{.key = "service.name", .str = "bench"},
                           {.key = "host.name", .str = "node"}};
    uint8_t *raw = NULL, *z = NULL;
    size_t rawlen = 0, zlen = 0;
    if (!p || !o || pp_otlp_add(o, p, res, 2, "pushprof", "0.1.0", why, sizeof why) != 0 ||
        pp_otlp_pack(o, &raw, &rawlen) != 0 || pp_gzip(raw, rawlen, &z, &zlen) != 0) {
      fprintf(stderr, "bench_otlp: %s: conversion failed: %s\n", name, why);
      exit(1);
    }
    double t1 = cpu_ms();
    conv[r] = t1 - t0;
    otlp_raw = rawlen;
    otlp_gz = zlen;
    free(raw);
    free(z);
    pp_otlp_free(o);
    perftools__profiles__profile__free_unpacked(p, NULL);
    t0 = cpu_ms();
    if (pp_gzip(pprof, len, &z, &zlen) != 0)
      exit(1);
    gz[r] = cpu_ms() - t0;
    pprof_gz = zlen;
    free(z);
  }
  qsort(conv, (size_t)runs, sizeof *conv, cmp_d);
  qsort(gz, (size_t)runs, sizeof *gz, cmp_d);
  double mb = (double)len / (1 << 20);
  printf("| %s | %.2f | %.1f | %.1f | %.2f | %zu | %zu | %.2f | %zu |\n", name, mb,
         conv[runs / 2] / mb, gz[runs / 2] / mb, conv[runs / 2] / gz[runs / 2], pprof_gz, otlp_gz,
         (double)otlp_gz / (double)pprof_gz, otlp_raw);
  free(conv);
  free(gz);
}

int main(int argc, char **argv) {
  int runs = 9, samples = 20000;
  int first_file = argc;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = atoi(argv[++i]);
    else {
      first_file = i;
      break;
    }
  }
  if (runs < 1)
    runs = 1;
  printf("| profile | pprof MiB | convert CPU ms/MiB (parse+convert+pack+gzip) | gzip-only ms/MiB "
         "| convert / gzip-only | pprof.gz bytes | OTLP.gz bytes | OTLP.gz / pprof.gz | OTLP raw "
         "bytes |\n|---|---|---|---|---|---|---|---|---|\n");
  if (first_file < argc) {
    for (int i = first_file; i < argc; i++) {
      FILE *f = fopen(argv[i], "rb");
      if (!f) {
        perror(argv[i]);
        return 1;
      }
      static uint8_t buf[64 << 20];
      size_t n = fread(buf, 1, sizeof buf, f);
      fclose(f);
      uint8_t *raw = buf;
      size_t rawlen = n;
      uint8_t *un = NULL;
      if (n > 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
        if (pp_gunzip(buf, n, (size_t)1 << 30, &un, &rawlen) != 0)
          return 1;
        raw = un;
      }
      run_case(argv[i], raw, rawlen, runs);
      free(un);
    }
    return 0;
  }
  static const char *names[] = {"synthetic, no labels", "synthetic, route label",
                                "synthetic, route + unique trace_id/span_id (links)"};
  for (int c = 0; c < 3; c++) {
    uint8_t *p;
    size_t len;
    if (synth(samples, 400, c, &p, &len) != 0)
      return 1;
    run_case(names[c], p, len, runs);
    free(p);
  }
  return 0;
}
