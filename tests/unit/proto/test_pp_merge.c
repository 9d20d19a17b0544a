/* proto/pprof/pp_merge.c: merged values add up per stack and labels, ids
 * of every width are remapped, times are clamped, mismatched types and
 * periods are refused, and many merges cost linear time. With
 * "--write-merged FILE" it writes a gzipped merge of the two fixture
 * profiles (it_proto_pprof_raw.sh reads it with `go tool pprof -raw`). */
#include "pp_builder_int.h"
#include "pp_builder.h"
#include "pp_merge.h"
#include "pp_validate.h"
#include "pp_gzip.h"
#include "pprof_fixture.h"
#include <limits.h>

/* Merge rewrites each sample's location ids as the builder's, each id's
 * varint kept from its first use: ids of one, two and three bytes, out of
 * order and repeated, come out as the same stacks (compared by address,
 * one per location), merged once and then again (every id known). */
static void test_merge_remaps_ids_of_every_width(void) {
  enum { NLOC = 20000 };
  pp_builder *src = pp_builder_new();
  PP_CHECK(src != NULL);
  if (!src)
    return;
  int64_t fname = pp_builder_string(src, "f"), cpu = pp_builder_string(src, "cpu"),
          ns = pp_builder_string(src, "nanoseconds");
  PP_CHECK_INT(pp_builder_add_sample_type_ix(src, cpu, ns), ==, 0);
  uint64_t fid = pp_builder_function_ix(src, fname, fname, 0, 0);
  int64_t line = 1;
  for (uint64_t i = 1; i <= NLOC; i++)
    PP_CHECK_INT(pp_builder_location(src, 0, 0x1000 * i, &fid, &line, 1), ==, i);
  static const uint64_t stacks[][6] = {{1, 127, 128, 16383, 16384, NLOC},
                                       {NLOC, 16384, 16383, 128, 127, 1},
                                       {300, 300, 2, 19999, 5000, 129}};
  for (size_t k = 0; k < 3; k++) {
    int64_t v = (int64_t)k + 1;
    PP_CHECK_INT(pp_builder_sample_ix(src, stacks[k], 6, &v, 1, NULL, 0), ==, 0);
  }
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(src, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *in = perftools__profiles__profile__unpack(NULL, len, buf);
  free(buf);
  PP_CHECK(in != NULL);
  /* The merged builder numbers locations by first use: not the source's. */
  pp_builder *m = pp_builder_new();
  char why[256] = "";
  for (int round = 0; in && round < 2; round++) {
    PP_CHECK_INT(pp_merge_add(m, in, why, sizeof why), ==, 0);
    buf = NULL;
    PP_CHECK_INT(pp_builder_pack(m, &buf, &len), ==, 0);
    Perftools__Profiles__Profile *out = perftools__profiles__profile__unpack(NULL, len, buf);
    free(buf);
    PP_CHECK(out != NULL);
    if (!out)
      break;
    PP_CHECK_INT(out->n_sample, ==, 3);
    for (size_t k = 0; k < out->n_sample && k < 3; k++) {
      const Perftools__Profiles__Sample *smp = out->sample[k];
      PP_CHECK_INT(smp->n_location_id, ==, 6);
      PP_CHECK_INT(smp->value[0], ==, (int64_t)(k + 1) * (round + 1));
      for (size_t j = 0; j < smp->n_location_id && j < 6; j++) {
        uint64_t id = smp->location_id[j];
        PP_CHECK(id >= 1 && id <= out->n_location);
        if (id >= 1 && id <= out->n_location)
          PP_CHECK_INT(out->location[id - 1]->address, ==, 0x1000 * stacks[k][j]);
      }
    }
    perftools__profiles__profile__free_unpacked(out, NULL);
  }
  perftools__profiles__profile__free_unpacked(in, NULL);
  pp_builder_free(m);
  pp_builder_free(src);
}

static void test_merge_sums_values_and_keeps_labels(void) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  pp_builder *m = pp_builder_new();
  char why[256] = "";
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_merge_add(m, bp, why, sizeof why), ==, 0);
  if (why[0])
    fprintf(stderr, "  merge said: %s\n", why);
  Perftools__Profiles__Profile *p = pack_unpack(m);
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  PP_CHECK_INT(p->n_sample_type, ==, 2);
  PP_CHECK_STR(str(p, p->sample_type[1]->type), "cpu");
  PP_CHECK_INT(p->period, ==, 10000000);
  PP_CHECK_INT(p->n_sample, ==, 3);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 0), ==, 9);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 1), ==, 90);
  PP_CHECK_INT(value_of(p, "work;main", 0), ==, 2);
  PP_CHECK_INT(value_of(p, "other;main|bytes=123bytes,route=/b", 0), ==, 7);
  PP_CHECK_INT(p->n_mapping, ==, 2);  /* /bin/app shared, libc from b */
  PP_CHECK_INT(p->n_function, ==, 4); /* main, work, leaf shared; other */
  PP_CHECK_INT(p->n_location, ==, 4);
  PP_CHECK_INT(p->time_nanos, ==, 900);      /* earliest start */
  PP_CHECK_INT(p->duration_nanos, ==, 1000); /* b ends at 1900, a at 1500 */
  PP_CHECK_INT(p->n_comment, ==, 2);
  long long total = 0;
  for (size_t i = 0; i < p->n_sample; i++)
    total += p->sample[i]->value[1];
  PP_CHECK_INT(total, ==, 40 + 20 + 50 + 70);
  /* The line number of b's "other" location survived the remap. */
  const Perftools__Profiles__Location *lo = NULL;
  for (size_t i = 0; i < p->n_location; i++)
    if (p->location[i]->address == 0x7f0100)
      lo = p->location[i];
  PP_CHECK(lo != NULL && lo->n_line == 1 && lo->line[0]->line == 7);

  /* Merging a again only adds values; nothing new appears. */
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_builder_sample_count(m), ==, 3);
  perftools__profiles__profile__free_unpacked(p, NULL);
  p = pack_unpack(m);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 0), ==, 13);
  PP_CHECK_INT(p->n_function, ==, 4);
  perftools__profiles__profile__free_unpacked(p, NULL);
  pp_builder_free(m);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
}

