/* The views library: call tree, top (recursion counted once), folded and
 * difffolded output, filters, names cleaned and escaped, times parsed, and
 * the differential SVG's signed changes on profiles with known splits. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_builder.h"
#include "pp_parse_ref.h"
#include "pp_test.h"
#include "view_folded.h"
#include "view_input.h"
#include "view_model.h"
#include "view_svg.h"

/* A profile from "COUNT frame;frame;...[|KEY=VALUE]" lines (root first). */
static Perftools__Profiles__Profile *make(const char *const *lines, size_t n) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  PP_CHECK_INT(pp_builder_add_sample_type(b, "samples", "count"), ==, 0);
  PP_CHECK_INT(pp_builder_add_sample_type(b, "cpu", "nanoseconds"), ==, 0);
  uint64_t map = pp_builder_mapping(b, 0x1000, 0x9000, 0, "/bin/app", "", true);
  for (size_t i = 0; i < n; i++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", lines[i]);
    char *bar = strchr(buf, '|');
    pp_label l = {0};
    if (bar) {
      *bar = 0;
      char *eq = strchr(bar + 1, '=');
      *eq = 0;
      l = (pp_label){bar + 1, eq + 1, 0, NULL};
    }
    int64_t count = strtoll(buf, NULL, 10);
    char *stack = strchr(buf, ' ') + 1;
    char *frames[32];
    size_t nf = 0;
    for (char *f = strtok(stack, ";"); f; f = strtok(NULL, ";"))
      frames[nf++] = f;
    uint64_t locs[32];
    for (size_t j = 0; j < nf; j++) {
      uint64_t fn = pp_builder_function(b, frames[nf - 1 - j], NULL, "", 0);
      locs[j] = pp_builder_location(b, map, 0x1000 + 16 * fn, &fn, NULL, 1);
    }
    int64_t v[2] = {count, count * 10};
    PP_CHECK_INT(pp_builder_sample(b, locs, nf, v, 2, bar ? &l : NULL, bar ? 1 : 0), ==, 0);
  }
  uint8_t *raw = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, &len), ==, 0);
  pp_builder_free(b);
  char why[256] = "";
  Perftools__Profiles__Profile *p = pp_ref_parse(raw, len, 1 << 20, why, sizeof why);
  if (!p)
    fprintf(stderr, "parse: %s\n", why);
  free(raw);
  return p;
}

/* Runs fn(f, ...) into a string. */
static char *folded(const view_tree *base, const view_tree *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  PP_CHECK(f != NULL);
  PP_CHECK_INT(base ? view_folded_diff_write(f, base, t) : view_folded_write(f, t), ==, 0);
  fclose(f);
  return buf;
}

