/* Writes a pprof for the OTLP tests: two sample types, three mappings (two
 * with build ids), inlined frames, and samples labelled the ways a tracer
 * labels them: valid W3C trace_id + span_id pairs (which must become
 * Links), a short trace_id, an all-zero one, a span_id alone (which must
 * not), a route label, and a numeric label with a unit.
 *   gen_otlp_pprof OUT [--samples N] [--seed N] [--now]
 * The profile's time is 2023-11-14 (older than any ingestion window)
 * unless --now. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_builder.h"

static uint64_t rng = 42;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

int main(int argc, char **argv) {
  int nsamples = 200;
  int64_t when = 1700000000000000000LL;
  if (argc < 2) {
    fprintf(stderr, "usage: gen_otlp_pprof OUT [--samples N] [--seed N]\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--now")) {
      when = (int64_t)time(NULL) * 1000000000LL;
    } else if (i + 1 < argc && !strcmp(argv[i], "--samples")) {
      nsamples = atoi(argv[++i]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--seed")) {
      rng = strtoull(argv[++i], NULL, 10) | 1;
    } else {
      fprintf(stderr, "gen_otlp_pprof: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  pp_builder *b = pp_builder_new();
  if (!b || pp_builder_add_sample_type(b, "samples", "count") ||
      pp_builder_add_sample_type(b, "cpu", "nanoseconds") ||
      pp_builder_set_period(b, "cpu", "nanoseconds", 10000000))
    return 1;
  pp_builder_set_time(b, when, 10000000000LL);
  uint64_t maps[3] = {
      pp_builder_mapping(b, 0x400000, 0x500000, 0, "/usr/bin/otlpdemo",
                         "4f1c2a9be0d7c3a1b2c3d4e5f60718293a4b5c6d", true),
      pp_builder_mapping(b, 0x7f0000000000, 0x7f0000200000, 0x1000,
                         "/lib/x86_64-linux-gnu/libc.so.6", "a1b2c3d4e5f60718", true),
      pp_builder_mapping(b, 0x7f1000000000, 0x7f1000010000, 0, "/opt/plugin.so", "", false)};
  uint64_t locs[12];
  for (int i = 0; i < 12; i++) {
    char name[32], file[32];
    snprintf(name, sizeof name, "otlp_fn_%d", i);
    snprintf(file, sizeof file, "src/f%d.c", i % 3);
    uint64_t fn[2] = {pp_builder_function(b, name, name, file, 10 * i), 0};
    int64_t lines[2] = {10 * i + 3, 7};
    size_t nl = 1;
    if (i % 4 == 1) { /* an inlined frame in the same location */
      fn[1] = pp_builder_function(b, "otlp_inlined_caller", "otlp_inlined_caller", "src/inl.c", 5);
      nl = 2;
    }
    locs[i] = pp_builder_location(b, i == 11 ? 0 : maps[i % 3], 0x400100 + 0x40 * (uint64_t)i,
                                  i == 10 ? NULL : fn, lines, i == 10 ? 0 : nl);
    if (!locs[i])
      return 1;
  }
  static const char *traces[] = {"4bf92f3577b34da6a3ce929d0e0e4736",
                                 "0af7651916cd43dd8448eb211c80319c",
                                 "ABCDEF0123456789abcdef0123456789"};
  static const char *spans[] = {"00f067aa0ba902b7", "b7ad6b7169203331", "53995c3f42cd8ad8"};
  for (int i = 0; i < nsamples; i++) {
    uint64_t stack[8];
    size_t depth = 1 + next() % 6;
    for (size_t d = 0; d < depth; d++)
      stack[d] = locs[next() % 12];
    pp_label l[4];
    size_t nl = 0;
    int kind = (int)(next() % 8);
    char rt[16];
    snprintf(rt, sizeof rt, "/r%d", (int)(next() % 3));
    switch (kind) {
    case 0:
    case 1:
    case 2: /* a linked span */
      l[nl++] = (pp_label){.key = "trace_id", .str = traces[kind]};
      l[nl++] = (pp_label){.key = "span_id", .str = spans[(kind + i) % 3]};
      l[nl++] = (pp_label){.key = "route", .str = rt};
      break;
    case 3: /* one digit short: no link */
      l[nl++] = (pp_label){.key = "trace_id", .str = "4bf92f3577b34da6a3ce929d0e0e473"};
      l[nl++] = (pp_label){.key = "span_id", .str = spans[0]};
      break;
    case 4: /* all zeros: invalid, no link */
      l[nl++] = (pp_label){.key = "trace_id", .str = "00000000000000000000000000000000"};
      l[nl++] = (pp_label){.key = "span_id", .str = spans[1]};
      break;
    case 5: /* a span alone: no link */
      l[nl++] = (pp_label){.key = "span_id", .str = spans[2]};
      break;
    case 6: /* numeric */
      l[nl++] = (pp_label){.key = "bytes", .num = 1024 * (int64_t)(1 + i % 4), .num_unit = "bytes"};
      l[nl++] = (pp_label){.key = "route", .str = rt};
      break;
    default:
      break;
    }
    int64_t v[2] = {1 + (int64_t)(next() % 5), 0};
    v[1] = v[0] * 10000000;
    if (pp_builder_sample(b, stack, depth, v, 2, l, nl) != 0)
      return 1;
  }
  uint8_t *out;
  size_t len;
  if (pp_builder_pack(b, &out, &len) != 0)
    return 1;
  FILE *f = fopen(argv[1], "wb");
  if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0) {
    perror(argv[1]);
    return 1;
  }
  free(out);
  pp_builder_free(b);
  return 0;
}
