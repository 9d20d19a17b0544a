/* proto/pprof/pp_builder.c: string interning across chunks and in batches,
 * dense deduplicated ids, samples prepared and committed in two steps, and
 * the chunks a reset keeps for reuse. */
#include "pp_builder_int.h"
#include "pp_builder.h"
#include "pp_parse_ref.h"
#include "pp_validate.h"
#include "pp_varint.h"
#include "pprof_fixture.h"

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
  PP_CHECK(pp_ref_ids_dense(p));
  PP_CHECK_INT(p->sample[0]->value[0], ==, 3);
  PP_CHECK_INT(p->sample[0]->value[1], ==, 300);
  PP_CHECK_INT(p->sample[0]->n_label, ==, 2);
  PP_CHECK_INT(p->sample[1]->value[0], ==, 4);
  PP_CHECK_INT(p->sample[2]->value[0], ==, 8);
  PP_CHECK_INT(p->sample[2]->n_location_id, ==, 1);
  perftools__profiles__profile__free_unpacked(p, NULL);
  pp_builder_free(b);
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

int main(void) {
  PP_RUN(test_builder_interns_strings_with_empty_first);
  PP_RUN(test_builder_strings_across_chunks_and_prefixes);
  PP_RUN(test_builder_dedups_with_dense_ids);
  PP_RUN(test_reset_reuses_chunks);
  PP_RUN(test_builder_strings_batched_as_one_by_one);
  PP_RUN(test_sample_prep_commit_as_one_at_a_time);
  PP_DONE();
}