static void test_views_top_counts_recursion_once(void) {
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
  char *s = folded(NULL, t);
  PP_CHECK_STR(s, "main;a 2\nmain;a;b;a 3\nmain;c 5\n");
  free(s);
  view_tree_free(t);
  view_names_free(names);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_views_filters_label_focus_ignore(void) {
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

static void test_views_pick_value(void) {
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
 * type (alloc_objects); bytes read in powers of 1024, counts by what they
 * count. */
static void test_views_heap_default_type_and_units(void) {
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
  char buf[64];
  view_format_value(1572864, "inuse_space", "bytes", buf, sizeof buf);
  PP_CHECK_STR(buf, "1.50 MiB");
  view_format_value(2048, "alloc_space", "bytes", buf, sizeof buf);
  PP_CHECK_STR(buf, "2.00 KiB");
  view_format_value(512, "inuse_space", "bytes", buf, sizeof buf);
  PP_CHECK_STR(buf, "512 B");
  view_format_value(1234, "inuse_objects", "count", buf, sizeof buf);
  PP_CHECK_STR(buf, "1,234 objects");
  view_format_value(1, "samples", "count", buf, sizeof buf);
  PP_CHECK_STR(buf, "1 sample");
  view_format_value(2, "samples", "count", buf, sizeof buf);
  PP_CHECK_STR(buf, "2 samples");
}

/* BASE splits a 50/50 between b and c; NEW 80/20, and twice as many samples:
 * b +30.0 pt, c -30.0 pt, a unchanged; d only in NEW (+10.0 pt). */
static void test_views_diff_known_splits(void) {
  const char *base_lines[] = {"50 main;a;b", "50 main;a;c"};
  const char *new_lines[] = {"144 main;a;b", "36 main;a;c", "20 main;d"};
  Perftools__Profiles__Profile *pb = make(base_lines, 2), *pn = make(new_lines, 3);
  view_names *names = view_names_new();
  char why[256];
  view_tree *tb = view_tree_build(pb, 0, NULL, names, why, sizeof why);
  view_tree *tn = view_tree_build(pn, 0, NULL, names, why, sizeof why);
  PP_CHECK(tb && tn);
  char *s = folded(tb, tn);
  PP_CHECK_STR(s, "main;a;b 50 144\nmain;a;c 50 36\nmain;d 0 20\n");
  free(s);
  char *svg = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&svg, &len);
  view_svg_opts o = {"diff", NULL, tb, false, false};
  PP_CHECK_INT(view_svg_write(f, tn, &o), ==, 0);
  fclose(f);
  /* shares of NEW (200 samples): a 90% (was 100%), b 72% (was 50%), c 18% (was 50%) */
  PP_CHECK(strstr(svg, "<title>b (144 samples, 72.00%; +22.0 pt)</title>") != NULL);
  PP_CHECK(strstr(svg, "<title>c (36 samples, 18.00%; -32.0 pt)</title>") != NULL);
  PP_CHECK(strstr(svg, "<title>a (180 samples, 90.00%; -10.0 pt)</title>") != NULL);
  PP_CHECK(strstr(svg, "<title>d (20 samples, 10.00%; +10.0 pt)</title>") != NULL);
  PP_CHECK(strstr(svg, "<title>all (200 samples, 100.00%; +0.0 pt)</title>") != NULL);
  /* c shrank most: pure blue; b grew: red */
  char *c = strstr(svg, "<title>c (");
  PP_CHECK(c && strstr(c, "fill=\"rgb(0,0,255)\"") == strstr(c, "fill="));
  char *bb = strstr(svg, "<title>b (");
  PP_CHECK(bb && strncmp(strstr(bb, "fill="), "fill=\"rgb(255,", 14) == 0);
  free(svg);
  view_tree_free(tb);
  view_tree_free(tn);
  view_names_free(names);
  perftools__profiles__profile__free_unpacked(pb, NULL);
  perftools__profiles__profile__free_unpacked(pn, NULL);
}

static void test_views_names_cleaned_and_escaped(void) {
  char out[64];
  view_clean_name("a;b\x01", 4, out, 32);
  PP_CHECK_STR(out, "a:b\xef\xbf\xbd");
  view_clean_name("\xc3\x28x", 3, out, 32); /* invalid UTF-8 */
  PP_CHECK_STR(out, "\xef\xbf\xbd(x");
  view_clean_name("\xed\xa0\x80", 3, out, 32); /* a UTF-16 surrogate */
  PP_CHECK_STR(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  view_clean_name("h\xc3\xa9llo world", 12, out, 3);
  PP_CHECK_STR(out, "h\xc3\xa9...");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  PP_CHECK_INT(view_xml_escape(f, "<a href=\"x\">&'", 14), ==, 0);
  fclose(f);
  PP_CHECK_STR(buf, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  free(buf);
}

static void test_views_parse_time(void) {
  int64_t t = 0, now = 1700000000LL * 1000000000;
  PP_CHECK_INT(view_parse_time("2023-11-14T22:13:20Z", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now);
  PP_CHECK_INT(view_parse_time("2023-11-14T23:13:20.5+01:00", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now + 500000000);
  PP_CHECK_INT(view_parse_time("@1700000000", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now);
  PP_CHECK_INT(view_parse_time("2h", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now - 7200LL * 1000000000);
  PP_CHECK_INT(view_parse_time("2023-11-14", now, &t), ==, 0);
  PP_CHECK_INT(view_parse_time("2023-11-14T10:00:00", now, &t), ==, -1); /* no zone */
  PP_CHECK_INT(view_parse_time("yesterday", now, &t), ==, -1);
  PP_CHECK_INT(view_parse_time("5x", now, &t), ==, -1);
}

/* The root on top by default (a deep graph opens on its widest frames),
 * at the bottom with inverted (the classic look); the script is told which
 * (data-root), so a zoom shows a frame's ancestors on the right side. */
static int frame_y(const char *svg, const char *title) {
  const char *p = strstr(svg, title);
  const char *y = p ? strstr(p, " y=\"") : NULL;
  return y ? atoi(y + 4) : -1;
}

static void test_views_svg_draws_the_root_on_top_unless_inverted(void) {
  const char *lines[] = {"3 main;a;b", "1 main;c"};
  Perftools__Profiles__Profile *p = make(lines, 2);
  view_names *names = view_names_new();
  char why[256];
  view_tree *t = p && names ? view_tree_build(p, 0, NULL, names, why, sizeof why) : NULL;
  PP_CHECK(t != NULL);
  if (!t) {
    view_names_free(names);
    return;
  }
  for (int inverted = 0; inverted < 2; inverted++) {
    char *svg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&svg, &len);
    view_svg_opts o = {"t", NULL, NULL, false, inverted};
    PP_CHECK_INT(view_svg_write(f, t, &o), ==, 0);
    fclose(f);
    int root = frame_y(svg, "<title>all ("), main_ = frame_y(svg, "<title>main ("),
        leaf = frame_y(svg, "<title>b (");
    PP_CHECK(root > 0 && main_ > 0 && leaf > 0);
    if (inverted) {
      PP_CHECK(root > main_ && main_ > leaf);
      PP_CHECK(strstr(svg, "data-root=\"bottom\"") != NULL);
    } else {
      PP_CHECK(root < main_ && main_ < leaf);
      PP_CHECK(strstr(svg, "data-root=\"top\"") != NULL);
    }
    free(svg);
  }
  view_tree_free(t);
  view_names_free(names);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

int main(void) {
  PP_RUN(test_views_svg_draws_the_root_on_top_unless_inverted);
  PP_RUN(test_views_top_counts_recursion_once);
  PP_RUN(test_views_filters_label_focus_ignore);
  PP_RUN(test_views_pick_value);
  PP_RUN(test_views_heap_default_type_and_units);
  PP_RUN(test_views_diff_known_splits);
  PP_RUN(test_views_names_cleaned_and_escaped);
  PP_RUN(test_views_parse_time);
  PP_DONE();
}
