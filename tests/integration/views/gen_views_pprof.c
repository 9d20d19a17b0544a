/* Writes pprof files for the views tests and benchmark.
 *
 *   gen_views_pprof OUT < SPEC
 *     SPEC lines: COUNT<TAB>LABELS<TAB>STACK, where STACK is frames root
 *     first separated by ';' and LABELS is "-" or KEY=VALUE[,KEY=VALUE...].
 *     \xHH in a frame name is the byte HH (so names may hold any byte), and
 *     a frame "lib:NAME" is placed in a second mapping, libviews.so. Values:
 *     samples/count = COUNT, cpu/nanoseconds = COUNT * 10 ms.
 *   gen_views_pprof --random OUT NSTACKS NSAMPLES SEED
 *     NSTACKS distinct stacks (depth 8..40, from 4,000 function names over
 *     4 mappings), NSAMPLES samples (counts 1..4) spread over them, each with
 *     a trace_id label out of 2,000 (so the samples stay distinct).
 * OUT ending in .gz is gzipped. Prints "<total count>". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_hex.h"
#include "pp_builder.h"
#include "pp_gzip.h"

#define PERIOD 10000000

/* Decodes \xHH in place; returns the length (names may hold NUL: cut there). */
static size_t unescape(char *s) {
  size_t o = 0;
  for (size_t i = 0; s[i]; i++) {
    if (s[i] == '\\' && s[i + 1] == 'x' && pp_hexval(s[i + 2]) >= 0 && pp_hexval(s[i + 3]) >= 0) {
      s[o++] = (char)(pp_hexval(s[i + 2]) * 16 + pp_hexval(s[i + 3]));
      i += 3;
    } else {
      s[o++] = s[i];
    }
  }
  s[o] = 0;
  return o;
}

static int write_out(pp_builder *b, const char *out) {
  uint8_t *raw = NULL, *gz = NULL;
  size_t len = 0, gzlen = 0;
  if (pp_builder_pack(b, &raw, &len) != 0)
    return -1;
  size_t ol = strlen(out);
  bool gzip = ol > 3 && strcmp(out + ol - 3, ".gz") == 0;
  if (gzip && pp_gzip(raw, len, &gz, &gzlen) != 0) {
    free(raw);
    return -1;
  }
  FILE *f = fopen(out, "wb");
  int rc = f && fwrite(gzip ? gz : raw, 1, gzip ? gzlen : len, f) == (gzip ? gzlen : len) ? 0 : -1;
  if (f && fclose(f) != 0)
    rc = -1;
  fprintf(stderr, "gen_views_pprof: %s: %zu bytes (%zu uncompressed)\n", out, gzip ? gzlen : len,
          len);
  free(raw);
  free(gz);
  return rc;
}

