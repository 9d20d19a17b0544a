/* pprof builder, its encoder (pp_builder_pack.c, byte for byte against protobuf-c's
 * in pp_pack_ref.c), validation, parse, merge and gzip. With
 * "--write-merged FILE" it writes a gzipped merge of two test profiles, with
 * "--write-edge FILE" the edge profile below (used by it_proto_pprof_raw.sh
 * to check them with `go tool pprof -raw`). */
#include "pp_builder_int.h" /* string_at, string_count */
#include "pp_deflate.h"
#include "pp_pack_ref.h"
#include "pp_builder.h"
#include "pp_validate.h"
#include "pp_merge.h"
#include "pp_gzip.h"
#include "pp_parse_ref.h"
#include "pp_test.h"
#include "pp_varint.h"

#include <limits.h>

static const char *str(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table ? p->string_table[ix] : "<bad>";
}

static const Perftools__Profiles__Location *find_loc(const Perftools__Profiles__Profile *p,
                                                     uint64_t id) {
  for (size_t i = 0; i < p->n_location; i++)
    if (p->location[i]->id == id)
      return p->location[i];
  return NULL;
}

static const Perftools__Profiles__Function *find_fn(const Perftools__Profiles__Profile *p,
                                                    uint64_t id) {
  for (size_t i = 0; i < p->n_function; i++)
    if (p->function[i]->id == id)
      return p->function[i];
  return NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "leaf;work;main|k=v,k2=12unit", labels sorted by text (order-insensitive). */
static void sample_key(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
                       char *buf, size_t len) {
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
static long long value_of(const Perftools__Profiles__Profile *p, const char *want, size_t vi) {
  long long sum = -1;
  char key[512];
  for (size_t i = 0; i < p->n_sample; i++) {
    sample_key(p, p->sample[i], key, sizeof key);
    if (strcmp(key, want) == 0)
      sum = (sum < 0 ? 0 : sum) + p->sample[i]->value[vi];
  }
  return sum;
}

static pp_builder *typed_builder(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  PP_CHECK_INT(pp_builder_add_sample_type(b, "samples", "count"), ==, 0);
  PP_CHECK_INT(pp_builder_add_sample_type(b, "cpu", "nanoseconds"), ==, 0);
  PP_CHECK_INT(pp_builder_set_period(b, "cpu", "nanoseconds", 10000000), ==, 0);
  return b;
}

static Perftools__Profiles__Profile *pack_unpack(pp_builder *b) {
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
  PP_CHECK(p != NULL);
  free(buf);
  return p;
}

/* Profile A: main -> work -> leaf (route=/a) twice, and main -> work. */
static Perftools__Profiles__Profile *profile_a(void) {
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
static Perftools__Profiles__Profile *profile_b(void) {
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

static void test_builder_interns_strings_with_empty_first(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK_INT(pp_builder_string(b, ""), ==, 0);
  PP_CHECK_INT(pp_builder_string(b, NULL), ==, 0);
  int64_t a = pp_builder_string(b, "alpha");
  PP_CHECK_INT(a, ==, 1);
  PP_CHECK_INT(pp_builder_string(b, "beta"), ==, 2);
  PP_CHECK_INT(pp_builder_string(b, "alpha"), ==, a);
  char many[32];
  for (int i = 0; i < 5000; i++) { /* forces several table growths */
    snprintf(many, sizeof many, "s%d", i);
    PP_CHECK_INT(pp_builder_string(b, many), ==, 3 + i);
  }
  for (int i = 0; i < 5000; i += 777) {
    snprintf(many, sizeof many, "s%d", i);
    PP_CHECK_INT(pp_builder_string(b, many), ==, 3 + i);
  }
  pp_builder_free(b);
}

/* Strings of every length 0..299 (each a prefix of the next), more than fill
 * the string chunks, and long ones past a chunk's size: each interned once,
 * found again by content, and packed intact. */
static void test_builder_strings_across_chunks_and_prefixes(void) {
  enum { NSHORT = 300, NLONG = 3, LONG_LEN = 70000, NFIXED = NSHORT + 2 * NLONG };
  pp_builder *b = pp_builder_new();
  char *text = malloc(LONG_LEN + 1), buf[NSHORT + 1];
  PP_CHECK(b != NULL && text != NULL);
  if (!b || !text)
    return;
  for (int i = 0; i < NSHORT; i++)
    buf[i] = (char)('a' + i % 26);
  int64_t ix[NSHORT + NLONG];
  for (int round = 0; round < 2; round++) { /* the second round finds them all */
    for (int n = 1; n < NSHORT; n++) {
      buf[n] = '\0';
      int64_t got = pp_builder_string(b, buf);
      buf[n] = (char)('a' + n % 26);
      if (round == 0)
        ix[n] = got;
      PP_CHECK_INT(got, ==, n); /* "" is 0, and the prefix of length n comes n-th */
    }
    for (int k = 0; k < NLONG; k++) {
      memset(text, 'x', LONG_LEN);
      text[LONG_LEN - 1 - k] = '\0'; /* three lengths, each a prefix of the first */
      int64_t got = pp_builder_string(b, text);
      if (round == 0)
        ix[NSHORT + k] = got;
      PP_CHECK_INT(got, ==, NSHORT + 2 * k);
      /* A short one after each long one (which has a chunk of its own). */
      char mid[16];
      snprintf(mid, sizeof mid, "mid%d", k);
      PP_CHECK_INT(pp_builder_string(b, mid), ==, NSHORT + 2 * k + 1);
    }
  }
  for (int k = 0; k < NLONG; k++) {
    char mid[16];
    snprintf(mid, sizeof mid, "mid%d", k);
    PP_CHECK_STR(pp_builder_string_at(b, NSHORT + 2 * k + 1), mid);
  }
  char tail[16];
  for (int i = 0; i < 20000; i++) { /* many more chunks and table growths */
    snprintf(tail, sizeof tail, "t%d", i);
    PP_CHECK_INT(pp_builder_string(b, tail), ==, NFIXED + i);
  }
  PP_CHECK_INT(pp_builder_string_count(b), ==, NFIXED + 20000);
  PP_CHECK_STR(pp_builder_string_at(b, 0), "");
  Perftools__Profiles__Profile *p = pack_unpack(b);
  PP_CHECK_INT(p->n_string_table, ==, NFIXED + 20000);
  for (int n = 1; n < NSHORT && ix[n] >= 0 && ix[n] < (int64_t)p->n_string_table; n++) {
    PP_CHECK_INT(strlen(p->string_table[ix[n]]), ==, n);
    PP_CHECK_INT(strncmp(p->string_table[ix[n]], buf, (size_t)n), ==, 0);
  }
  for (int k = 0; k < NLONG && ix[NSHORT + k] >= 0 && ix[NSHORT + k] < (int64_t)p->n_string_table;
       k++)
    PP_CHECK_INT(strlen(p->string_table[ix[NSHORT + k]]), ==, LONG_LEN - 1 - k);
  if (p->n_string_table == NFIXED + 20000)
    PP_CHECK_STR(p->string_table[NFIXED + 19999], "t19999");
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(text);
  pp_builder_free(b);
}

/* pp_builder_strings (a merge's batched interning) gives every string the
 * index one pp_builder_string call after another gives it: new ones,
 * repeats inside one batch of the prefetch window and across batches, NULL
 * as "", through table growths; and the builders pack the same bytes. */
static void test_builder_strings_batched_as_one_by_one(void) {
  enum { N = 5003 }; /* not a multiple of the window: a short last batch */
  pp_builder *batched = pp_builder_new(), *single = pp_builder_new();
  const char **strs = calloc(N, sizeof *strs);
  char(*store)[24] = calloc(N, sizeof *store);
  int64_t *got = calloc(N, sizeof *got);
  PP_CHECK(batched && single && strs && store && got);
  if (!batched || !single || !strs || !store || !got)
    return;
  PP_CHECK_INT(pp_builder_string(batched, "pre"), ==, pp_builder_string(single, "pre"));
  for (int i = 0; i < N; i++) {
    if (i % 97 == 5) {
      strs[i] = NULL;
      continue;
    }
    /* i % 7 == 3: the string of i - 3 again (same window or the one before) */
    int v = i % 7 == 3 ? i - 3 : i;
    snprintf(store[i], sizeof store[i], v % 11 == 0 ? "pre" : "s%d", v);
    strs[i] = store[i];
  }
  for (int round = 0; round < 2; round++) { /* the second round finds them all */
    PP_CHECK_INT(pp_builder_strings(batched, strs, N, got), ==, 0);
    for (int i = 0; i < N; i++)
      PP_CHECK_INT(got[i], ==, pp_builder_string(single, strs[i]));
  }
  PP_CHECK_INT(pp_builder_strings(batched, strs, 0, got), ==, 0);
  PP_CHECK_INT(pp_builder_string_count(batched), ==, pp_builder_string_count(single));
  uint8_t *x = NULL, *y = NULL;
  size_t xl = 0, yl = 0;
  PP_CHECK_INT(pp_builder_pack(batched, &x, &xl), ==, 0);
  PP_CHECK_INT(pp_builder_pack(single, &y, &yl), ==, 0);
  PP_CHECK(x && y && xl == yl && memcmp(x, y, xl) == 0);
  free(x);
  free(y);
  free(strs);
  free(store);
  free(got);
  pp_builder_free(batched);
  pp_builder_free(single);
}

/* A merge readies each sample before it adds the one before
 * (pp_builder_sample_prep/commit): the same samples added in that overlap,
 * the same one readied twice in a row included, come out as added one at a
 * time: repeats summed in place, labels sorted, the same packed bytes. */
static void test_sample_prep_commit_as_one_at_a_time(void) {
  pp_builder *piped = typed_builder(), *single = typed_builder();
  if (!piped || !single)
    return;
  pp_builder *bs[2] = {piped, single};
  uint64_t loc[2][3];
  int64_t key[2], a[2], c[2];
  for (int k = 0; k < 2; k++) {
    uint64_t fn = pp_builder_function(bs[k], "f", "f", "f.c", 1);
    int64_t line = 3;
    for (int i = 0; i < 3; i++)
      loc[k][i] = pp_builder_location(bs[k], 0, 0x100 + (uint64_t)i, &fn, &line, 1);
    key[k] = pp_builder_string(bs[k], "route");
    a[k] = pp_builder_string(bs[k], "/a");
    c[k] = pp_builder_string(bs[k], "/c");
  }
  enum { N = 40 };
  int64_t vals[N][2];
  pp_sample_prep prep[2] = {{0}};
  int cur = 0;
  bool pending = false;
  for (int i = 0; i < N; i++) {
    /* stacks and labels repeat, twice in a row too (i / 2), in two orders */
    int which = (i / 2) % 3;
    vals[i][0] = 1;
    vals[i][1] = 10 + i;
    for (int k = 0; k < 2; k++) {
      uint8_t enc[16], *q = enc;
      for (int j = 0; j <= which; j++)
        q = pp_put_varint(q, loc[k][j]);
      pp_ilabel labels[2] = {{key[k], i % 4 < 2 ? a[k] : c[k], 0, 0}, {key[k], a[k], 0, 0}};
      pp_ilabel swapped[2] = {labels[1], labels[0]};
      const pp_ilabel *l = i % 5 == 0 ? swapped : labels;
      if (k == 1) {
        pp_sample_prep now = {0}; /* readied and added at once */
        PP_CHECK_INT(pp_builder_sample_prep(single, &now, enc, (size_t)(q - enc), vals[i], 2, l, 2),
                     ==, 0);
        PP_CHECK_INT(pp_builder_sample_commit(single, &now), ==, 0);
        pp_sample_prep_free(&now);
        continue;
      }
      PP_CHECK_INT(
          pp_builder_sample_prep(piped, &prep[cur], enc, (size_t)(q - enc), vals[i], 2, l, 2), ==,
          0);
      if (pending)
        PP_CHECK_INT(pp_builder_sample_commit(piped, &prep[cur ^ 1]), ==, 0);
      pending = true;
      cur ^= 1;
    }
  }
  PP_CHECK_INT(pp_builder_sample_commit(piped, &prep[cur ^ 1]), ==, 0);
  PP_CHECK_INT(pp_builder_sample_count(piped), ==, pp_builder_sample_count(single));
  PP_CHECK(pp_builder_sample_count(piped) < N); /* repeats were summed */
  uint8_t *x = NULL, *y = NULL;
  size_t xl = 0, yl = 0;
  PP_CHECK_INT(pp_builder_pack(piped, &x, &xl), ==, 0);
  PP_CHECK_INT(pp_builder_pack(single, &y, &yl), ==, 0);
  PP_CHECK(x && y && xl == yl && memcmp(x, y, xl) == 0);
  /* A prep that fails (a label string out of range) adds nothing. */
  pp_ilabel bad = {key[0], 1 << 20, 0, 0};
  size_t before = pp_builder_sample_count(piped);
  PP_CHECK_INT(pp_builder_sample_prep(piped, &prep[0], NULL, 0, vals[0], 2, &bad, 1), ==, -1);
  PP_CHECK_INT(pp_builder_sample_count(piped), ==, before);
  free(x);
  free(y);
  pp_sample_prep_free(&prep[0]);
  pp_sample_prep_free(&prep[1]);
  pp_builder_free(piped);
  pp_builder_free(single);
}

static void test_builder_dedups_with_dense_ids(void) {
  pp_builder *b = typed_builder();
  uint64_t m1 = pp_builder_mapping(b, 1, 2, 0, "/a", "id", true);
  uint64_t m2 = pp_builder_mapping(b, 3, 4, 0, "/b", "", false);
  PP_CHECK_INT(m1, ==, 1);
  PP_CHECK_INT(m2, ==, 2);
  PP_CHECK_INT(pp_builder_mapping(b, 1, 2, 0, "/a", "id", true), ==, m1);
  uint64_t f1 = pp_builder_function(b, "f", "f", "f.c", 1);
  uint64_t f2 = pp_builder_function(b, "g", "g", "f.c", 1);
  PP_CHECK_INT(f1, ==, 1);
  PP_CHECK_INT(f2, ==, 2);
  PP_CHECK_INT(pp_builder_function(b, "f", "f", "f.c", 1), ==, f1);
  PP_CHECK_INT(pp_builder_function(b, "f", "f", "f.c", 2), ==, 3); /* start_line differs */
  uint64_t fs[] = {f1, f2};
  int64_t lines[] = {10, 20};
  uint64_t l1 = pp_builder_location(b, m1, 0x10, fs, lines, 2);
  PP_CHECK_INT(l1, ==, 1);
  PP_CHECK_INT(pp_builder_location(b, m1, 0x10, fs, lines, 2), ==, l1);
  PP_CHECK_INT(pp_builder_location(b, m1, 0x10, fs, lines, 1), ==, 2); /* fewer lines */
  PP_CHECK_INT(pp_builder_location(b, m2, 0x10, fs, lines, 2), ==, 3); /* other mapping */
  PP_CHECK_INT(pp_builder_location(b, 0, 0x20, NULL, NULL, 0), ==, 4);
  PP_CHECK_INT(pp_builder_location(b, 9, 0x20, NULL, NULL, 0), ==, 0); /* no mapping 9 */
  uint64_t bad_fn = 99;
  PP_CHECK_INT(pp_builder_location(b, 0, 0x20, &bad_fn, NULL, 1), ==, 0);
  bad_fn = 0; /* pprof has no "line without a function" */
  PP_CHECK_INT(pp_builder_location(b, 0, 0x20, &bad_fn, NULL, 1), ==, 0);

  uint64_t st[] = {1, 4};
  pp_label ab[] = {{"a", "1", 0, NULL}, {"b", NULL, 2, "bytes"}};
  pp_label ba[] = {{"b", NULL, 2, "bytes"}, {"a", "1", 0, NULL}};
  pp_label other[] = {{"a", "2", 0, NULL}};
  PP_CHECK_INT(pp_builder_sample(b, st, 2, (int64_t[]){1, 100}, 2, ab, 2), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, st, 2, (int64_t[]){2, 200}, 2, ba, 2), ==, 0);
  PP_CHECK_INT(pp_builder_sample_count(b), ==, 1);
  PP_CHECK_INT(pp_builder_sample(b, st, 2, (int64_t[]){4, 400}, 2, other, 1), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, st, 1, (int64_t[]){8, 800}, 2, ab, 2), ==, 0);
  PP_CHECK_INT(pp_builder_sample_count(b), ==, 3);
  PP_CHECK_INT(pp_builder_sample(b, st, 2, (int64_t[]){1}, 1, NULL, 0), ==, -1); /* nvalues */
  uint64_t missing = 77;
  PP_CHECK_INT(pp_builder_sample(b, &missing, 1, (int64_t[]){1, 1}, 2, NULL, 0), ==, -1);
  PP_CHECK_INT(pp_builder_sample_count(b), ==, 3);

  Perftools__Profiles__Profile *p = pack_unpack(b);
  char why[256] = "";
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  PP_CHECK_INT(p->n_mapping, ==, 2);
  PP_CHECK_INT(p->n_function, ==, 3);
  PP_CHECK_INT(p->n_location, ==, 4);
  PP_CHECK_INT(p->n_sample, ==, 3);
  for (size_t i = 0; i < p->n_mapping; i++)
    PP_CHECK_INT(p->mapping[i]->id, ==, i + 1);
  for (size_t i = 0; i < p->n_function; i++)
    PP_CHECK_INT(p->function[i]->id, ==, i + 1);
  for (size_t i = 0; i < p->n_location; i++)
    PP_CHECK_INT(p->location[i]->id, ==, i + 1);
  PP_CHECK_INT(p->sample[0]->value[0], ==, 3);
  PP_CHECK_INT(p->sample[0]->value[1], ==, 300);
  PP_CHECK_INT(p->sample[0]->n_label, ==, 2);
  PP_CHECK_INT(p->sample[1]->value[0], ==, 4);
  PP_CHECK_INT(p->sample[2]->value[0], ==, 8);
  PP_CHECK_INT(p->sample[2]->n_location_id, ==, 1);
  perftools__profiles__profile__free_unpacked(p, NULL);
  pp_builder_free(b);
}

static void test_pack_unpack_round_trip(void) {
  Perftools__Profiles__Profile *p = profile_a();
  char why[256] = "";
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  PP_CHECK_STR(p->string_table[0], "");
  PP_CHECK_INT(p->n_sample_type, ==, 2);
  PP_CHECK_STR(str(p, p->sample_type[0]->type), "samples");
  PP_CHECK_STR(str(p, p->sample_type[0]->unit), "count");
  PP_CHECK_STR(str(p, p->sample_type[1]->type), "cpu");
  PP_CHECK_STR(str(p, p->sample_type[1]->unit), "nanoseconds");
  PP_CHECK(p->period_type != NULL);
  if (p->period_type)
    PP_CHECK_STR(str(p, p->period_type->unit), "nanoseconds");
  PP_CHECK_INT(p->period, ==, 10000000);
  PP_CHECK_INT(p->time_nanos, ==, 1000);
  PP_CHECK_INT(p->duration_nanos, ==, 500);
  PP_CHECK_INT(p->n_comment, ==, 1);
  if (p->n_comment)
    PP_CHECK_STR(str(p, p->comment[0]), "from a");
  PP_CHECK_INT(p->n_mapping, ==, 1);
  PP_CHECK_STR(str(p, p->mapping[0]->filename), "/bin/app");
  PP_CHECK_STR(str(p, p->mapping[0]->build_id), "abc");
  PP_CHECK(p->mapping[0]->has_functions);
  PP_CHECK_INT(p->mapping[0]->memory_start, ==, 0x400000);
  PP_CHECK_INT(p->mapping[0]->memory_limit, ==, 0x500000);
  PP_CHECK_INT(p->n_function, ==, 3);
  PP_CHECK_STR(str(p, p->function[2]->system_name), "_Z4leafv");
  PP_CHECK_INT(p->function[2]->start_line, ==, 20);
  PP_CHECK_INT(p->location[2]->address, ==, 0x403000);
  PP_CHECK_INT(p->n_sample, ==, 2);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 0), ==, 4);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 1), ==, 40);
  PP_CHECK_INT(value_of(p, "work;main", 1), ==, 20);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* ---- the direct encoder (pp_builder_pack.c) against protobuf-c's (pp_pack_ref.c) ---- */

