/* Splitting a profile above Pyroscope's per-profile limit by sample
 * (sidecar/exporters/pyroscope_split.c): totals kept, every piece valid and
 * under the limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter_pyroscope.h"
#include "pp_builder_int.h"
#include "pp_builder.h"
#include "pp_merge.h"
#include "pp_parse_ref.h"
#include "pp_test.h"

#define NTYPES 2

typedef struct totals {
  long long v[NTYPES];
  long long labelled; /* values[0] of samples carrying a "trace_id" label */
  size_t samples;
} totals;

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

static void add_totals(const Perftools__Profiles__Profile *p, totals *t) {
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    for (size_t j = 0; j < NTYPES && j < s->n_value; j++)
      t->v[j] += s->value[j];
    for (size_t j = 0; j < s->n_label; j++)
      if (strcmp(pstr(p, s->label[j]->key), "trace_id") == 0)
        t->labelled += s->value[0];
    t->samples++;
  }
}

/* A profile of nsamples distinct stacks over long function names; every
 * third sample carries a trace_id label. */
static int make_profile(size_t nsamples, size_t name_len, uint8_t **out, size_t *len) {
  pp_builder *b = pp_builder_new();
  if (!b)
    return -1;
  int rc = -1;
  char *name = malloc(name_len + 32);
  if (!name)
    goto out;
  memset(name, 'f', name_len);
  pp_builder_add_sample_type(b, "samples", "count");
  pp_builder_add_sample_type(b, "cpu", "nanoseconds");
  pp_builder_set_period(b, "cpu", "nanoseconds", 10000000);
  pp_builder_set_time(b, 1700000000000000000LL, 60000000000LL);
  uint64_t map = pp_builder_mapping(b, 0x400000, 0x800000, 0, "/usr/bin/app", "abc123", true);
  for (size_t i = 0; i < nsamples; i++) {
    uint64_t locs[3];
    for (int d = 0; d < 3; d++) {
      snprintf(name + name_len, 32, "_%zu_%d", i, d);
      uint64_t f = pp_builder_function(b, name, name, "/src/app.c", (int64_t)i);
      int64_t line = (int64_t)(i + (size_t)d);
      locs[d] = pp_builder_location(b, map, 0x400000 + i * 16 + (uint64_t)d, &f, &line, 1);
    }
    int64_t vals[NTYPES] = {(int64_t)(i % 7 + 1), (int64_t)(i % 7 + 1) * 10000000};
    char trace[32];
    snprintf(trace, sizeof trace, "t%zu", i);
    pp_label lab = {.key = "trace_id", .str = trace};
    if (pp_builder_sample(b, locs, 3, vals, NTYPES, i % 3 == 0 ? &lab : NULL, i % 3 == 0) != 0)
      goto out;
  }
  rc = pp_builder_pack(b, out, len);
out:
  free(name);
  pp_builder_free(b);
  return rc;
}

static void test_pyroscope_split_small_profile_is_one_copy(void) {
  uint8_t *p = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_profile(50, 20, &p, &len), ==, 0);
  pp_piece *pieces = NULL;
  size_t n = 0;
  char why[256] = "";
  PP_CHECK_INT(pp_split_limits(p, len, PYROSCOPE_MAX_PROFILE_BYTES, PYROSCOPE_MAX_SAMPLES, &pieces,
                               &n, why, sizeof why),
               ==, 0);
  PP_CHECK_INT(n, ==, 1);
  if (n == 1) {
    PP_CHECK_INT(pieces[0].len, ==, len);
    PP_CHECK(memcmp(pieces[0].data, p, len) == 0);
    PP_CHECK(pieces[0].data != p);
  }
  pp_pieces_free(pieces, n);
  free(p);
}

