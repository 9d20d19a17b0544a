/* pprof validation with the rules `go tool pprof` applies when it reads a
 * profile. */
#include "pp_validate.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "pp_hash.h"
#include "pp_why.h"

typedef struct vctx {
  const Perftools__Profiles__Profile *p;
  char *why;
  size_t whylen;
} vctx;

/* Checks a string index; what names the field for the reason. */
static bool str_ok(const vctx *c, int64_t ix, const char *what, size_t n) {
  if (ix >= 0 && (uint64_t)ix < c->p->n_string_table)
    return true;
  if (n == SIZE_MAX)
    pp_say(c->why, c->whylen, "%s string index %" PRId64 " out of range (string_table has %zu)",
           what, ix, c->p->n_string_table);
  else
    pp_say(c->why, c->whylen,
           "%s %zu: string index %" PRId64 " out of range (string_table has %zu)", what, n, ix,
           c->p->n_string_table);
  return false;
}

/* m indexes the ids of the n messages msgs (what: their kind), whose id
 * is at id_offset; 0, or -1 with the reason in c->why. */
static int index_ids(const vctx *c, pp_idmap *m, const char *what, const void *const *msgs,
                     size_t n, size_t id_offset) {
  uint64_t bad = 0;
  switch (pp_idmap_of(m, msgs, n, id_offset, &bad)) {
  case 0:
    return 0;
  case 1:
    pp_say(c->why, c->whylen, "a %s has id 0 (ids must be non-zero)", what);
    return -1;
  case 2:
    pp_say(c->why, c->whylen, "%s id %" PRIu64 " is used twice (ids must be unique)", what, bad);
    return -1;
  default:
    pp_say(c->why, c->whylen, "out of memory indexing %s ids", what);
    return -1;
  }
}

static bool value_type_ok(const vctx *c, const Perftools__Profiles__ValueType *vt, const char *what,
                          size_t n) {
  return str_ok(c, vt->type, what, n) && str_ok(c, vt->unit, what, n);
}

/* True if every location id of s is a location's, found without a lookup
 * per id where locations have the ids 1..n (as builders make them): then
 * an id is valid exactly when it is in [1, n], and the loop over the ids
 * (most of a profile's numbers) has no branch in it. false means "look
 * each up": the caller then finds the first missing one for its reason. */
static bool sample_locations_ok(const pp_idmap *locs, const Perftools__Profiles__Sample *s) {
  if (!locs->dense)
    return false;
  uint64_t bad = 0; /* id - 1 wraps below 0 to the largest value */
  for (size_t j = 0; j < s->n_location_id; j++)
    bad |= s->location_id[j] - 1 >= locs->n;
  return !bad;
}