static uint64_t rnd(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dULL;
}

static bool edge_widest; /* edge_u64 returns only 10-byte varints */

/* Mostly values at varint size boundaries (1, 2, 3, 9 and 10 bytes, the
 * extremes, negatives), sometimes any 64 bits. */
static uint64_t edge_u64(uint64_t *s) {
  if (edge_widest)
    return rnd(s) | 1ULL << 63;
  static const uint64_t edges[] = {0,
                                   1,
                                   127,
                                   128,
                                   16383,
                                   16384,
                                   (1ULL << 21) - 1,
                                   1ULL << 21,
                                   (1ULL << 56) - 1,
                                   1ULL << 56,
                                   (1ULL << 63) - 1,
                                   1ULL << 63,
                                   UINT64_MAX,
                                   UINT64_MAX - 127,
                                   (uint64_t)-300};
  uint64_t r = rnd(s);
  return r % 4 == 0 ? rnd(s) : edges[(r >> 8) % (sizeof edges / sizeof *edges)];
}

static int64_t edge_i64(uint64_t *s) {
  return (int64_t)edge_u64(s);
}

/* Packs b with both encoders; the bytes must be identical and decode. */
static void check_pack_matches_ref(pp_builder *b, const char *what) {
  uint8_t *got = NULL, *want = NULL;
  size_t glen = 0, wlen = 0;
  PP_CHECK_INT(pp_builder_pack(b, &got, &glen), ==, 0);
  PP_CHECK_INT(pp_builder_pack_pbc(b, &want, &wlen), ==, 0);
  if (!got || !want || glen != wlen || memcmp(got, want, glen) != 0) {
    size_t at = 0;
    while (got && want && at < glen && at < wlen && got[at] == want[at])
      at++;
    fprintf(stderr, "  %s: %zu bytes, protobuf-c %zu; first difference at byte %zu\n", what, glen,
            wlen, at);
    pp_test_failures++;
  }
  Perftools__Profiles__Profile *p =
      got ? perftools__profiles__profile__unpack(NULL, glen, got) : NULL;
  PP_CHECK(p != NULL);
  if (p)
    PP_CHECK_INT(p->n_string_table, ==, pp_builder_string_count(b));
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(got);
  free(want);
}

