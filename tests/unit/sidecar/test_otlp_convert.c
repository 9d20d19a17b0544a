/* pprof -> OTLP (sidecar/exporters/otlp_convert.c). The request is decoded
 * back with protobuf-c and checked field by field; the
 * integration tests decode it with Google's runtime instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_test_util.h"
#include "otlp_profiles.pb-c.h"
#include "otlp_convert.h"
#include "pp_builder.h"
#include "pp_parse_ref.h"
#include "pp_test.h"

static const char TRACE[] = "4bf92f3577b34da6a3ce929d0e0e4736";
static const char SPAN[] = "00f067aa0ba902b7";

/* Two sample types; samples: linked (x2 same stack: summed), a repeated
 * key, an unlinked span_id alone, a numeric label, no labels. */
static Perftools__Profiles__Profile *make_profile(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  pp_builder_add_sample_type(b, "samples", "count");
  pp_builder_add_sample_type(b, "cpu", "nanoseconds");
  pp_builder_set_period(b, "cpu", "nanoseconds", 1000);
  uint64_t m = pp_builder_mapping(b, 0x1000, 0x2000, 0, "/bin/app", "deadbeef", true);
  uint64_t f1 = pp_builder_function(b, "leaf", "leaf", "a.c", 1);
  uint64_t f2 = pp_builder_function(b, "root", "root", "a.c", 9);
  int64_t line = 3;
  uint64_t l1 = pp_builder_location(b, m, 0x1100, &f1, &line, 1);
  uint64_t l2 = pp_builder_location(b, m, 0x1200, &f2, &line, 1);
  uint64_t st[2] = {l1, l2};
  int64_t v[2] = {2, 2000};
  pp_label linked[3] = {{.key = "trace_id", .str = TRACE},
                        {.key = "span_id", .str = SPAN},
                        {.key = "route", .str = "/a"}};
  pp_label reordered[3] = {linked[2], linked[1], linked[0]};
  pp_label dup[2] = {{.key = "route", .str = "/x"}, {.key = "route", .str = "/y"}};
  pp_label alone[1] = {{.key = "span_id", .str = SPAN}};
  pp_label num[1] = {{.key = "bytes", .num = 4096, .num_unit = "bytes"}};
  PP_CHECK(pp_builder_sample(b, st, 2, v, 2, linked, 3) == 0);
  PP_CHECK(pp_builder_sample(b, st + 1, 1, v, 2, reordered, 3) == 0);
  PP_CHECK(pp_builder_sample(b, st, 2, v, 2, dup, 2) == 0);
  PP_CHECK(pp_builder_sample(b, st, 2, v, 2, alone, 1) == 0);
  PP_CHECK(pp_builder_sample(b, st, 1, v, 2, num, 1) == 0);
  PP_CHECK(pp_builder_sample(b, st, 2, v, 2, NULL, 0) == 0);
  uint8_t *raw;
  size_t len;
  PP_CHECK(pp_builder_pack(b, &raw, &len) == 0);
  pp_builder_free(b);
  char why[256];
  Perftools__Profiles__Profile *p = pp_ref_parse(raw, len, 1 << 20, why, sizeof why);
  free(raw);
  PP_CHECK(p != NULL);
  return p;
}