/* Times at the ends of int64 (untrusted profiles) merge without overflow:
 * the window is clamped (found by fuzz_pprof). */
/* A merge of a's column 0 then of its column 1 is one whole merge: each
 * adds only its column, and a sample left all zero is not added. */
static void test_merge_columns_add_up_to_a_whole_merge(void) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  pp_builder *whole = pp_builder_new(), *cols = pp_builder_new();
  char why[256] = "";
  static const bool first[2] = {true, false}, second[2] = {false, true};
  PP_CHECK_INT(pp_merge_add(whole, a, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_merge_add(whole, bp, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_merge_add_columns(cols, a, first, why, sizeof why), ==, 0);
  Perftools__Profiles__Profile *p = pack_unpack(cols);
  PP_CHECK_INT(p->n_sample_type, ==, 2); /* the types are taken whole */
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 0), ==, 4);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 1), ==, 0);
  PP_CHECK_INT(p->n_location, ==, 3);
  perftools__profiles__profile__free_unpacked(p, NULL);
  PP_CHECK_INT(pp_merge_add_columns(cols, bp, first, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_merge_add_columns(cols, a, second, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_merge_add_columns(cols, bp, second, why, sizeof why), ==, 0);
  Perftools__Profiles__Profile *w = pack_unpack(whole);
  p = pack_unpack(cols);
  PP_CHECK_INT(p->n_sample, ==, w->n_sample);
  const char *keys[] = {"leaf;work;main|route=/a", "work;main",
                        "other;main|bytes=123bytes,route=/b"};
  for (size_t k = 0; k < 3; k++)
    for (size_t v = 0; v < 2; v++)
      PP_CHECK_INT(value_of(p, keys[k], v), ==, value_of(w, keys[k], v));
  PP_CHECK_INT(p->time_nanos, ==, w->time_nanos);
  PP_CHECK_INT(p->duration_nanos, ==, w->duration_nanos);
  PP_CHECK_INT(p->n_comment, ==, 2);
  perftools__profiles__profile__free_unpacked(p, NULL);
  perftools__profiles__profile__free_unpacked(w, NULL);

  /* A sample whose kept columns are zero is left out, not added as zero. */
  pp_builder *hb = pp_builder_new();
  PP_CHECK_INT(pp_builder_add_sample_type(hb, "alloc_space", "bytes"), ==, 0);
  PP_CHECK_INT(pp_builder_add_sample_type(hb, "inuse_space", "bytes"), ==, 0);
  uint64_t f = pp_builder_function(hb, "old", "old", "", 0);
  uint64_t g = pp_builder_function(hb, "new", "new", "", 0);
  uint64_t lf = pp_builder_location(hb, 0, 0x10, &f, NULL, 1);
  uint64_t lg = pp_builder_location(hb, 0, 0x20, &g, NULL, 1);
  PP_CHECK_INT(pp_builder_sample(hb, &lf, 1, (int64_t[]){0, 4096}, 2, NULL, 0), ==, 0);
  PP_CHECK_INT(pp_builder_sample(hb, &lg, 1, (int64_t[]){512, 0}, 2, NULL, 0), ==, 0);
  Perftools__Profiles__Profile *h = pack_unpack(hb);
  pp_builder *alloc = pp_builder_new();
  PP_CHECK_INT(pp_merge_add_columns(alloc, h, first, why, sizeof why), ==, 0);
  p = pack_unpack(alloc);
  PP_CHECK_INT(p->n_sample, ==, 1);
  PP_CHECK_INT(value_of(p, "new", 0), ==, 512);
  PP_CHECK_INT(value_of(p, "old", 0), ==, -1);
  PP_CHECK_INT(p->n_location, ==, 2); /* the stack of the one left out stays */
  perftools__profiles__profile__free_unpacked(p, NULL);
  pp_builder_free(alloc);
  perftools__profiles__profile__free_unpacked(h, NULL);
  pp_builder_free(hb);
  pp_builder_free(whole);
  pp_builder_free(cols);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
}

static void test_merge_clamps_extreme_times(void) {
  pp_builder *m = pp_builder_new();
  PP_CHECK(m != NULL);
  if (!m)
    return;
  Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
  char *strings[] = {""};
  p.string_table = strings;
  p.n_string_table = 1;
  char why[256] = "";
  p.time_nanos = INT64_MAX - 10;
  p.duration_nanos = 80;
  PP_CHECK_INT(pp_merge_add(m, &p, why, sizeof why), ==, 0);
  p.time_nanos = INT64_MIN;
  p.duration_nanos = INT64_MAX;
  PP_CHECK_INT(pp_merge_add(m, &p, why, sizeof why), ==, 0);
  pp_builder_meta meta;
  pp_builder_get_meta(m, &meta);
  PP_CHECK(meta.time_nanos == INT64_MIN);
  PP_CHECK(meta.duration_nanos == INT64_MAX);
  pp_builder_free(m);
}

static void test_merge_rejects_mismatched_types_and_period(void) {
  Perftools__Profiles__Profile *a = profile_a();
  pp_builder *m = pp_builder_new();
  char why[256] = "";
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, 0);

  pp_builder *ob = pp_builder_new();
  pp_builder_add_sample_type(ob, "alloc_space", "bytes");
  pp_builder_set_period(ob, "cpu", "nanoseconds", 10000000);
  Perftools__Profiles__Profile *other = pack_unpack(ob);
  PP_CHECK_INT(pp_merge_add(m, other, why, sizeof why), ==, -1);
  PP_CHECK(strstr(why, "sample types differ") && strstr(why, "alloc_space/bytes") &&
           strstr(why, "cpu/nanoseconds"));
  perftools__profiles__profile__free_unpacked(other, NULL);
  pp_builder_free(ob);

  a->period = 5000000; /* 200 Hz */
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, -1);
  PP_CHECK(strstr(why, "periods differ") != NULL);
  a->period = 10000000;
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_builder_sample_count(m), ==, 2);
  pp_builder_free(m);
  perftools__profiles__profile__free_unpacked(a, NULL);
}