/* A random builder through the index-level API, so that every field can
 * take any value (the string-level API only makes well-formed strings). */
static pp_builder *random_builder(uint64_t *s, size_t scale) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  if (!b)
    return NULL;
  size_t nstr = 1 + rnd(s) % (4 * scale + 2);
  char text[400];
  for (size_t i = 0; i < nstr; i++) {
    size_t n = (size_t)snprintf(text, sizeof text, "s%zu-", i);
    size_t pad = rnd(s) % 8 == 0 ? 130 + rnd(s) % 200 : rnd(s) % 12;
    for (size_t k = 0; k < pad && n + 1 < sizeof text; k++)
      text[n++] = (char)('a' + k % 26);
    text[n] = '\0';
    PP_CHECK(pp_builder_string(b, text) >= 0);
  }
  int64_t ns = (int64_t)pp_builder_string_count(b);
#define RS() ((int64_t)(rnd(s) % (uint64_t)ns))
  size_t nst = rnd(s) % 4;
  for (size_t i = 0; i < nst; i++)
    PP_CHECK_INT(pp_builder_add_sample_type_ix(b, RS(), RS()), ==, 0);
  if (rnd(s) % 2)
    pp_builder_set_period_ix(b, rnd(s) % 4 ? RS() : 0, rnd(s) % 4 ? RS() : 0, edge_i64(s));
  pp_builder_set_time(b, edge_i64(s), edge_i64(s));
  for (size_t i = rnd(s) % 4; i > 0; i--)
    PP_CHECK_INT(pp_builder_add_comment_ix(b, RS()), ==, 0);
  if (rnd(s) % 2)
    pp_builder_set_extras_ix(b, RS(), RS(), RS(), RS());
  uint64_t nmap = 0, nfn = 0, nloc = 0;
  for (size_t i = rnd(s) % (scale + 1); i > 0; i--) {
    uint64_t id = pp_builder_mapping_ix(b, edge_u64(s), edge_u64(s), edge_u64(s), RS(), RS(),
                                        (unsigned)(rnd(s) % 16));
    PP_CHECK(id > 0);
    nmap = id > nmap ? id : nmap;
  }
  for (size_t i = rnd(s) % (2 * scale + 1); i > 0; i--) {
    uint64_t id = pp_builder_function_ix(b, RS(), RS(), RS(), edge_i64(s));
    PP_CHECK(id > 0);
    nfn = id > nfn ? id : nfn;
  }
  uint64_t fids[5];
  int64_t lines[5];
  for (size_t i = rnd(s) % (2 * scale + 1); i > 0; i--) {
    size_t nl = nfn ? rnd(s) % 5 : 0;
    for (size_t k = 0; k < nl; k++) {
      fids[k] = 1 + rnd(s) % nfn;
      lines[k] = edge_i64(s);
    }
    uint64_t id = pp_builder_location(b, rnd(s) % (nmap + 1), edge_u64(s), fids, lines, nl);
    PP_CHECK(id > 0);
    nloc = id > nloc ? id : nloc;
  }
  uint64_t stack[64];
  int64_t values[3];
  pp_ilabel labels[4];
  for (size_t i = nst ? rnd(s) % (3 * scale + 1) : 0; i > 0; i--) {
    size_t depth = nloc ? rnd(s) % 64 : 0, nlab = rnd(s) % 5;
    for (size_t k = 0; k < depth; k++)
      stack[k] = 1 + rnd(s) % nloc;
    for (size_t k = 0; k < nst; k++)
      values[k] = edge_i64(s);
    for (size_t k = 0; k < nlab; k++) {
      bool num = rnd(s) % 2;
      labels[k] =
          (pp_ilabel){RS(), num ? 0 : RS(), num ? edge_i64(s) : 0, num && rnd(s) % 2 ? RS() : 0};
    }
    PP_CHECK_INT(pp_builder_sample_ix(b, stack, depth, values, nst, labels, nlab), ==, 0);
  }