static void test_pyroscope_split_big_profile_keeps_totals_and_limit(void) {
  uint8_t *p = NULL;
  size_t len = 0;
  /* About 9 MiB: three stack frames of ~300-byte names per sample. */
  PP_CHECK_INT(make_profile(9000, 300, &p, &len), ==, 0);
  PP_CHECK_INT(len, >, 2 * PYROSCOPE_MAX_PROFILE_BYTES);
  char why[256] = "";
  Perftools__Profiles__Profile *orig = pp_ref_parse(p, len, (size_t)1 << 30, why, sizeof why);
  PP_CHECK(orig != NULL);
  if (!orig) {
    free(p);
    return;
  }
  totals want = {0}, got = {0};
  add_totals(orig, &want);
  pp_piece *pieces = NULL;
  size_t n = 0;
  PP_CHECK_INT(pp_split_limits(p, len, PYROSCOPE_MAX_PROFILE_BYTES, PYROSCOPE_MAX_SAMPLES, &pieces,
                               &n, why, sizeof why),
               ==, 0);
  fprintf(stderr, "  %zu bytes -> %zu pieces\n", len, n);
  PP_CHECK_INT(n, >=, 3);
  size_t sum_len = 0;
  for (size_t i = 0; i < n; i++) {
    PP_CHECK_INT(pieces[i].len, <=, PYROSCOPE_MAX_PROFILE_BYTES);
    sum_len += pieces[i].len;
    Perftools__Profiles__Profile *q =
        pp_ref_parse(pieces[i].data, pieces[i].len, (size_t)1 << 30, why, sizeof why);
    PP_CHECK(q != NULL);
    if (!q) {
      fprintf(stderr, "  piece %zu invalid: %s\n", i, why);
      continue;
    }
    add_totals(q, &got);
    PP_CHECK_INT(q->n_sample_type, ==, NTYPES);
    PP_CHECK_STR(pstr(q, q->sample_type[1]->type), "cpu");
    PP_CHECK(q->period_type != NULL);
    PP_CHECK_INT(q->period, ==, orig->period);
    PP_CHECK_INT(q->time_nanos, ==, orig->time_nanos);
    PP_CHECK_INT(q->duration_nanos, ==, orig->duration_nanos);
    /* Only what its samples use: far fewer locations than the whole. */
    PP_CHECK_INT(q->n_location, <=, 3 * q->n_sample);
    PP_CHECK_INT(q->n_location, <, orig->n_location);
    perftools__profiles__profile__free_unpacked(q, NULL);
  }
  PP_CHECK_INT(got.samples, ==, want.samples);
  PP_CHECK_INT(got.v[0], ==, want.v[0]);
  PP_CHECK_INT(got.v[1], ==, want.v[1]);
  PP_CHECK_INT(got.labelled, ==, want.labelled);
  PP_CHECK_INT(want.labelled, >, 0);
  /* Splitting does not multiply the bytes (only the small tables repeat). */
  PP_CHECK_INT(sum_len, <, len + len / 4);
  pp_pieces_free(pieces, n);
  perftools__profiles__profile__free_unpacked(orig, NULL);
  free(p);
}

static void test_pyroscope_split_by_sample_count(void) {
  uint8_t *p = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_profile(50, 20, &p, &len), ==, 0);
  PP_CHECK_INT(pp_count_samples(p, len), ==, 50);
  char why[256] = "";
  Perftools__Profiles__Profile *orig = pp_ref_parse(p, len, (size_t)1 << 30, why, sizeof why);
  PP_CHECK(orig != NULL);
  totals want = {0}, got = {0};
  if (orig)
    add_totals(orig, &want);
  pp_piece *pieces = NULL;
  size_t n = 0;
  PP_CHECK_INT(
      pp_split_limits(p, len, PYROSCOPE_MAX_PROFILE_BYTES, 16, &pieces, &n, why, sizeof why), ==,
      0);
  PP_CHECK_INT(n, ==, 4);
  for (size_t i = 0; i < n; i++) {
    PP_CHECK_INT(pp_count_samples(pieces[i].data, pieces[i].len), <=, 16);
    Perftools__Profiles__Profile *q =
        pp_ref_parse(pieces[i].data, pieces[i].len, (size_t)1 << 30, why, sizeof why);
    PP_CHECK(q != NULL);
    if (q) {
      add_totals(q, &got);
      perftools__profiles__profile__free_unpacked(q, NULL);
    }
  }
  PP_CHECK_INT(got.samples, ==, 50);
  PP_CHECK_INT(got.v[0], ==, want.v[0]);
  PP_CHECK_INT(got.v[1], ==, want.v[1]);
  PP_CHECK_INT(got.labelled, ==, want.labelled);
  pp_pieces_free(pieces, n);
  /* Within both limits: one piece, the same bytes. */
  PP_CHECK_INT(
      pp_split_limits(p, len, PYROSCOPE_MAX_PROFILE_BYTES, 50, &pieces, &n, why, sizeof why), ==,
      0);
  PP_CHECK_INT(n, ==, 1);
  pp_pieces_free(pieces, n);
  uint8_t trunc[3] = {0x12, 0x05, 0x00}; /* field 2, length 5, 1 byte left */
  PP_CHECK_INT(pp_count_samples(trunc, sizeof trunc), ==, -1);
  if (orig)
    perftools__profiles__profile__free_unpacked(orig, NULL);
  free(p);
}

