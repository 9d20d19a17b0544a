/* Test-only deep comparison of the hand-written decoder's result with
 * protobuf-c's (pp_decode_ref.h). */
#include "pp_decode_ref.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pp_decode.h"

#define DIFF(...)                                                                                  \
  do {                                                                                             \
    snprintf(why, whylen, __VA_ARGS__);                                                            \
    return -1;                                                                                     \
  } while (0)

#define SAME_N(what, x, y)                                                                         \
  do {                                                                                             \
    if ((x) != (y))                                                                                \
      DIFF("%s: %" PRIu64 " vs %" PRIu64, what, (uint64_t)(x), (uint64_t)(y));                     \
  } while (0)

/* A message both sides must have (a pointer of a repeated field) or both not. */
#define SAME_PTR(what, x, y)                                                                       \
  do {                                                                                             \
    if (((x) == NULL) != ((y) == NULL))                                                            \
      DIFF("%s: %s vs %s", what, (x) ? "set" : "NULL", (y) ? "set" : "NULL");                      \
  } while (0)

static int cmp_value_type(const Perftools__Profiles__ValueType *a,
                          const Perftools__Profiles__ValueType *b, const char *what, char *why,
                          size_t whylen) {
  SAME_PTR(what, a, b);
  if (!a)
    return 0;
  if (a->base.descriptor != b->base.descriptor)
    DIFF("%s: descriptor differs", what);
  if (a->type != b->type || a->unit != b->unit)
    DIFF("%s: %" PRId64 "/%" PRId64 " vs %" PRId64 "/%" PRId64, what, a->type, a->unit, b->type,
         b->unit);
  return 0;
}

static int cmp_sample(const Perftools__Profiles__Sample *a, const Perftools__Profiles__Sample *b,
                      size_t i, char *why, size_t whylen) {
  SAME_PTR("sample", a, b);
  if (a->base.descriptor != b->base.descriptor)
    DIFF("sample %zu: descriptor differs", i);
  SAME_N("sample n_location_id", a->n_location_id, b->n_location_id);
  SAME_N("sample n_value", a->n_value, b->n_value);
  SAME_N("sample n_label", a->n_label, b->n_label);
  for (size_t j = 0; j < a->n_location_id; j++)
    if (a->location_id[j] != b->location_id[j])
      DIFF("sample %zu location_id %zu: %" PRIu64 " vs %" PRIu64, i, j, a->location_id[j],
           b->location_id[j]);
  for (size_t j = 0; j < a->n_value; j++)
    if (a->value[j] != b->value[j])
      DIFF("sample %zu value %zu: %" PRId64 " vs %" PRId64, i, j, a->value[j], b->value[j]);
  for (size_t j = 0; j < a->n_label; j++) {
    const Perftools__Profiles__Label *x = a->label[j], *y = b->label[j];
    SAME_PTR("label", x, y);
    if (x->base.descriptor != y->base.descriptor)
      DIFF("sample %zu label %zu: descriptor differs", i, j);
    if (x->key != y->key || x->str != y->str || x->num != y->num || x->num_unit != y->num_unit)
      DIFF("sample %zu label %zu: %" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 " vs %" PRId64
           ",%" PRId64 ",%" PRId64 ",%" PRId64,
           i, j, x->key, x->str, x->num, x->num_unit, y->key, y->str, y->num, y->num_unit);
  }
  return 0;
}

static int cmp_mapping(const Perftools__Profiles__Mapping *a, const Perftools__Profiles__Mapping *b,
                       size_t i, char *why, size_t whylen) {
  SAME_PTR("mapping", a, b);
  if (a->base.descriptor != b->base.descriptor)
    DIFF("mapping %zu: descriptor differs", i);
  if (a->id != b->id || a->memory_start != b->memory_start || a->memory_limit != b->memory_limit ||
      a->file_offset != b->file_offset || a->filename != b->filename || a->build_id != b->build_id)
    DIFF("mapping %zu: numbers differ (id %" PRIu64 " vs %" PRIu64 ")", i, a->id, b->id);
  if (a->has_functions != b->has_functions || a->has_filenames != b->has_filenames ||
      a->has_line_numbers != b->has_line_numbers || a->has_inline_frames != b->has_inline_frames)
    DIFF("mapping %zu: flags %d%d%d%d vs %d%d%d%d", i, a->has_functions, a->has_filenames,
         a->has_line_numbers, a->has_inline_frames, b->has_functions, b->has_filenames,
         b->has_line_numbers, b->has_inline_frames);
  return 0;
}

static int cmp_location(const Perftools__Profiles__Location *a,
                        const Perftools__Profiles__Location *b, size_t i, char *why,
                        size_t whylen) {
  SAME_PTR("location", a, b);
  if (a->base.descriptor != b->base.descriptor)
    DIFF("location %zu: descriptor differs", i);
  if (a->id != b->id || a->mapping_id != b->mapping_id || a->address != b->address ||
      a->is_folded != b->is_folded)
    DIFF("location %zu: id %" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d vs %" PRIu64 ",%" PRIu64
         ",%" PRIu64 ",%d",
         i, a->id, a->mapping_id, a->address, a->is_folded, b->id, b->mapping_id, b->address,
         b->is_folded);
  SAME_N("location n_line", a->n_line, b->n_line);
  for (size_t j = 0; j < a->n_line; j++) {
    const Perftools__Profiles__Line *x = a->line[j], *y = b->line[j];
    SAME_PTR("line", x, y);
    if (x->base.descriptor != y->base.descriptor)
      DIFF("location %zu line %zu: descriptor differs", i, j);
    if (x->function_id != y->function_id || x->line != y->line || x->column != y->column)
      DIFF("location %zu line %zu: %" PRIu64 ",%" PRId64 ",%" PRId64 " vs %" PRIu64 ",%" PRId64
           ",%" PRId64,
           i, j, x->function_id, x->line, x->column, y->function_id, y->line, y->column);
  }
  return 0;
}

