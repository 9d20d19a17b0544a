/* Test-only readers of a profile as pp_ref_parse (protobuf-c) returns it,
 * for the SDK tests that check what a profiler cut: strings by index,
 * labels, whether a sample's stack holds a function, sums of a value
 * column. */
#ifndef PROFILE_TEST_UTIL_H
#define PROFILE_TEST_UTIL_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pp_parse_ref.h"
#include "pp_test.h"

typedef Perftools__Profiles__Profile Profile;

/* String i of p's table; "?" for an index out of range. */
static inline const char *pt_str(const Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "?";
}

/* The string value of sm's label key; NULL if it has none. */
static inline const char *pt_label(const Profile *p, const Perftools__Profiles__Sample *sm,
                                   const char *key) {
  for (size_t i = 0; i < sm->n_label; i++)
    if (strcmp(pt_str(p, sm->label[i]->key), key) == 0)
      return pt_str(p, sm->label[i]->str);
  return NULL;
}

/* Whether a frame (any line, inlined ones too) of sm's stack is named fn. */
static inline int pt_has_fn(const Profile *p, const Perftools__Profiles__Sample *sm,
                            const char *fn) {
  for (size_t k = 0; k < sm->n_location_id; k++)
    for (size_t l = 0; l < p->n_location; l++)
      if (p->location[l]->id == sm->location_id[k])
        for (size_t q = 0; q < p->location[l]->n_line; q++)
          for (size_t f = 0; f < p->n_function; f++)
            if (p->function[f]->id == p->location[l]->line[q]->function_id &&
                strcmp(pt_str(p, p->function[f]->name), fn) == 0)
              return 1;
  return 0;
}

/* Sum of value column v over the samples whose stack holds fn (NULL: all). */
static inline int64_t pt_sum(const Profile *p, size_t v, const char *fn) {
  int64_t s = 0;
  for (size_t i = 0; i < p->n_sample; i++)
    if ((!fn || pt_has_fn(p, p->sample[i], fn)) && v < p->sample[i]->n_value)
      s += p->sample[i]->value[v];
  return s;
}

/* What a profiler's cut hands over: the bytes raw[0..len), its window. */
typedef struct pt_cut {
  uint8_t *raw;
  size_t len;
  int64_t t0, t1;
} pt_cut;

/* c parsed, given the cut's return code rc; frees c->raw. NULL, with a
 * failed check, if the cut failed or its bytes are not a pprof. */
static inline Profile *pt_parse_cut(int rc, pt_cut *c) {
  PP_CHECK_INT(rc, ==, 0);
  if (rc != 0)
    return NULL;
  PP_CHECK(c->t1 >= c->t0);
  Profile *p = pp_ref_parse(c->raw, c->len, 64u << 20, NULL, 0);
  free(c->raw);
  c->raw = NULL;
  PP_CHECK(p != NULL);
  return p;
}
#endif
