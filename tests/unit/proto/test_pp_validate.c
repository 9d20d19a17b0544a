/* proto/pprof/pp_validate.c: a valid profile passes, and each broken
 * rule (string table, string indices, ids, value counts, references,
 * labels) is refused with its reason; sparse ids are valid. */
#include "pp_builder.h"
#include "pp_merge.h"
#include "pp_validate.h"
#include "pprof_fixture.h"

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

int main(void) {
  PP_RUN(test_validate_accepts_valid);
  PP_RUN(test_validate_string_table);
  PP_RUN(test_validate_string_indices);
  PP_RUN(test_validate_ids_nonzero_and_unique);
  PP_RUN(test_validate_value_count);
  PP_RUN(test_validate_references);
  PP_RUN(test_validate_labels);
  PP_RUN(test_validate_sparse_ids);
  PP_DONE();
}
