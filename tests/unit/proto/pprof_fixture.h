/* Profiles and checks shared by the pprof codec's tests (test_pp_*.c):
 * two small profiles built through pp_builder and read back with protobuf-c,
 * and the gzip round trip every compressor must pass. Each helper is static
 * inline so that its checks count in the including test's pp_test.h tally. */
#ifndef PPROF_FIXTURE_H
#define PPROF_FIXTURE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_builder.h"
#include "pp_gzip.h"
#include "pp_parse_ref.h"
#include "pp_test.h"

static inline const char *str(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table ? p->string_table[ix] : "<bad>";
}

static inline const Perftools__Profiles__Location *find_loc(const Perftools__Profiles__Profile *p,
                                                            uint64_t id) {
  for (size_t i = 0; i < p->n_location; i++)
    if (p->location[i]->id == id)
      return p->location[i];
  return NULL;
}

static inline const Perftools__Profiles__Function *find_fn(const Perftools__Profiles__Profile *p,
                                                           uint64_t id) {
  for (size_t i = 0; i < p->n_function; i++)
    if (p->function[i]->id == id)
      return p->function[i];
  return NULL;
}

static inline int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "leaf;work;main|k=v,k2=12unit", labels sorted by text (order-insensitive). */
static inline void sample_key(const Perftools__Profiles__Profile *p,
                              const Perftools__Profiles__Sample *s, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < s->n_location_id && off < len; i++) {
    const Perftools__Profiles__Location *l = find_loc(p, s->location_id[i]);
    const Perftools__Profiles__Function *f =
        l && l->n_line ? find_fn(p, l->line[0]->function_id) : NULL;
    off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ";" : "", f ? str(p, f->name) : "?");
  }
  char labels[8][128];
  char *sorted[8];
  size_t n = s->n_label < 8 ? s->n_label : 8;
  for (size_t i = 0; i < n; i++) {
    const Perftools__Profiles__Label *l = s->label[i];
    if (l->str)
      snprintf(labels[i], sizeof labels[i], "%s=%s", str(p, l->key), str(p, l->str));
    else
      snprintf(labels[i], sizeof labels[i], "%s=%lld%s", str(p, l->key), (long long)l->num,
               str(p, l->num_unit));
    sorted[i] = labels[i];
  }
  qsort(sorted, n, sizeof *sorted, cmp_str);
  for (size_t i = 0; i < n && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "|", sorted[i]);
}

/* Sum of value[vi] over samples whose key equals want; -1 if none. */
static inline long long value_of(const Perftools__Profiles__Profile *p, const char *want,
                                 size_t vi) {
  long long sum = -1;
  char key[512];
  for (size_t i = 0; i < p->n_sample; i++) {
    sample_key(p, p->sample[i], key, sizeof key);
    if (strcmp(key, want) == 0)
      sum = (sum < 0 ? 0 : sum) + p->sample[i]->value[vi];
  }
  return sum;
}

static inline pp_builder *typed_builder(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  PP_CHECK_INT(pp_builder_add_sample_type(b, "samples", "count"), ==, 0);
  PP_CHECK_INT(pp_builder_add_sample_type(b, "cpu", "nanoseconds"), ==, 0);
  PP_CHECK_INT(pp_builder_set_period(b, "cpu", "nanoseconds", 10000000), ==, 0);
  return b;
}

static inline Perftools__Profiles__Profile *pack_unpack(pp_builder *b) {
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
  PP_CHECK(p != NULL);
  free(buf);
  return p;
}

/* Profile A: main -> work -> leaf (route=/a) twice, and main -> work. */
static inline Perftools__Profiles__Profile *profile_a(void) {
  pp_builder *b = typed_builder();
  pp_builder_set_time(b, 1000, 500);
  uint64_t m = pp_builder_mapping(b, 0x400000, 0x500000, 0, "/bin/app", "abc", true);
  uint64_t fmain = pp_builder_function(b, "main", "main", "app.c", 1);
  uint64_t fwork = pp_builder_function(b, "work", "work", "app.c", 10);
  uint64_t fleaf = pp_builder_function(b, "leaf", "_Z4leafv", "app.c", 20);
  uint64_t lmain = pp_builder_location(b, m, 0x401000, &fmain, NULL, 1);
  uint64_t lwork = pp_builder_location(b, m, 0x402000, &fwork, NULL, 1);
  uint64_t lleaf = pp_builder_location(b, m, 0x403000, &fleaf, NULL, 1);
  uint64_t stack3[] = {lleaf, lwork, lmain}, stack2[] = {lwork, lmain};
  pp_label route = {"route", "/a", 0, NULL};
  PP_CHECK_INT(pp_builder_sample(b, stack3, 3, (int64_t[]){3, 30}, 2, &route, 1), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, stack2, 2, (int64_t[]){2, 20}, 2, NULL, 0), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, stack3, 3, (int64_t[]){1, 10}, 2, &route, 1), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(b, "from a"), ==, 0);
  Perftools__Profiles__Profile *p = pack_unpack(b);
  pp_builder_free(b);
  return p;
}