static void test_merge_many_is_linear(void) {
  /* 201 profiles of 500 distinct stacks each, overlapping into 700 in all:
   * the merged totals equal the sum of the inputs. */
  pp_builder *m = pp_builder_new();
  long long want = 0;
  char name[32], why[256] = "";
  for (int k = 0; k < 201; k++) {
    pp_builder *b = typed_builder();
    for (int i = 0; i < 500; i++) {
      snprintf(name, sizeof name, "fn%d", (i + k) % 700);
      uint64_t f = pp_builder_function(b, name, name, "x.c", 0);
      uint64_t l = pp_builder_location(b, 0, (uint64_t)((i + k) % 700) * 16, &f, NULL, 1);
      uint64_t stack[2] = {l, l};
      pp_builder_sample(b, stack, 2, (int64_t[]){1, 10000000}, 2, NULL, 0);
      want += 1;
    }
    Perftools__Profiles__Profile *p = pack_unpack(b);
    PP_CHECK_INT(pp_merge_add(m, p, why, sizeof why), ==, 0);
    perftools__profiles__profile__free_unpacked(p, NULL);
    pp_builder_free(b);
  }
  PP_CHECK_INT(pp_builder_sample_count(m), ==, 700);
  Perftools__Profiles__Profile *p = pack_unpack(m);
  long long got = 0;
  for (size_t i = 0; i < p->n_sample; i++)
    got += p->sample[i]->value[0];
  PP_CHECK_INT(got, ==, want);
  perftools__profiles__profile__free_unpacked(p, NULL);
  pp_builder_free(m);
}

