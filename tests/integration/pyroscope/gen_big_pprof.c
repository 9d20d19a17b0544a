/* Test input for the Pyroscope split: a pprof of NSAMPLES distinct 3-frame
 * stacks whose function names are NAMELEN bytes long, so a few thousand
 * samples exceed Pyroscope's 4 MiB per-profile limit while staying below its
 * 16000-sample limit. Every third sample carries a trace_id label.
 *   gen_big_pprof OUT NSAMPLES NAMELEN
 * prints "<sum of samples> <sum of cpu>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_builder.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: gen_big_pprof OUT NSAMPLES NAMELEN\n");
    return 2;
  }
  long ns = atol(argv[2]), nl = atol(argv[3]);
  if (ns < 1 || nl < 1 || nl > 1 << 20) {
    fprintf(stderr, "gen_big_pprof: bad NSAMPLES or NAMELEN\n");
    return 2;
  }
  pp_builder *b = pp_builder_new();
  char *name = malloc((size_t)nl + 32);
  uint8_t *out = NULL;
  size_t len = 0;
  long long sum_n = 0, sum_c = 0;
  if (!b || !name || pp_builder_add_sample_type(b, "samples", "count") != 0 ||
      pp_builder_add_sample_type(b, "cpu", "nanoseconds") != 0 ||
      pp_builder_set_period(b, "cpu", "nanoseconds", 10000000) != 0)
    goto fail;
  pp_builder_set_time(b, 1700000000000000000LL, 60000000000LL);
  memset(name, 'g', (size_t)nl);
  uint64_t map = pp_builder_mapping(b, 0x400000, 0x900000, 0, "/usr/bin/big", "cafe", true);
  if (!map)
    goto fail;
  for (long i = 0; i < ns; i++) {
    uint64_t locs[3];
    for (int d = 0; d < 3; d++) {
      snprintf(name + nl, 32, "_%ld_%d", i, d);
      uint64_t f = pp_builder_function(b, name, name, "/src/big.c", 1);
      int64_t line = i + d;
      locs[d] =
          f ? pp_builder_location(b, map, 0x400000 + (uint64_t)i * 16 + (uint64_t)d, &f, &line, 1)
            : 0;
      if (!locs[d])
        goto fail;
    }
    int64_t v[2] = {i % 5 + 1, (i % 5 + 1) * 10000000LL};
    char trace[32];
    snprintf(trace, sizeof trace, "t%ld", i);
    pp_label lab = {.key = "trace_id", .str = trace};
    if (pp_builder_sample(b, locs, 3, v, 2, i % 3 == 0 ? &lab : NULL, i % 3 == 0) != 0)
      goto fail;
    sum_n += v[0];
    sum_c += v[1];
  }
  FILE *f = NULL;
  if (pp_builder_pack(b, &out, &len) != 0 || !(f = fopen(argv[1], "wb")) ||
      fwrite(out, 1, len, f) != len || fclose(f) != 0)
    goto fail;
  printf("%lld %lld\n", sum_n, sum_c);
  free(out);
  free(name);
  pp_builder_free(b);
  return 0;
fail:
  fprintf(stderr, "gen_big_pprof: cannot build or write %s\n", argv[1]);
  free(out);
  free(name);
  pp_builder_free(b);
  return 1;
}