static void test_pyroscope_split_refuses_a_sample_over_the_limit(void) {
  uint8_t *p = NULL;
  size_t len = 0;
  /* Each sample has ~3 x 40 KiB of names: one sample cannot fit 64 KiB. */
  PP_CHECK_INT(make_profile(4, 40000, &p, &len), ==, 0);
  pp_piece *pieces = NULL;
  size_t n = 0;
  char why[256] = "";
  PP_CHECK_INT(pp_split(p, len, 65536, &pieces, &n, why, sizeof why), ==, -1);
  PP_CHECK(strstr(why, "alone") != NULL);
  PP_CHECK(pieces == NULL);
  PP_CHECK_INT(n, ==, 0);
  free(p);
}

static void test_pyroscope_split_refuses_garbage(void) {
  uint8_t junk[100000];
  memset(junk, 0xff, sizeof junk);
  pp_piece *pieces = NULL;
  size_t n = 0;
  char why[256] = "";
  PP_CHECK_INT(pp_split(junk, sizeof junk, 65536, &pieces, &n, why, sizeof why), ==, -1);
  PP_CHECK(strstr(why, "invalid") != NULL);
}

/* Pieces are built by the merge's own remapping (pp_merge_add_samples), so
 * they keep what a merge keeps: drop/keep_frames, default_sample_type,
 * doc_url and every mapping flag (the splitter's former copy lost them). */
static void test_pyroscope_split_pieces_keep_profile_fields(void) {
  pp_builder *b = pp_builder_new();
  pp_builder_add_sample_type(b, "samples", "count");
  pp_builder_add_sample_type(b, "cpu", "nanoseconds");
  pp_builder_set_period(b, "cpu", "nanoseconds", 1000);
  pp_builder_set_extras_ix(b, pp_builder_string(b, "^drop"), pp_builder_string(b, "^keep"),
                           pp_builder_string(b, "cpu"), pp_builder_string(b, "https://doc"));
  uint64_t m = pp_builder_mapping_ix(
      b, 0x1000, 0x9000, 0, pp_builder_string(b, "/bin/app"), pp_builder_string(b, "b1d"),
      PP_MAPPING_HAS_FUNCTIONS | PP_MAPPING_HAS_FILENAMES | PP_MAPPING_HAS_LINE_NUMBERS |
          PP_MAPPING_HAS_INLINE_FRAMES);
  for (int i = 0; i < 40; i++) {
    char name[32];
    snprintf(name, sizeof name, "fn%d", i);
    uint64_t f = pp_builder_function(b, name, name, "a.c", 1);
    int64_t line = i;
    uint64_t l = pp_builder_location(b, m, 0x1000 + 16 * (uint64_t)i, &f, &line, 1);
    int64_t v[2] = {1, 1000};
    PP_CHECK(pp_builder_sample(b, &l, 1, v, 2, NULL, 0) == 0);
  }
  uint8_t *raw;
  size_t len;
  PP_CHECK(pp_builder_pack(b, &raw, &len) == 0);
  pp_builder_free(b);
  pp_piece *pieces = NULL;
  size_t n = 0;
  char why[256];
  PP_CHECK_INT(pp_split_limits(raw, len, 1 << 20, 10, &pieces, &n, why, sizeof why), ==, 0);
  PP_CHECK_INT(n, ==, 4);
  for (size_t i = 0; i < n; i++) {
    Perftools__Profiles__Profile *p =
        pp_ref_parse(pieces[i].data, pieces[i].len, 1 << 20, why, sizeof why);
    PP_CHECK(p != NULL);
    if (!p)
      continue;
    PP_CHECK_STR(pstr(p, p->drop_frames), "^drop");
    PP_CHECK_STR(pstr(p, p->keep_frames), "^keep");
    PP_CHECK_STR(pstr(p, p->default_sample_type), "cpu");
    PP_CHECK_STR(pstr(p, p->doc_url), "https://doc");
    PP_CHECK_INT(p->n_mapping, ==, 1);
    PP_CHECK(p->n_mapping && p->mapping[0]->has_functions && p->mapping[0]->has_filenames &&
             p->mapping[0]->has_line_numbers && p->mapping[0]->has_inline_frames);
    PP_CHECK_INT(p->n_function, ==, 10); /* only what its samples use */
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  pp_pieces_free(pieces, n);
  free(raw);
}

int main(void) {
  PP_RUN(test_pyroscope_split_small_profile_is_one_copy);
  PP_RUN(test_pyroscope_split_big_profile_keeps_totals_and_limit);
  PP_RUN(test_pyroscope_split_by_sample_count);
  PP_RUN(test_pyroscope_split_refuses_a_sample_over_the_limit);
  PP_RUN(test_pyroscope_split_refuses_garbage);
  PP_RUN(test_pyroscope_split_pieces_keep_profile_fields);
  PP_DONE();
}