#undef RS
  return b;
}

static void test_pack_matches_protobuf_c_on_random_profiles(void) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  char what[64];
  for (int i = 0; i < 400; i++) {
    pp_builder *b = random_builder(&seed, i % 50 == 0 ? 200 : (size_t)i % 12);
    snprintf(what, sizeof what, "random profile %d", i);
    if (b)
      check_pack_matches_ref(b, what);
    pp_builder_free(b);
  }
}

/* Every number at its widest: pp_builder_pack.c's buffer bound must hold (ASan and
 * the encoder's assert would see an overrun). */
static void test_pack_matches_protobuf_c_on_widest_values(void) {
  uint64_t seed = 0x2545f4914f6cdd1dULL;
  char what[64];
  edge_widest = true;
  for (int i = 0; i < 100; i++) {
    pp_builder *b = random_builder(&seed, i % 25 == 0 ? 150 : (size_t)i % 10);
    snprintf(what, sizeof what, "widest profile %d", i);
    if (b)
      check_pack_matches_ref(b, what);
    pp_builder_free(b);
  }
  edge_widest = false;
}

static void test_pack_matches_protobuf_c_on_empty_profiles(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  check_pack_matches_ref(b, "new builder");
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
  PP_CHECK(p != NULL);
  if (p) { /* just string_table[0] = "" */
    PP_CHECK_INT(p->n_string_table, ==, 1);
    PP_CHECK_STR(p->string_table[0], "");
    PP_CHECK_INT(p->n_sample + p->n_sample_type + p->n_mapping + p->n_location + p->n_function, ==,
                 0);
    PP_CHECK(p->period_type == NULL);
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(buf);
  /* A period type of zeros is still there (an empty message). */
  pp_builder_set_period_ix(b, 0, 0, 0);
  check_pack_matches_ref(b, "zero period type");
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  p = perftools__profiles__profile__unpack(NULL, len, buf);
  PP_CHECK(p != NULL && p->period_type != NULL);
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(buf);
  pp_builder_free(b);
}

#define EDGE_N 17000   /* ids and string indices past 16383: 3-byte varints */
#define EDGE_DEEP 6000 /* frames of one sample: its packed ids pass 16383 bytes */
#define EDGE_LONG 20000

/* A profile at the edges of the wire format that go tool pprof accepts:
 * ids and string indices of 1, 2 and 3 bytes, int64s below 0 (10 bytes),
 * a sample and a string longer than 16383 bytes, numeric labels, every
 * mapping flag, comments, drop/keep_frames, default_sample_type, doc_url. */
static pp_builder *edge_builder(void) {
  pp_builder *b = typed_builder();
  static char long_comment[EDGE_LONG + 1];
  memset(long_comment, 'x', EDGE_LONG);
  pp_builder_set_time(b, -1000, INT64_MAX);
  uint64_t m1 =
      pp_builder_mapping(b, 0x400000, 0xffffffffffff0000ULL, 1ULL << 63, "/bin/edge", "b1d", true);
  uint64_t m2 =
      pp_builder_mapping_ix(b, 0, UINT64_MAX, 0, pp_builder_string(b, "/lib/all.so"), 0,
                            PP_MAPPING_HAS_FUNCTIONS | PP_MAPPING_HAS_FILENAMES |
                                PP_MAPPING_HAS_LINE_NUMBERS | PP_MAPPING_HAS_INLINE_FRAMES);
  static uint64_t loc[EDGE_N + 1];
  char name[32];
  for (int i = 1; i <= EDGE_N; i++) {
    snprintf(name, sizeof name, "f%05d", i);
    uint64_t f = pp_builder_function(b, name, name, "edge.c", i % 2 ? INT64_MIN : i);
    int64_t line = i % 3 ? -i : i;
    loc[i] = pp_builder_location(
        b, i % 2 ? m1 : m2, i == EDGE_N ? UINT64_MAX : 0x400000 + 16 * (uint64_t)i, &f, &line, 1);
  }
  static uint64_t deep[EDGE_DEEP];
  for (int i = 0; i < EDGE_DEEP; i++)
    deep[i] = loc[EDGE_N - i];
  pp_label route = {"route", "/edge", 0, NULL}, neg = {"bytes", NULL, -4096, "bytes"};
  uint64_t s1[] = {loc[1], loc[128], loc[16384], loc[EDGE_N]};
  PP_CHECK_INT(pp_builder_sample(b, s1, 4, (int64_t[]){INT64_MIN, -1}, 2, &route, 1), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, deep, EDGE_DEEP, (int64_t[]){INT64_MAX, 128}, 2, &neg, 1), ==,
               0);
  PP_CHECK_INT(pp_builder_sample(b, NULL, 0, (int64_t[]){-300, 16384}, 2, NULL, 0), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(b, "pushprof edge"), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(b, long_comment), ==, 0);
  pp_builder_set_extras_ix(b, pp_builder_string(b, "^nomatch_drop$"),
                           pp_builder_string(b, "^nomatch_keep$"), pp_builder_string(b, "cpu"),
                           pp_builder_string(b, "https://example.com/edge"));
  return b;
}

