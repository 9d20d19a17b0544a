/* Profiles for the views' tests (test_view_*.c), from lines
 * "COUNT frame;frame;...[|KEY=VALUE]" (root first), with the sample types
 * samples/count and cpu/nanoseconds (cpu is ten times the count). Static
 * inline so that their checks count in the including test's tally. */
#ifndef VIEW_FIXTURE_H
#define VIEW_FIXTURE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_builder.h"
#include "pp_parse_ref.h"
#include "pp_test.h"
#include "view_model.h"

/* The lines packed as a pprof; *len its size. NULL on failure (checked). */
static inline uint8_t *pack_lines(const char *const *lines, size_t n, size_t *len) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  if (!b)
    return NULL;
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
  *len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, len), ==, 0);
  pp_builder_free(b);
  return raw;
}

/* The lines as a profile read back with protobuf-c; free with
 * perftools__profiles__profile__free_unpacked. */
static inline Perftools__Profiles__Profile *make(const char *const *lines, size_t n) {
  size_t len = 0;
  uint8_t *raw = pack_lines(lines, n, &len);
  char why[256] = "";
  Perftools__Profiles__Profile *p = raw ? pp_ref_parse(raw, len, 1 << 20, why, sizeof why) : NULL;
  if (!p)
    fprintf(stderr, "parse: %s\n", why);
  PP_CHECK(p != NULL);
  free(raw);
  return p;
}

/* BASE and NEW of the diff views' checks, their trees (samples) sharing one
 * name table. BASE splits a 50/50 between b and c; NEW 80/20 with twice
 * the samples, and d only in NEW. */
typedef struct known_splits {
  Perftools__Profiles__Profile *pb, *pn;
  view_names *names;
  view_tree *base, *new_;
} known_splits;

static inline void known_splits_make(known_splits *k) {
  const char *base_lines[] = {"50 main;a;b", "50 main;a;c"};
  const char *new_lines[] = {"144 main;a;b", "36 main;a;c", "20 main;d"};
  char why[256];
  k->pb = make(base_lines, 2);
  k->pn = make(new_lines, 3);
  k->names = view_names_new();
  k->base = k->pb && k->names ? view_tree_build(k->pb, 0, NULL, k->names, why, sizeof why) : NULL;
  k->new_ = k->pn && k->names ? view_tree_build(k->pn, 0, NULL, k->names, why, sizeof why) : NULL;
  PP_CHECK(k->base && k->new_);
}

static inline void known_splits_free(known_splits *k) {
  view_tree_free(k->base);
  view_tree_free(k->new_);
  view_names_free(k->names);
  perftools__profiles__profile__free_unpacked(k->pb, NULL);
  perftools__profiles__profile__free_unpacked(k->pn, NULL);
}
#endif
