/* views/view_model.c: the call tree and top (recursion counted once in
 * cum), label, focus and ignore filters, which value a view shows, and
 * frame names cleaned of separators, control bytes and invalid UTF-8. */
#include <regex.h>

#include "pp_builder.h"
#include "view_fixture.h"
#include "view_model.h"

static void test_model_top_counts_recursion_once(void) {
  const char *lines[] = {"3 main;a;b;a", "2 main;a", "5 main;c"};
  Perftools__Profiles__Profile *p = make(lines, 3);
  view_names *names = view_names_new();
  char why[256];
  view_tree *t = view_tree_build(p, 0, NULL, names, why, sizeof why);
  PP_CHECK(t != NULL);
  PP_CHECK_INT(view_tree_total(t), ==, 10);
  view_top_row *rows = NULL;
  size_t n = 0;
  PP_CHECK_INT(view_tree_top(t, false, &rows, &n), ==, 0);
  PP_CHECK_INT(n, ==, 4);
  /* flat: c 5, a 5 (3 + 2), then b 0 / main 0 sorted by cum */
  PP_CHECK_STR(view_names_at(names, rows[0].name), "a");
  PP_CHECK_INT(rows[0].flat, ==, 5);
  PP_CHECK_INT(rows[0].cum, ==, 5); /* not 8: the recursion counts once */
  PP_CHECK_STR(view_names_at(names, rows[1].name), "c");
  PP_CHECK_STR(view_names_at(names, rows[2].name), "main");
  PP_CHECK_INT(rows[2].cum, ==, 10);
  PP_CHECK_STR(view_names_at(names, rows[3].name), "b");
  PP_CHECK_INT(rows[3].cum, ==, 3);
  free(rows);
  view_tree_free(t);
  view_names_free(names);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_model_filters_label_focus_ignore(void) {
  const char *lines[] = {"3 main;a|route=/x", "2 main;b|route=/y", "5 main;c;d|route=/x"};
  Perftools__Profiles__Profile *p = make(lines, 3);
  view_names *names = view_names_new();
  char why[256] = "";
  const char *want[] = {"route=/x"};
  view_filter f = {want, 1, NULL, NULL};
  view_tree *t = view_tree_build(p, 1, &f, names, why, sizeof why);
  PP_CHECK(t != NULL);
  PP_CHECK_INT(view_tree_total(t), ==, 80); /* cpu: (3 + 5) * 10 */
  view_tree_free(t);
  regex_t re;
  PP_CHECK_INT(regcomp(&re, "^d$", REG_EXTENDED | REG_NOSUB), ==, 0);
  view_filter fi = {NULL, 0, NULL, &re};
  t = view_tree_build(p, 0, &fi, names, why, sizeof why);
  PP_CHECK_INT(view_tree_total(t), ==, 5);
  view_tree_free(t);
  view_filter ff = {NULL, 0, &re, NULL};
  t = view_tree_build(p, 0, &ff, names, why, sizeof why);
  PP_CHECK_INT(view_tree_total(t), ==, 5);
  view_tree_free(t);
  regfree(&re);
  const char *unknown[] = {"trace_id=1"};
  view_filter fu = {unknown, 1, NULL, NULL};
  PP_CHECK(view_tree_build(p, 0, &fu, names, why, sizeof why) == NULL);
  PP_CHECK(strstr(why, "no sample has a label \"trace_id\"") != NULL);
  const char *novalue[] = {"route=/z"};
  view_filter fn = {novalue, 1, NULL, NULL};
  PP_CHECK(view_tree_build(p, 0, &fn, names, why, sizeof why) == NULL);
  PP_CHECK(strstr(why, "route=/z") != NULL);
  view_names_free(names);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_model_pick_value(void) {
  const char *lines[] = {"1 main"};
  Perftools__Profiles__Profile *p = make(lines, 1);
  char why[256];
  PP_CHECK_INT(view_pick_value(p, NULL, true, why, sizeof why), ==, 0);
  PP_CHECK_INT(view_pick_value(p, NULL, false, why, sizeof why), ==, 1); /* pprof: the last */
  PP_CHECK_INT(view_pick_value(p, "cpu", true, why, sizeof why), ==, 1);
  PP_CHECK_INT(view_pick_value(p, "alloc", true, why, sizeof why), ==, -1);
  PP_CHECK(strstr(why, "samples, cpu") != NULL);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Go's heap layout with default_sample_type inuse_space: every view shows
 * inuse_space unless told otherwise (pprof's rule), not the first count
 * type (alloc_objects). */
static void test_model_heap_default_type(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  if (!b)
    return;
  static const char *const types[4][2] = {{"alloc_objects", "count"},
                                          {"alloc_space", "bytes"},
                                          {"inuse_objects", "count"},
                                          {"inuse_space", "bytes"}};
  for (int i = 0; i < 4; i++)
    PP_CHECK_INT(pp_builder_add_sample_type(b, types[i][0], types[i][1]), ==, 0);
  PP_CHECK_INT(pp_builder_set_period(b, "space", "bytes", 524288), ==, 0);
  PP_CHECK_INT(pp_builder_set_default_sample_type(b, "inuse_space"), ==, 0);
  uint64_t fn = pp_builder_function(b, "grow", NULL, "", 0);
  uint64_t loc = pp_builder_location(b, 0, 0x1000, &fn, NULL, 1);
  PP_CHECK_INT(pp_builder_sample(b, &loc, 1, (int64_t[]){3, 3 << 20, 1, 1572864}, 4, NULL, 0), ==,
               0);
  uint8_t *raw = NULL;
  size_t len = 0;
  char why[256] = "";
  PP_CHECK_INT(pp_builder_pack(b, &raw, &len), ==, 0);
  pp_builder_free(b);
  Perftools__Profiles__Profile *p = raw ? pp_ref_parse(raw, len, 1 << 20, why, sizeof why) : NULL;
  free(raw);
  PP_CHECK(p != NULL);
  if (!p)
    return;
  PP_CHECK_INT(view_pick_value(p, NULL, true, why, sizeof why), ==, 3);  /* folded, flame, diff */
  PP_CHECK_INT(view_pick_value(p, NULL, false, why, sizeof why), ==, 3); /* top */
  PP_CHECK_INT(view_pick_value(p, "alloc_objects", true, why, sizeof why), ==, 0);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* The row of name in rows, or NULL. */
static const view_top_row *row_of(const view_top_row *rows, size_t n, const view_names *names,
                                  const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(view_names_at(names, rows[i].name), name) == 0)
      return &rows[i];
  return NULL;
}

static void test_model_wall_keeps_off_cpu_part_per_function(void) {
  known_wall k;
  known_wall_make(&k, 10, NULL);
  if (!k.t) {
    fprintf(stderr, "known_wall: %s\n", k.why);
    PP_CHECK(k.t != NULL);
    known_wall_free(&k);
    return;
  }
  PP_CHECK_INT(view_tree_total(k.t), ==, 100);
  PP_CHECK_STR(view_tree_value_type(k.t), "wall");
  size_t count = 0;
  PP_CHECK_INT(view_tree_nodes(k.t, &count)[0].off_cpu, ==, 50);
  view_top_row *rows = NULL;
  size_t n = 0;
  PP_CHECK_INT(view_tree_top(k.t, false, &rows, &n), ==, 0);
  PP_CHECK_INT(n, ==, 4);
  /* sorted by wall (flat): wait 60, work 30, sleep 10, main 0 */
  static const char *const order[] = {"wait", "work", "sleep", "main"};
  static const int64_t flat[] = {60, 30, 10, 0}, flat_off[] = {40, 0, 10, 0};
  static const int64_t cum[] = {60, 30, 10, 100}, cum_off[] = {40, 0, 10, 50};
  for (size_t i = 0; i < n && i < 4; i++) {
    const view_top_row *r = row_of(rows, n, k.names, order[i]);
    PP_CHECK(r == &rows[i]);
    if (!r)
      continue;
    PP_CHECK_INT(r->flat, ==, flat[i]);
    PP_CHECK_INT(r->flat_off, ==, flat_off[i]);
    PP_CHECK_INT(r->cum, ==, cum[i]);
    PP_CHECK_INT(r->cum_off, ==, cum_off[i]);
  }
  free(rows);
  known_wall_free(&k);
}

static void test_model_wall_label_needs_one_profile_to_have_it(void) {
  /* route=x is only on a CPU sample: the off-CPU profile does not fail it */
  const char *want[] = {"route=x"};
  view_filter f = {want, 1, NULL, NULL};
  known_wall k;
  known_wall_make(&k, 10, &f);
  PP_CHECK(k.t != NULL);
  if (k.t) {
    PP_CHECK_INT(view_tree_total(k.t), ==, 20);
    size_t count = 0;
    PP_CHECK_INT(view_tree_nodes(k.t, &count)[0].off_cpu, ==, 0);
  }
  known_wall_free(&k);
  const char *nobody[] = {"route=y"};
  view_filter g = {nobody, 1, NULL, NULL};
  known_wall_make(&k, 10, &g);
  PP_CHECK(k.t == NULL);
  PP_CHECK(strstr(k.why, "no sample has the label route=y") != NULL);
  known_wall_free(&k);
}

static void test_model_names_cleaned(void) {
  char out[64];
  view_clean_name("a;b\x01", 4, out, 32);
  PP_CHECK_STR(out, "a:b\xef\xbf\xbd");
  view_clean_name("\xc3\x28x", 3, out, 32); /* invalid UTF-8 */
  PP_CHECK_STR(out, "\xef\xbf\xbd(x");
  view_clean_name("\xed\xa0\x80", 3, out, 32); /* a UTF-16 surrogate */
  PP_CHECK_STR(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  view_clean_name("h\xc3\xa9llo world", 12, out, 3);
  PP_CHECK_STR(out, "h\xc3\xa9...");
}

int main(void) {
  PP_RUN(test_model_top_counts_recursion_once);
  PP_RUN(test_model_filters_label_focus_ignore);
  PP_RUN(test_model_pick_value);
  PP_RUN(test_model_heap_default_type);
  PP_RUN(test_model_names_cleaned);
  PP_RUN(test_model_wall_keeps_off_cpu_part_per_function);
  PP_RUN(test_model_wall_label_needs_one_profile_to_have_it);
  PP_DONE();
}