static void test_pack_matches_protobuf_c_on_edge_values(void) {
  pp_builder *b = edge_builder();
  check_pack_matches_ref(b, "edge profile");
  /* And the decoded content, independently of the reference. */
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
  char why[256] = "";
  PP_CHECK(p != NULL);
  if (p && p->n_sample == 3 && p->n_mapping == 2 && p->n_location == EDGE_N) {
    PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
    PP_CHECK_INT(p->sample[0]->n_location_id, ==, 4);
    PP_CHECK_INT(p->sample[0]->location_id[3], ==, EDGE_N);
    PP_CHECK(p->sample[0]->value[0] == INT64_MIN && p->sample[0]->value[1] == -1);
    PP_CHECK_INT(p->sample[1]->n_location_id, ==, EDGE_DEEP);
    PP_CHECK(p->sample[1]->value[0] == INT64_MAX);
    PP_CHECK_INT(p->sample[1]->n_label, ==, 1);
    PP_CHECK_INT(p->sample[1]->label[0]->num, ==, -4096);
    PP_CHECK_STR(str(p, p->sample[1]->label[0]->num_unit), "bytes");
    PP_CHECK_INT(p->sample[2]->n_location_id, ==, 0);
    PP_CHECK_INT(p->sample[2]->value[0], ==, -300);
    PP_CHECK(p->mapping[0]->file_offset == 1ULL << 63);
    PP_CHECK(p->mapping[0]->has_functions && !p->mapping[0]->has_inline_frames);
    PP_CHECK(p->mapping[1]->memory_limit == UINT64_MAX);
    PP_CHECK(p->mapping[1]->has_functions && p->mapping[1]->has_filenames &&
             p->mapping[1]->has_line_numbers && p->mapping[1]->has_inline_frames);
    PP_CHECK(p->location[EDGE_N - 1]->address == UINT64_MAX);
    PP_CHECK_INT(p->location[EDGE_N - 1]->line[0]->line, ==, -EDGE_N); /* 17000 % 3 != 0 */
    PP_CHECK(p->function[0]->start_line == INT64_MIN);
    PP_CHECK_STR(str(p, p->function[EDGE_N - 1]->name), "f17000");
    PP_CHECK(p->time_nanos == -1000 && p->duration_nanos == INT64_MAX);
    PP_CHECK_INT(p->n_comment, ==, 2);
    PP_CHECK_INT(strlen(str(p, p->comment[1])), ==, EDGE_LONG);
    PP_CHECK_STR(str(p, p->drop_frames), "^nomatch_drop$");
    PP_CHECK_STR(str(p, p->keep_frames), "^nomatch_keep$");
    PP_CHECK_STR(str(p, p->default_sample_type), "cpu");
    PP_CHECK_STR(str(p, p->doc_url), "https://example.com/edge");
  } else {
    fprintf(stderr, "  edge profile: %zu samples, %zu mappings, %zu locations\n",
            p ? p->n_sample : 0, p ? p->n_mapping : 0, p ? p->n_location : 0);
    pp_test_failures++;
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(buf);
  pp_builder_free(b);
}

/* The packs of merged profiles (what the sidecar ships) as well. */
static void test_pack_matches_protobuf_c_on_merges(void) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  pp_builder *m = pp_builder_new();
  char why[256] = "";
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, 0);
  check_pack_matches_ref(m, "merge of a");
  PP_CHECK_INT(pp_merge_add(m, bp, why, sizeof why), ==, 0);
  check_pack_matches_ref(m, "merge of a and b");
  pp_builder *piece = pp_builder_new();
  PP_CHECK_INT(pp_merge_add_samples(piece, bp, 1, 2, why, sizeof why), ==, 0);
  check_pack_matches_ref(piece, "sample 1 of b");
  pp_builder_free(piece);
  pp_builder_free(m);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
}

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