/* Profile B: other strings order and ids; leaf stack again, plus a labelled one. */
static inline Perftools__Profiles__Profile *profile_b(void) {
  pp_builder *b = typed_builder();
  pp_builder_set_time(b, 900, 1000);
  pp_builder_string(b, "padding to shift every index");
  uint64_t m0 = pp_builder_mapping(b, 0x7f0000, 0x7f1000, 0, "/lib/libc.so", "", false);
  uint64_t m = pp_builder_mapping(b, 0x400000, 0x500000, 0, "/bin/app", "abc", true);
  uint64_t fother = pp_builder_function(b, "other", "other", "other.c", 5);
  uint64_t fleaf = pp_builder_function(b, "leaf", "_Z4leafv", "app.c", 20);
  uint64_t fwork = pp_builder_function(b, "work", "work", "app.c", 10);
  uint64_t fmain = pp_builder_function(b, "main", "main", "app.c", 1);
  uint64_t lother = pp_builder_location(b, m0, 0x7f0100, &fother, (int64_t[]){7}, 1);
  uint64_t lleaf = pp_builder_location(b, m, 0x403000, &fleaf, NULL, 1);
  uint64_t lwork = pp_builder_location(b, m, 0x402000, &fwork, NULL, 1);
  uint64_t lmain = pp_builder_location(b, m, 0x401000, &fmain, NULL, 1);
  uint64_t stack3[] = {lleaf, lwork, lmain}, stack2[] = {lother, lmain};
  pp_label route = {"route", "/a", 0, NULL};
  pp_label two[] = {{"route", "/b", 0, NULL}, {"bytes", NULL, 123, "bytes"}};
  PP_CHECK_INT(pp_builder_sample(b, stack3, 3, (int64_t[]){5, 50}, 2, &route, 1), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, stack2, 2, (int64_t[]){7, 70}, 2, two, 2), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(b, "from b"), ==, 0);
  Perftools__Profiles__Profile *p = pack_unpack(b);
  pp_builder_free(b);
  return p;
}

/* Both compressors (zlib for the SDK, igzip for the sidecar) against
 * the one bounded decompressor, zlib's. */
typedef int (*gzip_fn)(const uint8_t *, size_t, uint8_t **, size_t *);

static inline void check_gzip_round_trip_and_limit(gzip_fn gzip) {
  size_t n = 200000;
  uint8_t *in = malloc(n);
  for (size_t i = 0; i < n; i++)
    in[i] = (uint8_t)(i * 7 % 251);
  uint8_t *gz = NULL, *back = NULL;
  size_t gzlen = 0, backlen = 0;
  PP_CHECK_INT(gzip(in, n, &gz, &gzlen), ==, 0);
  PP_CHECK(gzlen > 10 && gz[0] == 0x1f && gz[1] == 0x8b);
  PP_CHECK_INT(pp_gunzip(gz, gzlen, n, &back, &backlen), ==, 0);
  PP_CHECK_INT(backlen, ==, n);
  PP_CHECK(back && memcmp(back, in, n) == 0);
  free(back);
  back = NULL;
  PP_CHECK_INT(pp_gunzip(gz, gzlen, n - 1, &back, &backlen), ==, -1);
  PP_CHECK(back == NULL);
  PP_CHECK_INT(pp_gunzip(gz, gzlen / 2, n, &back, &backlen), ==, -1); /* truncated */
  gz[gzlen / 2] ^= 0xff;
  gz[gzlen / 2 + 1] ^= 0xff;
  int rc = pp_gunzip(gz, gzlen, n, &back, &backlen); /* corrupt: data or crc error */
  PP_CHECK_INT(rc, ==, -1);
  if (rc == 0)
    free(back);
  free(gz);

  /* A bomb: 64 MiB of zeros compresses to ~64 KiB; a 1 MiB limit stops it. */
  size_t big = 64u << 20;
  uint8_t *zeros = calloc(big, 1);
  PP_CHECK_INT(gzip(zeros, big, &gz, &gzlen), ==, 0);
  free(zeros);
  PP_CHECK(gzlen < big / 100);
  back = NULL;
  PP_CHECK_INT(pp_gunzip(gz, gzlen, 1u << 20, &back, &backlen), ==, -1);
  PP_CHECK(back == NULL);
  free(gz);

  /* Incompressible: stored blocks, the output a little over the input. */
  size_t rn = 3u << 20;
  uint8_t *rnd = malloc(rn);
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < rn; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rnd[i] = (uint8_t)(x >> 24);
  }
  PP_CHECK_INT(gzip(rnd, rn, &gz, &gzlen), ==, 0);
  PP_CHECK(gzlen >= rn && gzlen < rn + rn / 100);
  PP_CHECK_INT(pp_gunzip(gz, gzlen, rn, &back, &backlen), ==, 0);
  PP_CHECK(backlen == rn && memcmp(back, rnd, rn) == 0);
  free(back);
  free(gz);
  free(rnd);

  PP_CHECK_INT(gzip(in, 0, &gz, &gzlen), ==, 0); /* empty input */
  PP_CHECK_INT(pp_gunzip(gz, gzlen, 10, &back, &backlen), ==, 0);
  PP_CHECK_INT(backlen, ==, 0);
  free(back);
  free(gz);
  free(in);
}
#endif