int pp_pprof_validate(const Perftools__Profiles__Profile *p, char *why, size_t whylen) {
  vctx c = {p, why, whylen};
  pp_idmap maps = {0}, funcs = {0}, locs = {0};
  int rc = -1;

  if (p->n_string_table == 0 || p->string_table[0] == NULL || p->string_table[0][0] != '\0') {
    pp_say(why, whylen, "string_table[0] must be the empty string");
    return -1;
  }
  for (size_t i = 0; i < p->n_sample_type; i++)
    if (!value_type_ok(&c, p->sample_type[i], "sample_type", i))
      return -1;
  if (p->period_type && !value_type_ok(&c, p->period_type, "period_type", SIZE_MAX))
    return -1;
  if (!str_ok(&c, p->drop_frames, "drop_frames", SIZE_MAX) ||
      !str_ok(&c, p->keep_frames, "keep_frames", SIZE_MAX) ||
      !str_ok(&c, p->default_sample_type, "default_sample_type", SIZE_MAX) ||
      !str_ok(&c, p->doc_url, "doc_url", SIZE_MAX))
    return -1;
  for (size_t i = 0; i < p->n_comment; i++)
    if (!str_ok(&c, p->comment[i], "comment", i))
      return -1;

  if (index_ids(&c, &maps, "mapping", (const void *const *)p->mapping, p->n_mapping,
                offsetof(Perftools__Profiles__Mapping, id)) != 0 ||
      index_ids(&c, &funcs, "function", (const void *const *)p->function, p->n_function,
                offsetof(Perftools__Profiles__Function, id)) != 0 ||
      index_ids(&c, &locs, "location", (const void *const *)p->location, p->n_location,
                offsetof(Perftools__Profiles__Location, id)) != 0)
    goto fail;

  for (size_t i = 0; i < p->n_mapping; i++) {
    const Perftools__Profiles__Mapping *m = p->mapping[i];
    if (!str_ok(&c, m->filename, "mapping", i) || !str_ok(&c, m->build_id, "mapping", i))
      goto fail;
  }
  for (size_t i = 0; i < p->n_function; i++) {
    const Perftools__Profiles__Function *f = p->function[i];
    if (!str_ok(&c, f->name, "function", i) || !str_ok(&c, f->system_name, "function", i) ||
        !str_ok(&c, f->filename, "function", i))
      goto fail;
  }
  for (size_t i = 0; i < p->n_location; i++) {
    const Perftools__Profiles__Location *l = p->location[i];
    if (l->mapping_id != 0 && pp_idmap_find(&maps, l->mapping_id) < 0) {
      pp_say(why, whylen, "location %" PRIu64 " refers to mapping %" PRIu64 ", which is missing",
             l->id, l->mapping_id);
      goto fail;
    }
    for (size_t j = 0; j < l->n_line; j++) {
      uint64_t fid = l->line[j]->function_id;
      if (fid == 0) { /* go tool pprof: "has a line with nil function" */
        pp_say(why, whylen, "location %" PRIu64 " line %zu has no function (function_id 0)", l->id,
               j);
        goto fail;
      }
      if (pp_idmap_find(&funcs, fid) < 0) {
        pp_say(why, whylen,
               "location %" PRIu64 " line %zu refers to function %" PRIu64 ", which is missing",
               l->id, j, fid);
        goto fail;
      }
    }
  }
  if (p->n_sample > 0 && p->n_sample_type == 0) {
    pp_say(why, whylen, "profile has %zu samples but no sample_type", p->n_sample);
    goto fail;
  }
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    if (s->n_value != p->n_sample_type) {
      pp_say(why, whylen, "sample %zu has %zu values, want %zu (one per sample_type)", i,
             s->n_value, p->n_sample_type);
      goto fail;
    }
    if (!sample_locations_ok(&locs, s)) {
      for (size_t j = 0; j < s->n_location_id; j++) {
        if (pp_idmap_find(&locs, s->location_id[j]) < 0) {
          pp_say(why, whylen, "sample %zu refers to location %" PRIu64 ", which is missing", i,
                 s->location_id[j]);
          goto fail;
        }
      }
    }
    for (size_t j = 0; j < s->n_label; j++) {
      const Perftools__Profiles__Label *l = s->label[j];
      /* The three indices at once (a negative one is huge as unsigned);
       * str_ok only to say which is wrong. */
      uint64_t nstr = p->n_string_table;
      if (((uint64_t)l->key >= nstr) | ((uint64_t)l->str >= nstr) | ((uint64_t)l->num_unit >= nstr))
        if (!str_ok(&c, l->key, "sample label of sample", i) ||
            !str_ok(&c, l->str, "sample label of sample", i) ||
            !str_ok(&c, l->num_unit, "sample label of sample", i))
          goto fail;
      /* Index 0 or another "" entry: an empty key either way (a merge would
       * map both to index 0, which must not turn valid into invalid). */
      if (l->key == 0 || p->string_table[l->key][0] == '\0') {
        pp_say(why, whylen, "sample %zu label %zu has no key", i, j);
        goto fail;
      }
      if (l->str != 0 && (l->num != 0 || l->num_unit != 0)) {
        pp_say(why, whylen, "sample %zu label \"%s\" has both a string and a number", i,
               p->string_table[l->key]);
        goto fail;
      }
    }
  }
  rc = 0;
fail:
  pp_idmap_free(&maps);
  pp_idmap_free(&funcs);
  pp_idmap_free(&locs);
  return rc;
}