/* A reset keeps the builder's full-size chunks as spares and fills them
 * again: the same content costs no more memory the second time (without
 * the reuse it would cost the spares plus as many new chunks), and is
 * accounted as a new builder's. Dropping the spares gives back their
 * bytes, and the builder still works. */
static void test_reset_reuses_chunks(void) {
  enum { NSTR = 8000 };
  pp_builder *b = pp_builder_new(), *fresh = pp_builder_new();
  PP_CHECK(b != NULL && fresh != NULL);
  if (!b || !fresh)
    return;
  char text[128];
  size_t before = 0, after = 0;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < NSTR; i++) {
      snprintf(text, sizeof text, "%06d-%s", i,
               "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
      PP_CHECK(pp_builder_string(b, text) >= 0);
      if (round == 0)
        PP_CHECK(pp_builder_string(fresh, text) >= 0);
    }
    PP_CHECK_INT(pp_builder_string_count(b), ==, NSTR + 1);
    if (round == 0)
      before = pp_builder_mem(b);
    else
      after = pp_builder_mem(b);
    if (round == 1) {
      PP_CHECK(after < before + ((size_t)128 << 10));
      /* and its content is accounted as a new builder's */
      PP_CHECK_INT(pp_builder_mem_content(b), ==, pp_builder_mem(fresh));
    }
    if (round == 2) { /* refilled after dropping the spares: as a new one */
      uint8_t *x = NULL, *y = NULL;
      size_t xl = 0, yl = 0;
      PP_CHECK_INT(pp_builder_pack(b, &x, &xl), ==, 0);
      PP_CHECK_INT(pp_builder_pack(fresh, &y, &yl), ==, 0);
      PP_CHECK(xl == yl && x && y && memcmp(x, y, xl) == 0);
      free(x);
      free(y);
    }
    PP_CHECK_INT(pp_builder_reset(b), ==, 0);
    if (round == 1) {
      size_t kept = pp_builder_mem(b);
      pp_builder_drop_spares(b);
      size_t dropped = pp_builder_mem(b);
      /* ~520 KB of strings: seven 64 KiB chunks, the rest in the small first ones */
      PP_CHECK(dropped + ((size_t)384 << 10) < kept);
    }
  }
  pp_builder_free(b);
  pp_builder_free(fresh);
}

/* A builder reset and filled again packs the very bytes a new builder
 * packs for the same adds, through several resets, and its content costs
 * what a new one's memory does (pp_builder_mem_content mirrors the growth
 * rules: equal to pp_builder_mem for a builder never reset). */
static void test_reset_builder_packs_as_a_new_one(void) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  char why[256] = "";
  pp_builder *reused = pp_builder_new();
  for (int round = 0; round < 4 && reused; round++) {
    pp_builder *fresh = pp_builder_new();
    const Perftools__Profiles__Profile *first = round % 2 ? bp : a, *second = round % 2 ? a : bp;
    for (int k = 0; k <= round; k++) { /* the same profiles again: samples sum */
      PP_CHECK_INT(pp_merge_add(reused, first, why, sizeof why), ==, 0);
      PP_CHECK_INT(pp_merge_add(fresh, first, why, sizeof why), ==, 0);
    }
    if (round != 1) {
      PP_CHECK_INT(pp_merge_add(reused, second, why, sizeof why), ==, 0);
      PP_CHECK_INT(pp_merge_add(fresh, second, why, sizeof why), ==, 0);
    }
    uint8_t *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    PP_CHECK_INT(pp_builder_pack(reused, &x, &xl), ==, 0);
    PP_CHECK_INT(pp_builder_pack(fresh, &y, &yl), ==, 0);
    PP_CHECK(x && y && xl == yl && memcmp(x, y, xl) == 0);
    PP_CHECK_INT(pp_builder_mem_content(fresh), ==, pp_builder_mem(fresh));
    PP_CHECK_INT(pp_builder_mem_content(reused), ==, pp_builder_mem(fresh));
    check_pack_matches_ref(reused, "merges into a reset builder");
    free(x);
    free(y);
    pp_builder_free(fresh);
    size_t kept = pp_builder_mem(reused);
    PP_CHECK_INT(pp_builder_reset(reused), ==, 0);
    PP_CHECK_INT(pp_builder_sample_count(reused), ==, 0);
    PP_CHECK_INT(pp_builder_string_count(reused), ==, 1); /* "" only */
    PP_CHECK(pp_builder_mem(reused) + 4096 >= kept);      /* tables kept (chunks freed) */
    pp_builder *empty = pp_builder_new();
    size_t c = pp_builder_mem_content(reused), e = pp_builder_mem(empty);
    PP_CHECK(c >= e && c - e < 4096); /* the scratch space it kept, no more */
    pp_builder_free(empty);
  }
  pp_builder_free(reused);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
}

/* ---- validation: each rule rejects its bad case ---- */

static void expect_invalid(const Perftools__Profiles__Profile *p, const char *want) {
  char why[256] = "";
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, -1);
  if (!strstr(why, want)) {
    fprintf(stderr, "  reason \"%s\" does not contain \"%s\"\n", why, want);
    pp_test_failures++;
  }
}