static void test_otlp_dictionary_zero_entries_and_one_type_per_profile(void) {
  Perftools__Profiles__Profile *p = make_profile();
  pp_otlp *o = pp_otlp_new();
  char why[256];
  pp_otlp_attr res[2] = {{.key = "service.name", .str = "svc"},
                         {.key = "process.pid", .num = 42, .is_int = true}};
  PP_CHECK(pp_otlp_add(o, p, res, 2, "pushprof", "0.1.0", why, sizeof why) == 0);
  PP_CHECK(pp_otlp_add(o, p, res, 1, "pushprof", "0.1.0", why, sizeof why) == 0);
  uint8_t *out;
  size_t len;
  PP_CHECK(pp_otlp_pack(o, &out, &len) == 0);
  pp_otlp_stats st;
  pp_otlp_get_stats(o, &st);
  PP_CHECK_INT(st.resources, ==, 2);
  PP_CHECK_INT(st.profiles, ==, 4);
  PP_CHECK_INT(st.dropped_labels, ==, 2); /* the repeated route, once per add */
  Pushprof__Otlp__ExportProfilesServiceRequest *r =
      pushprof__otlp__export_profiles_service_request__unpack(NULL, len, out);
  PP_CHECK(r != NULL && r->dictionary != NULL);
  const Pushprof__Otlp__ProfilesDictionary *d = r->dictionary;
  PP_CHECK_STR(d->string_table[0], "");
  PP_CHECK(d->n_mapping_table >= 2 && d->n_location_table >= 3 && d->n_function_table >= 3);
  PP_CHECK(d->mapping_table[0]->memory_start == 0 && d->mapping_table[0]->n_attribute_indices == 0);
  PP_CHECK(d->location_table[0]->n_lines == 0 && d->location_table[0]->address == 0);
  PP_CHECK(d->function_table[0]->name_strindex == 0);
  PP_CHECK(d->stack_table[0]->n_location_indices == 0);
  PP_CHECK(d->attribute_table[0]->key_strindex == 0 && d->attribute_table[0]->value == NULL);
  PP_CHECK_INT(d->n_link_table, ==, 2);
  PP_CHECK_INT(d->link_table[0]->trace_id.len, ==, 16);
  PP_CHECK_INT(d->link_table[0]->span_id.len, ==, 8);
  PP_CHECK(d->link_table[1]->trace_id.data[0] == 0x4b && d->link_table[1]->span_id.data[7] == 0xb7);
  /* Both adds share one dictionary: the second added no stack or mapping. */
  PP_CHECK_INT(d->n_stack_table, ==, 4);
  PP_CHECK_INT(d->n_mapping_table, ==, 2);
  const Pushprof__Otlp__Mapping *m = d->mapping_table[1];
  PP_CHECK_INT(m->n_attribute_indices, ==, 1);
  const Pushprof__Otlp__KeyValueAndUnit *bid = d->attribute_table[m->attribute_indices[0]];
  PP_CHECK_STR(d->string_table[bid->key_strindex], PP_OTLP_ATTR_BUILD_ID);
  PP_CHECK_STR(bid->value->string_value, "deadbeef");
  PP_CHECK_INT(r->n_resource_profiles, ==, 2);
  const Pushprof__Otlp__ResourceProfiles *rp = r->resource_profiles[0];
  PP_CHECK_INT(rp->resource->n_attributes, ==, 2);
  PP_CHECK_INT(rp->resource->attributes[1]->value->int_value, ==, 42);
  PP_CHECK_INT(rp->scope_profiles[0]->n_profiles, ==, 2);
  for (size_t t = 0; t < 2; t++) {
    const Pushprof__Otlp__Profile *pr = rp->scope_profiles[0]->profiles[t];
    PP_CHECK_STR(d->string_table[pr->sample_type->type_strindex], t ? "cpu" : "samples");
    PP_CHECK_INT(pr->period, ==, 1000);
    PP_CHECK_INT(pr->profile_id.len, ==, 16);
    /* 6 distinct pprof samples (the repeated route keeps its first value). */
    PP_CHECK_INT(pr->n_samples, ==, 6);
    int64_t sum = 0, linked = 0;
    for (size_t i = 0; i < pr->n_samples; i++) {
      const Pushprof__Otlp__Sample *s = pr->samples[i];
      PP_CHECK_INT(s->n_values, ==, 1);
      PP_CHECK(s->stack_index > 0 && (size_t)s->stack_index < d->n_stack_table);
      sum += s->values[0];
      if (s->link_index) {
        linked += s->values[0];
        PP_CHECK_INT(s->n_attribute_indices, ==, 3);
      }
      for (size_t a = 0; a < s->n_attribute_indices; a++)
        PP_CHECK(s->attribute_indices[a] > 0 &&
                 (size_t)s->attribute_indices[a] < d->n_attribute_table);
    }
    PP_CHECK_INT(sum, ==, 6 * (t ? 2000 : 2));
    PP_CHECK_INT(linked, ==, 2 * (t ? 2000 : 2)); /* both orders of the same labels */
    PP_CHECK_INT(pr->dropped_attributes_count, ==, 1);
  }
  pushprof__otlp__export_profiles_service_request__free_unpacked(r, NULL);
  free(out);
  pp_otlp_free(o);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* A heap profile (Go's layout) becomes four Profiles, one per sample type,
 * each with its unit and the sampling period in bytes. The schema has no
 * default sample type: a reader picks a Profile by its sample_type. */
static void test_otlp_heap_profile_is_four_profiles(void) {
  const int64_t va[4] = {2, 1024, 1, 512}, vb[4] = {0, 0, 1, 4096};
  size_t len = 0;
  char why[256] = "";
  uint8_t *raw = btu_heap_pprof(va, vb, &len);
  Perftools__Profiles__Profile *p = raw ? pp_ref_parse(raw, len, 1 << 20, why, sizeof why) : NULL;
  free(raw);
  PP_CHECK(p != NULL);
  if (!p)
    return;
  pp_otlp *o = pp_otlp_new();
  pp_otlp_attr res[1] = {{.key = "service.name", .str = "svc"}};
  PP_CHECK(pp_otlp_add(o, p, res, 1, "pushprof", "0.1.0", why, sizeof why) == 0);
  uint8_t *out = NULL;
  PP_CHECK(pp_otlp_pack(o, &out, &len) == 0);
  Pushprof__Otlp__ExportProfilesServiceRequest *r =
      out ? pushprof__otlp__export_profiles_service_request__unpack(NULL, len, out) : NULL;
  PP_CHECK(r != NULL && r->n_resource_profiles == 1);
  if (r && r->n_resource_profiles == 1) {
    const Pushprof__Otlp__ProfilesDictionary *d = r->dictionary;
    const Pushprof__Otlp__ScopeProfiles *sp = r->resource_profiles[0]->scope_profiles[0];
    static const char *const want[4][2] = {{"alloc_objects", "count"},
                                           {"alloc_space", "bytes"},
                                           {"inuse_objects", "count"},
                                           {"inuse_space", "bytes"}};
    static const int64_t sums[4] = {2, 1024, 2, 4608};
    PP_CHECK_INT(sp->n_profiles, ==, 4);
    for (size_t t = 0; t < sp->n_profiles && t < 4; t++) {
      const Pushprof__Otlp__Profile *pr = sp->profiles[t];
      PP_CHECK_STR(d->string_table[pr->sample_type->type_strindex], want[t][0]);
      PP_CHECK_STR(d->string_table[pr->sample_type->unit_strindex], want[t][1]);
      PP_CHECK(pr->period_type != NULL);
      if (pr->period_type) {
        PP_CHECK_STR(d->string_table[pr->period_type->type_strindex], "space");
        PP_CHECK_STR(d->string_table[pr->period_type->unit_strindex], "bytes");
      }
      PP_CHECK_INT(pr->period, ==, 524288);
      int64_t sum = 0;
      for (size_t i = 0; i < pr->n_samples; i++)
        sum += pr->samples[i]->values[0];
      PP_CHECK_INT(sum, ==, sums[t]);
    }
  }
  if (r)
    pushprof__otlp__export_profiles_service_request__free_unpacked(r, NULL);
  free(out);
  pp_otlp_free(o);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_otlp_hex_ids(void) {
  uint8_t id[16];
  PP_CHECK(pp_otlp_hex_id(TRACE, id, 16));
  PP_CHECK(pp_otlp_hex_id("ABCDEF0123456789", id, 8));
  PP_CHECK(!pp_otlp_hex_id("00000000000000000000000000000000", id, 16));
  PP_CHECK(!pp_otlp_hex_id("4bf92f3577b34da6a3ce929d0e0e473", id, 16));
  PP_CHECK(!pp_otlp_hex_id("4bf92f3577b34da6a3ce929d0e0e473g", id, 16));
  PP_CHECK(!pp_otlp_hex_id(NULL, id, 8));
}

int main(void) {
  PP_RUN(test_otlp_dictionary_zero_entries_and_one_type_per_profile);
  PP_RUN(test_otlp_heap_profile_is_four_profiles);
  PP_RUN(test_otlp_hex_ids);
  PP_DONE();
}