/* The sidecar's case: every sample has its own trace_id, so each merge adds
 * new strings and samples to a growing builder; merging the first profile
 * again adds nothing new and doubles its samples' values. */
static void test_merge_distinct_labels_across_growth(void) {
  enum { K = 12, N = 400 };
  pp_builder *m = pp_builder_new();
  Perftools__Profiles__Profile *first = NULL;
  char why[256] = "", trace[32], key[64];
  for (int k = 0; k < K; k++) {
    pp_builder *b = typed_builder();
    uint64_t f[3], l[3];
    for (int j = 0; j < 3; j++) {
      snprintf(key, sizeof key, "fn%d", (j + k) % 4);
      f[j] = pp_builder_function(b, key, key, "x.c", 0);
      l[j] = pp_builder_location(b, 0, (uint64_t)((j + k) % 4) * 16, &f[j], NULL, 1);
    }
    for (int i = 0; i < N; i++) {
      snprintf(trace, sizeof trace, "%08x%08x", (unsigned)k * 2654435761u, (unsigned)i);
      pp_label labels[2] = {{"trace_id", trace, 0, NULL}, {"route", i % 2 ? "/a" : "/b", 0, NULL}};
      uint64_t stack[3] = {l[i % 3], l[(i + 1) % 3], l[(i + 2) % 3]};
      PP_CHECK_INT(pp_builder_sample(b, stack, 3, (int64_t[]){i + 1, k}, 2, labels, 2), ==, 0);
    }
    Perftools__Profiles__Profile *p = pack_unpack(b);
    PP_CHECK_INT(pp_merge_add(m, p, why, sizeof why), ==, 0);
    if (k == 0)
      first = p;
    else
      perftools__profiles__profile__free_unpacked(p, NULL);
    pp_builder_free(b);
  }
  PP_CHECK_INT(pp_builder_sample_count(m), ==, K * N);
  PP_CHECK_INT(pp_merge_add(m, first, why, sizeof why), ==, 0);
  PP_CHECK_INT(pp_builder_sample_count(m), ==, K * N);
  Perftools__Profiles__Profile *p = pack_unpack(m);
  PP_CHECK_INT(p->n_sample, ==, K * N);
  char want[160];
  for (int k = 0; k < K; k += 5)
    for (int i = 0; i < N; i += 97) {
      snprintf(want, sizeof want, "fn%d;fn%d;fn%d|route=%s,trace_id=%08x%08x", (i % 3 + k) % 4,
               ((i + 1) % 3 + k) % 4, ((i + 2) % 3 + k) % 4, i % 2 ? "/a" : "/b",
               (unsigned)k * 2654435761u, (unsigned)i);
      PP_CHECK_INT(value_of(p, want, 0), ==, (k == 0 ? 2 : 1) * (i + 1));
      PP_CHECK_INT(value_of(p, want, 1), ==, k == 0 ? 0 : k);
    }
  perftools__profiles__profile__free_unpacked(p, NULL);
  perftools__profiles__profile__free_unpacked(first, NULL);
  pp_builder_free(m);
}

static int write_merged(const char *path) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  pp_builder *m = pp_builder_new();
  char why[256] = "";
  uint8_t *raw = NULL, *gz = NULL;
  size_t rawlen = 0, gzlen = 0;
  int rc = 1;
  if (pp_merge_add(m, a, why, sizeof why) != 0 || pp_merge_add(m, bp, why, sizeof why) != 0 ||
      pp_builder_pack(m, &raw, &rawlen) != 0 || pp_gzip(raw, rawlen, &gz, &gzlen) != 0) {
    fprintf(stderr, "merge failed: %s\n", why);
    goto out;
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(gz, 1, gzlen, f) != gzlen || fclose(f) != 0) {
    perror(path);
    goto out;
  }
  rc = 0;
out:
  free(raw);
  free(gz);
  pp_builder_free(m);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-merged") == 0)
    return write_merged(argv[2]);
  PP_RUN(test_merge_remaps_ids_of_every_width);
  PP_RUN(test_merge_sums_values_and_keeps_labels);
  PP_RUN(test_merge_columns_add_up_to_a_whole_merge);
  PP_RUN(test_merge_clamps_extreme_times);
  PP_RUN(test_merge_rejects_mismatched_types_and_period);
  PP_RUN(test_merge_many_is_linear);
  PP_RUN(test_merge_distinct_labels_across_growth);
  PP_DONE();
}