static void test_validate_accepts_valid(void) {
  Perftools__Profiles__Profile *p = profile_b();
  char why[256] = "";
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  if (why[0])
    fprintf(stderr, "  unexpected reason: %s\n", why);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_string_table(void) {
  Perftools__Profiles__Profile *p = profile_a();
  size_t n = p->n_string_table;
  p->n_string_table = 0;
  expect_invalid(p, "string_table[0]");
  p->n_string_table = n;
  char *first = p->string_table[0];
  p->string_table[0] = (char *)"x";
  expect_invalid(p, "string_table[0] must be the empty string");
  p->string_table[0] = first;
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_string_indices(void) {
  Perftools__Profiles__Profile *p = profile_a();
  int64_t n = (int64_t)p->n_string_table, keep;
  keep = p->function[1]->name;
  p->function[1]->name = n;
  expect_invalid(p, "function 1: string index");
  p->function[1]->name = keep;
  keep = p->mapping[0]->build_id;
  p->mapping[0]->build_id = -1;
  expect_invalid(p, "mapping 0: string index -1");
  p->mapping[0]->build_id = keep;
  keep = p->sample_type[1]->unit;
  p->sample_type[1]->unit = n + 5;
  expect_invalid(p, "sample_type 1");
  p->sample_type[1]->unit = keep;
  keep = p->comment[0];
  p->comment[0] = n;
  expect_invalid(p, "comment 0");
  p->comment[0] = keep;
  p->drop_frames = n;
  expect_invalid(p, "drop_frames");
  p->drop_frames = 0;
  p->period_type->type = n;
  expect_invalid(p, "period_type");
  p->period_type->type = 0;
  char why[256];
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_ids_nonzero_and_unique(void) {
  Perftools__Profiles__Profile *p = profile_b();
  p->mapping[1]->id = 0;
  expect_invalid(p, "mapping has id 0");
  p->mapping[1]->id = 1;
  expect_invalid(p, "mapping id 1 is used twice");
  p->mapping[1]->id = 2;
  p->function[3]->id = 0;
  expect_invalid(p, "function has id 0");
  p->function[3]->id = 2;
  expect_invalid(p, "function id 2 is used twice");
  p->function[3]->id = 4;
  p->location[0]->id = 0;
  expect_invalid(p, "location has id 0");
  p->location[0]->id = 3;
  expect_invalid(p, "location id 3 is used twice");
  p->location[0]->id = 1;
  char why[256];
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_value_count(void) {
  Perftools__Profiles__Profile *p = profile_a();
  p->sample[1]->n_value = 1;
  expect_invalid(p, "sample 1 has 1 values, want 2 (one per sample_type)");
  p->sample[1]->n_value = 2;
  p->n_sample_type = 0; /* samples without any sample type */
  expect_invalid(p, "profile has 2 samples but no sample_type");
  p->n_sample_type = 2;
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_references(void) {
  Perftools__Profiles__Profile *p = profile_b();
  uint64_t keep = p->location[0]->mapping_id;
  p->location[0]->mapping_id = 42;
  expect_invalid(p, "location 1 refers to mapping 42, which is missing");
  p->location[0]->mapping_id = keep;
  keep = p->location[1]->line[0]->function_id;
  p->location[1]->line[0]->function_id = 43;
  expect_invalid(p, "location 2 line 0 refers to function 43, which is missing");
  p->location[1]->line[0]->function_id = keep;
  p->location[1]->line[0]->function_id = 0;
  expect_invalid(p, "location 2 line 0 has no function");
  p->location[1]->line[0]->function_id = keep;
  keep = p->sample[1]->location_id[1];
  p->sample[1]->location_id[1] = 44;
  expect_invalid(p, "sample 1 refers to location 44, which is missing");
  p->sample[1]->location_id[1] = 0;
  expect_invalid(p, "sample 1 refers to location 0");
  p->sample[1]->location_id[1] = keep;
  char why[256];
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_labels(void) {
  Perftools__Profiles__Profile *p = profile_b();
  Perftools__Profiles__Label *l = p->sample[1]->label[0];
  int64_t key = l->key, s = l->str;
  l->key = 0;
  expect_invalid(p, "sample 1 label 0 has no key");
  l->key = key;
  /* A key that is another "" entry of the table is just as empty (fuzz find:
   * merging mapped it to index 0 and failed its own validation). */
  char *saved = p->string_table[key];
  p->string_table[key] = (char *)""; /* sample 0 uses the same key */
  expect_invalid(p, "label 0 has no key");
  p->string_table[key] = saved;
  l->num = 5;
  expect_invalid(p, "has both a string and a number");
  l->num = 0;
  l->str = (int64_t)p->n_string_table;
  expect_invalid(p, "string index");
  l->str = s;
  char why[256];
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_validate_sparse_ids(void) {
  /* Ids need not be dense to be valid: renumber to 10, 20, ... */
  Perftools__Profiles__Profile *p = profile_b();
  for (size_t i = 0; i < p->n_location; i++)
    p->location[i]->id *= 10;
  for (size_t i = 0; i < p->n_sample; i++)
    for (size_t j = 0; j < p->sample[i]->n_location_id; j++)
      p->sample[i]->location_id[j] *= 10;
  char why[256] = "";
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  p->sample[0]->location_id[0] = 15;
  expect_invalid(p, "refers to location 15");
  p->sample[0]->location_id[0] = 20;

  /* And merging it gives the same totals as the dense one. */
  pp_builder *b = pp_builder_new();
  PP_CHECK_INT(pp_merge_add(b, p, why, sizeof why), ==, 0);
  Perftools__Profiles__Profile *m = pack_unpack(b);
  PP_CHECK_INT(value_of(m, "leaf;work;main|route=/a", 0), ==, 5);
  PP_CHECK_INT(value_of(m, "other;main|bytes=123bytes,route=/b", 1), ==, 70);
  PP_CHECK_INT(m->location[0]->id, ==, 1);
  perftools__profiles__profile__free_unpacked(m, NULL);
  pp_builder_free(b);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* ---- parse and gzip ---- */

/* Both compressors (zlib for the SDK, igzip for the sidecar) against
 * the one bounded decompressor, zlib's. */
typedef int (*gzip_fn)(const uint8_t *, size_t, uint8_t **, size_t *);

static void check_gzip_round_trip_and_limit(gzip_fn gzip) {
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

static void test_gzip_round_trip_and_limit(void) {
  check_gzip_round_trip_and_limit(pp_gzip);
  check_gzip_round_trip_and_limit(pp_gzip_fast);
  /* igzip's level 1 still compresses a profile-like input well. */
  size_t n = 100000;
  uint8_t *in = malloc(n), *a = NULL, *b = NULL;
  size_t alen = 0, blen = 0;
  for (size_t i = 0; i < n; i++)
    in[i] = (uint8_t)("main;parse;lex;next_token "[i % 26] + (i / 2600) % 3);
  PP_CHECK_INT(pp_gzip(in, n, &a, &alen), ==, 0);
  PP_CHECK_INT(pp_gzip_fast(in, n, &b, &blen), ==, 0);
  PP_CHECK(blen < n / 20 && blen <= alen + alen / 10);
  /* Into a reused buffer: the same bytes, in the same buffer while it is
   * big enough, grown for a bigger input, and each result reads back. Every
   * buffer is PP_GZIP_ALIGN-aligned (the file exporter's O_DIRECT wants it). */
  PP_CHECK((uintptr_t)b % PP_GZIP_ALIGN == 0);
  uint8_t *r = NULL, *back = NULL;
  size_t rcap = 0, rlen = 0, backlen = 0;
  PP_CHECK_INT(pp_gzip_fast_into(in, n, &r, &rcap, &rlen), ==, 0);
  PP_CHECK(rlen == blen && r && memcmp(r, b, blen) == 0);
  PP_CHECK((uintptr_t)r % PP_GZIP_ALIGN == 0);
  uint8_t *first = r;
  size_t cap1 = rcap;
  PP_CHECK_INT(pp_gzip_fast_into(in, n / 2, &r, &rcap, &rlen), ==, 0);
  PP_CHECK(r == first && rcap == cap1);
  PP_CHECK_INT(pp_gunzip(r, rlen, n, &back, &backlen), ==, 0);
  PP_CHECK(backlen == n / 2 && back && memcmp(back, in, n / 2) == 0);
  free(back);
  uint8_t *big = malloc(2 * n);
  for (size_t i = 0; big && i < 2 * n; i++)
    big[i] = in[i % n];
  PP_CHECK_INT(pp_gzip_fast_into(big, 2 * n, &r, &rcap, &rlen), ==, 0);
  PP_CHECK(rcap > cap1 && (uintptr_t)r % PP_GZIP_ALIGN == 0);
  back = NULL;
  PP_CHECK_INT(pp_gunzip(r, rlen, 2 * n, &back, &backlen), ==, 0);
  PP_CHECK(backlen == 2 * n && back && big && memcmp(back, big, 2 * n) == 0);
  free(back);
  free(big);
  free(r);
  free(a);
  free(b);
  free(in);
}

static void test_parse_plain_gzip_and_garbage(void) {
  pp_builder *b = typed_builder();
  uint64_t f = pp_builder_function(b, "f", "", "", 0);
  uint64_t l = pp_builder_location(b, 0, 0x10, &f, NULL, 1);
  PP_CHECK_INT(pp_builder_sample(b, &l, 1, (int64_t[]){1, 2}, 2, NULL, 0), ==, 0);
  uint8_t *raw = NULL, *gz = NULL;
  size_t rawlen = 0, gzlen = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, &rawlen), ==, 0);
  PP_CHECK_INT(pp_gzip(raw, rawlen, &gz, &gzlen), ==, 0);
  char why[256] = "";
  Perftools__Profiles__Profile *p = pp_ref_parse(raw, rawlen, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_INT(p->n_sample, ==, 1);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  p = pp_ref_parse(gz, gzlen, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p)
    perftools__profiles__profile__free_unpacked(p, NULL);
  p = pp_ref_parse(gz, gzlen, rawlen - 1, why, sizeof why); /* limit applies to the inflated size */
  PP_CHECK(p == NULL);
  PP_CHECK(strstr(why, "limit") != NULL);
  p = pp_ref_parse(raw, rawlen, rawlen - 1, why, sizeof why);
  PP_CHECK(p == NULL);
  const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
  p = pp_ref_parse(junk, sizeof junk, 1 << 20, why, sizeof why);
  PP_CHECK(p == NULL);
  PP_CHECK(strstr(why, "decod") != NULL);
  const uint8_t empty_gz[] = {0x1f, 0x8b};
  p = pp_ref_parse(empty_gz, sizeof empty_gz, 1 << 20, why, sizeof why);
  PP_CHECK(p == NULL);
  /* An empty message decodes but has no string_table[0]. */
  p = pp_ref_parse((const uint8_t *)"", 0, 1 << 20, why, sizeof why);
  PP_CHECK(p == NULL);
  PP_CHECK(strstr(why, "string_table[0]") != NULL);
  free(raw);
  free(gz);
  pp_builder_free(b);
}

static void test_parse_survives_corruption_and_merge_accepts_what_it_accepts(void) {
  /* Random byte flips, truncations and inserts of a valid profile: parse never
   * crashes (ASan build), and whatever it accepts merges and re-packs into a
   * profile that validates. */
  Perftools__Profiles__Profile *b0 = profile_b();
  pp_builder *b = pp_builder_new();
  char why[256];
  PP_CHECK_INT(pp_merge_add(b, b0, why, sizeof why), ==, 0);
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, &rawlen), ==, 0);
  pp_builder_free(b);
  perftools__profiles__profile__free_unpacked(b0, NULL);
  uint8_t *buf = malloc(rawlen + 8);
  unsigned seed = 12345;
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, raw, rawlen);
    size_t len = rawlen;
    int flips = 1 + rand_r(&seed) % 4;
    for (int k = 0; k < flips; k++)
      buf[rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
    if (rand_r(&seed) % 4 == 0)
      len = (size_t)rand_r(&seed) % len;
    Perftools__Profiles__Profile *p = pp_ref_parse(buf, len, 1 << 20, why, sizeof why);
    if (!p) {
      PP_CHECK(why[0] != '\0');
      rejected++;
      continue;
    }
    accepted++;
    pp_builder *m = pp_builder_new();
    int rc = pp_merge_add(m, p, why, sizeof why);
    PP_CHECK_INT(rc, ==, 0);
    if (rc != 0)
      fprintf(stderr, "  merge refused a validated profile: %s\n", why);
    uint8_t *out = NULL;
    size_t outlen = 0;
    PP_CHECK_INT(pp_builder_pack(m, &out, &outlen), ==, 0);
    Perftools__Profiles__Profile *q = pp_ref_parse(out, outlen, 1 << 20, why, sizeof why);
    PP_CHECK(q != NULL);
    if (!q)
      fprintf(stderr, "  merged profile invalid: %s\n", why);
    else
      perftools__profiles__profile__free_unpacked(q, NULL);
    free(out);
    pp_builder_free(m);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  fprintf(stderr, "  %d corrupted profiles accepted, %d rejected\n", accepted, rejected);
  PP_CHECK(accepted > 0 && rejected > 0);
  free(buf);
  free(raw);
}

/* ---- merge ---- */

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

/* The edge profile, uncompressed, for it_proto_pprof_raw.sh. */
static int write_edge(const char *path) {
  pp_builder *b = edge_builder();
  uint8_t *raw = NULL;
  size_t len = 0;
  int rc = 1;
  if (pp_builder_pack(b, &raw, &len) != 0) {
    fprintf(stderr, "pack failed\n");
    goto out;
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(raw, 1, len, f) != len || fclose(f) != 0) {
    perror(path);
    goto out;
  }
  rc = 0;
out:
  free(raw);
  pp_builder_free(b);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-merged") == 0)
    return write_merged(argv[2]);
  if (argc == 3 && strcmp(argv[1], "--write-edge") == 0)
    return write_edge(argv[2]);
  PP_RUN(test_builder_interns_strings_with_empty_first);
  PP_RUN(test_builder_strings_across_chunks_and_prefixes);
  PP_RUN(test_builder_dedups_with_dense_ids);
  PP_RUN(test_pack_unpack_round_trip);
  PP_RUN(test_pack_matches_protobuf_c_on_random_profiles);
  PP_RUN(test_merge_remaps_ids_of_every_width);
  PP_RUN(test_reset_reuses_chunks);
  PP_RUN(test_pack_matches_protobuf_c_on_widest_values);
  PP_RUN(test_pack_matches_protobuf_c_on_empty_profiles);
  PP_RUN(test_pack_matches_protobuf_c_on_edge_values);
  PP_RUN(test_pack_matches_protobuf_c_on_merges);
  PP_RUN(test_reset_builder_packs_as_a_new_one);
  PP_RUN(test_builder_strings_batched_as_one_by_one);
  PP_RUN(test_sample_prep_commit_as_one_at_a_time);
  PP_RUN(test_validate_accepts_valid);
  PP_RUN(test_validate_string_table);
  PP_RUN(test_validate_string_indices);
  PP_RUN(test_validate_ids_nonzero_and_unique);
  PP_RUN(test_validate_value_count);
  PP_RUN(test_validate_references);
  PP_RUN(test_validate_labels);
  PP_RUN(test_validate_sparse_ids);
  PP_RUN(test_gzip_round_trip_and_limit);
  PP_RUN(test_parse_plain_gzip_and_garbage);
  PP_RUN(test_parse_survives_corruption_and_merge_accepts_what_it_accepts);
  PP_RUN(test_merge_sums_values_and_keeps_labels);
  PP_RUN(test_merge_columns_add_up_to_a_whole_merge);
  PP_RUN(test_merge_clamps_extreme_times);
  PP_RUN(test_merge_rejects_mismatched_types_and_period);
  PP_RUN(test_merge_many_is_linear);
  PP_RUN(test_merge_distinct_labels_across_growth);
  PP_DONE();
}