static int cmp_function(const Perftools__Profiles__Function *a,
                        const Perftools__Profiles__Function *b, size_t i, char *why,
                        size_t whylen) {
  SAME_PTR("function", a, b);
  if (a->base.descriptor != b->base.descriptor)
    DIFF("function %zu: descriptor differs", i);
  if (a->id != b->id || a->name != b->name || a->system_name != b->system_name ||
      a->filename != b->filename || a->start_line != b->start_line)
    DIFF("function %zu: id %" PRIu64 " vs %" PRIu64 " or its other numbers differ", i, a->id,
         b->id);
  return 0;
}

int pp_decode_ref_compare(const Perftools__Profiles__Profile *a,
                          const Perftools__Profiles__Profile *b, char *why, size_t whylen) {
  char what[64];
  if (a->base.descriptor != b->base.descriptor)
    DIFF("profile: descriptor differs");
  SAME_N("n_sample_type", a->n_sample_type, b->n_sample_type);
  SAME_N("n_sample", a->n_sample, b->n_sample);
  SAME_N("n_mapping", a->n_mapping, b->n_mapping);
  SAME_N("n_location", a->n_location, b->n_location);
  SAME_N("n_function", a->n_function, b->n_function);
  SAME_N("n_string_table", a->n_string_table, b->n_string_table);
  SAME_N("n_comment", a->n_comment, b->n_comment);
  SAME_N("drop_frames", a->drop_frames, b->drop_frames);
  SAME_N("keep_frames", a->keep_frames, b->keep_frames);
  SAME_N("time_nanos", a->time_nanos, b->time_nanos);
  SAME_N("duration_nanos", a->duration_nanos, b->duration_nanos);
  SAME_N("period", a->period, b->period);
  SAME_N("default_sample_type", a->default_sample_type, b->default_sample_type);
  SAME_N("doc_url", a->doc_url, b->doc_url);
  if (cmp_value_type(a->period_type, b->period_type, "period_type", why, whylen) != 0)
    return -1;
  for (size_t i = 0; i < a->n_sample_type; i++) {
    snprintf(what, sizeof what, "sample_type %zu", i);
    SAME_PTR(what, a->sample_type[i], b->sample_type[i]);
    if (cmp_value_type(a->sample_type[i], b->sample_type[i], what, why, whylen) != 0)
      return -1;
  }
  for (size_t i = 0; i < a->n_sample; i++)
    if (cmp_sample(a->sample[i], b->sample[i], i, why, whylen) != 0)
      return -1;
  for (size_t i = 0; i < a->n_mapping; i++)
    if (cmp_mapping(a->mapping[i], b->mapping[i], i, why, whylen) != 0)
      return -1;
  for (size_t i = 0; i < a->n_location; i++)
    if (cmp_location(a->location[i], b->location[i], i, why, whylen) != 0)
      return -1;
  for (size_t i = 0; i < a->n_function; i++)
    if (cmp_function(a->function[i], b->function[i], i, why, whylen) != 0)
      return -1;
  for (size_t i = 0; i < a->n_string_table; i++) {
    const char *x = a->string_table[i], *y = b->string_table[i];
    SAME_PTR("string", x, y);
    if (strcmp(x, y) != 0)
      DIFF("string_table[%zu]: \"%.40s\" vs \"%.40s\"", i, x, y);
  }
  for (size_t i = 0; i < a->n_comment; i++)
    if (a->comment[i] != b->comment[i])
      DIFF("comment %zu: %" PRId64 " vs %" PRId64, i, a->comment[i], b->comment[i]);
  return 0;
}

int pp_decode_ref_check(const uint8_t *data, size_t len, char *why, size_t whylen) {
  Perftools__Profiles__Profile *ref = perftools__profiles__profile__unpack(NULL, len, data);
  pp_pprof *a = pp_pprof_arena_new(len * 4);
  if (!a) {
    perftools__profiles__profile__free_unpacked(ref, NULL);
    snprintf(why, whylen, "out of memory");
    return -2;
  }
  const Perftools__Profiles__Profile *got = pp_pprof_decode(a, data, len);
  int rc;
  if (!got && pp_pprof_arena_oom(a)) {
    snprintf(why, whylen, "the hand decoder ran out of memory on %zu bytes", len);
    rc = -2;
  } else if (!got != !ref) {
    snprintf(why, whylen, "protobuf-c %s %zu bytes, the hand decoder %s them",
             ref ? "accepts" : "rejects", len, got ? "accepts" : "rejects");
    rc = -1;
  } else if (!got) {
    rc = 0;
  } else {
    rc = pp_decode_ref_compare(ref, got, why, whylen) == 0 ? 1 : -1;
  }
  pp_pprof_free(a);
  perftools__profiles__profile__free_unpacked(ref, NULL);
  return rc;
}