static uint64_t location(pp_builder *b, uint64_t map_main, uint64_t map_lib, const char *name,
                         uint64_t *addr) {
  bool lib = strncmp(name, "lib:", 4) == 0;
  uint64_t fn = pp_builder_function(b, lib ? name + 4 : name, NULL, "views.c", 1);
  if (!fn)
    return 0;
  *addr += 16;
  return pp_builder_location(b, lib ? map_lib : map_main, (lib ? 0x7f0000000000 : 0x400000) + *addr,
                             &fn, NULL, 1);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int random_profile(pp_builder *b, const uint64_t *maps, long nstacks, long nsamples,
                          uint64_t seed, long long *total) {
  enum { NFUNCS = 4000, MAXD = 40 };
  uint64_t *locs = malloc(NFUNCS * sizeof *locs), *stack = malloc(MAXD * sizeof *stack);
  uint64_t *stacks = malloc((size_t)nstacks * MAXD * sizeof *stacks);
  uint8_t *depth = malloc((size_t)nstacks);
  int rc = -1;
  if (!locs || !stack || !stacks || !depth)
    goto out;
  char name[96];
  for (int i = 0; i < NFUNCS; i++) {
    snprintf(name, sizeof name, "%s::module%d::function_%d", i % 4 ? "lib" : "app", i % 97, i);
    uint64_t fn = pp_builder_function(b, name, NULL, "gen.c", i);
    locs[i] =
        fn ? pp_builder_location(b, maps[i % 4], 0x400000 + (uint64_t)i * 64, &fn, NULL, 1) : 0;
    if (!locs[i])
      goto out;
  }
  /* stacks share prefixes, as real ones do: each starts from an earlier one */
  for (long s = 0; s < nstacks; s++) {
    uint64_t *st = stacks + (size_t)s * MAXD;
    int d = 8 + (int)(rnd(&seed) % (MAXD - 8));
    int keep = 0;
    if (s > 0) {
      long from = (long)(rnd(&seed) % (uint64_t)s);
      int most = depth[from] < d ? depth[from] : d;
      keep = (int)(rnd(&seed) % (uint64_t)most);
      memcpy(st, stacks + (size_t)from * MAXD, (size_t)keep * sizeof *st);
    }
    for (int k = keep; k < d; k++)
      st[k] = locs[rnd(&seed) % NFUNCS];
    depth[s] = (uint8_t)d;
  }
  for (long i = 0; i < nsamples; i++) {
    long s = i < nstacks ? i : (long)(rnd(&seed) % (uint64_t)nstacks);
    const uint64_t *st = stacks + (size_t)s * MAXD;
    for (int k = 0; k < depth[s]; k++)
      stack[k] = st[depth[s] - 1 - k]; /* leaf first */
    char tid[32];
    snprintf(tid, sizeof tid, "%016llx", (unsigned long long)(rnd(&seed) % 2000));
    pp_label l = {"trace_id", tid, 0, NULL};
    int64_t n = 1 + (int64_t)(rnd(&seed) % 4);
    int64_t v[2] = {n, n * PERIOD};
    if (pp_builder_sample(b, stack, depth[s], v, 2, &l, 1) != 0)
      goto out;
    *total += n;
  }
  rc = 0;
out:
  free(locs);
  free(stack);
  free(stacks);
  free(depth);
  return rc;
}

int main(int argc, char **argv) {
  bool random = argc == 6 && strcmp(argv[1], "--random") == 0;
  if (argc != 2 && !random) {
    fprintf(stderr, "usage: gen_views_pprof OUT < SPEC | gen_views_pprof --random OUT NSTACKS "
                    "NSAMPLES SEED\n");
    return 2;
  }
  const char *out = random ? argv[2] : argv[1];
  pp_builder *b = pp_builder_new();
  if (!b || pp_builder_add_sample_type(b, "samples", "count") != 0 ||
      pp_builder_add_sample_type(b, "cpu", "nanoseconds") != 0 ||
      pp_builder_set_period(b, "cpu", "nanoseconds", PERIOD) != 0)
    return 1;
  pp_builder_set_time(b, 1700000000LL * 1000000000, 10LL * 1000000000);
  uint64_t maps[4] = {
      pp_builder_mapping(b, 0x400000, 0x800000, 0, "/usr/bin/views_app", "", true),
      pp_builder_mapping(b, 0x7f0000000000, 0x7f0000100000, 0, "/usr/lib/libviews.so", "", true),
      pp_builder_mapping(b, 0x7f1000000000, 0x7f1000100000, 0, "/usr/lib/libc.so.6", "", true),
      pp_builder_mapping(b, 0x7f2000000000, 0x7f2000100000, 0, "/usr/lib/libz.so.1", "", true)};
  long long total = 0;
  if (!maps[0] || !maps[1] || !maps[2] || !maps[3])
    return 1;
  if (random) {
    if (random_profile(b, maps, atol(argv[3]), atol(argv[4]), (uint64_t)atoll(argv[5]) | 1,
                       &total) != 0)
      return 1;
  } else {
    char *line = NULL;
    size_t cap = 0;
    uint64_t addr = 0;
    while (getline(&line, &cap, stdin) > 0) {
      line[strcspn(line, "\n")] = 0;
      if (!line[0] || line[0] == '#')
        continue;
      char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
      if (!t2) {
        fprintf(stderr, "gen_views_pprof: bad line: %s\n", line);
        return 2;
      }
      *t1 = *t2 = 0;
      int64_t count = atoll(line);
      pp_label labels[8];
      size_t nl = 0;
      if (strcmp(t1 + 1, "-") != 0)
        for (char *kv = strtok(t1 + 1, ","); kv && nl < 8; kv = strtok(NULL, ",")) {
          char *eq = strchr(kv, '=');
          if (!eq)
            return 2;
          *eq = 0;
          labels[nl++] = (pp_label){kv, eq + 1, 0, NULL};
        }
      uint64_t locs[256];
      size_t n = 0;
      char *frames[256];
      for (char *f = strtok(t2 + 1, ";"); f && n < 256; f = strtok(NULL, ";"))
        frames[n++] = f;
      for (size_t i = 0; i < n; i++) {
        unescape(frames[n - 1 - i]);
        locs[i] = location(b, maps[0], maps[1], frames[n - 1 - i], &addr); /* leaf first */
        if (!locs[i])
          return 1;
      }
      int64_t v[2] = {count, count * PERIOD};
      if (pp_builder_sample(b, locs, n, v, 2, labels, nl) != 0)
        return 1;
      total += count;
    }
    free(line);
  }
  if (write_out(b, out) != 0) {
    fprintf(stderr, "gen_views_pprof: cannot write %s\n", out);
    return 1;
  }
  pp_builder_free(b);
  printf("%lld\n", total);
  return 0;
}
