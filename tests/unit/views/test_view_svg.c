/* views/view_svg.c: flame graphs drawn root on top unless inverted, the
 * differential graph's signed changes and colours on profiles with known
 * splits, values in their units, and XML escaping. */
#include "view_fixture.h"
#include "view_model.h"
#include "view_svg.h"

/* The y of the first frame whose text follows title; -1 if none. */
static int frame_y(const char *svg, const char *title) {
  const char *p = strstr(svg, title);
  const char *y = p ? strstr(p, " y=\"") : NULL;
  return y ? atoi(y + 4) : -1;
}

/* The root on top by default (a deep graph opens on its widest frames),
 * at the bottom with inverted (the classic look); the script is told which
 * (data-root), so a zoom shows a frame's ancestors on the right side. */
static void test_svg_draws_the_root_on_top_unless_inverted(void) {
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
    view_svg_opts o = {"t", NULL, NULL, false, inverted, false};
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

/* The known splits: each frame titled with its share of NEW and the change
 * in points, coloured by the sign of the change. */
static void test_svg_diff_known_splits(void) {
  known_splits k;
  known_splits_make(&k);
  if (!k.base || !k.new_) {
    known_splits_free(&k);
    return;
  }
  char *svg = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&svg, &len);
  view_svg_opts o = {"diff", NULL, k.base, false, false, false};
  PP_CHECK_INT(view_svg_write(f, k.new_, &o), ==, 0);
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
  known_splits_free(&k);
}

/* Bytes read in powers of 1024, counts by what they count. */
/* The fill of the frame whose <title> is title, in rgb; false if none. */
static bool frame_fill(const char *svg, const char *title, int rgb[3]) {
  const char *p = strstr(svg, title);
  const char *fill = p ? strstr(p, "fill=\"rgb(") : NULL;
  return fill && sscanf(fill, "fill=\"rgb(%d,%d,%d)", &rgb[0], &rgb[1], &rgb[2]) == 3;
}

/* A wall-time graph titles each frame with its wall, on-CPU and off-CPU
 * time and colours it by its off-CPU share: warm, blue, magenta between. */
static void test_svg_wall_colours_by_off_cpu_share(void) {
  known_wall k;
  known_wall_make(&k, 10000000, NULL); /* 10 ms a count */
  if (!k.t) {
    PP_CHECK(k.t != NULL);
    known_wall_free(&k);
    return;
  }
  char *svg = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&svg, &len);
  view_svg_opts o = {"wall", NULL, NULL, false, false, true};
  PP_CHECK_INT(view_svg_write(f, k.t, &o), ==, 0);
  fclose(f);
  static const char *const titles[] = {
      "<title>work (wall 30.00 ms, on-CPU 30.00 ms, off-CPU 0, 30.00%)</title>",
      "<title>sleep (wall 10.00 ms, on-CPU 0, off-CPU 10.00 ms, 10.00%)</title>",
      "<title>wait (wall 60.00 ms, on-CPU 20.00 ms, off-CPU 40.00 ms, 60.00%)</title>",
      "<title>main (wall 100.00 ms, on-CPU 50.00 ms, off-CPU 50.00 ms, 100.00%)</title>"};
  int rgb[4][3];
  for (int i = 0; i < 4; i++) {
    bool found = frame_fill(svg, titles[i], rgb[i]);
    if (!found)
      fprintf(stderr, "no frame %s\n", titles[i]);
    PP_CHECK(found);
  }
  PP_CHECK(rgb[0][0] > 200 && rgb[0][0] > rgb[0][2] + 100); /* work: on-CPU only, warm */
  PP_CHECK(rgb[1][2] > 200 && rgb[1][2] > rgb[1][0] + 100); /* sleep: off-CPU only, blue */
  PP_CHECK(rgb[2][2] > rgb[2][0]);                          /* wait: two thirds off, bluer */
  PP_CHECK(rgb[3][0] > rgb[3][1] + 80 && rgb[3][2] > rgb[3][1] + 80); /* main: half, magenta */
  PP_CHECK(strstr(svg, ">on-CPU</text>") && strstr(svg, ">off-CPU</text>"));
  PP_CHECK(strstr(svg, "share of off-CPU time") != NULL);
  free(svg);
  known_wall_free(&k);
}

static void test_svg_formats_values_in_their_units(void) {
  static const struct {
    int64_t v;
    const char *type, *unit, *want;
  } cases[] = {
      {1572864, "inuse_space", "bytes", "1.50 MiB"},
      {2048, "alloc_space", "bytes", "2.00 KiB"},
      {512, "inuse_space", "bytes", "512 B"},
      {1234, "inuse_objects", "count", "1,234 objects"},
      {1, "samples", "count", "1 sample"},
      {2, "samples", "count", "2 samples"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[64];
    view_format_value(cases[i].v, cases[i].type, cases[i].unit, buf, sizeof buf);
    PP_CHECK_STR(buf, cases[i].want);
  }
}

static void test_svg_escapes_xml(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  PP_CHECK_INT(view_xml_escape(f, "<a href=\"x\">&'", 14), ==, 0);
  fclose(f);
  PP_CHECK_STR(buf, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  free(buf);
}

int main(void) {
  PP_RUN(test_svg_draws_the_root_on_top_unless_inverted);
  PP_RUN(test_svg_diff_known_splits);
  PP_RUN(test_svg_wall_colours_by_off_cpu_share);
  PP_RUN(test_svg_formats_values_in_their_units);
  PP_RUN(test_svg_escapes_xml);
  PP_DONE();
}
