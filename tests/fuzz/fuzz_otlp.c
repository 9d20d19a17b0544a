/* pprof -> OTLP (sidecar/exporters/otlp_convert.c): any bytes a pprof parser accepts are
 * converted (twice into one request, sharing its dictionary), packed and
 * unpacked again with protobuf-c. The request must hold entry 0 of every
 * dictionary table as the zero value, every index in range, one Profile
 * per sample type per add, exactly one value per sample, links of 16 and 8
 * non-zero bytes, and per sample type the value sum of the input (the
 * conversion neither loses nor double-counts samples). */
#include <string.h>

#include "fuzz_target.h"
#include "otlp_profiles.pb-c.h"
#include "otlp_convert.h"
#include "pp_parse_ref.h"

#define MAX_UNPACKED (1u << 20)

static bool in_range(int32_t i, size_t n) {
  return i >= 0 && (size_t)i < n;
}

static void check_attrs(const Pushprof__Otlp__ProfilesDictionary *d, const int32_t *a, size_t n) {
  for (size_t i = 0; i < n; i++) {
    FUZZ_CHECK(in_range(a[i], d->n_attribute_table) && a[i] != 0, "attribute index %d", a[i]);
    const Pushprof__Otlp__KeyValueAndUnit *kv = d->attribute_table[a[i]];
    FUZZ_CHECK(in_range(kv->key_strindex, d->n_string_table) &&
                   in_range(kv->unit_strindex, d->n_string_table),
               "attribute %d strings", a[i]);
    for (size_t j = 0; j < i; j++)
      FUZZ_CHECK(strcmp(d->string_table[kv->key_strindex],
                        d->string_table[d->attribute_table[a[j]]->key_strindex]) != 0,
                 "repeated attribute key %s", d->string_table[kv->key_strindex]);
  }
}

static void check_dictionary(const Pushprof__Otlp__ProfilesDictionary *d) {
  FUZZ_CHECK(d && d->n_string_table && !d->string_table[0][0], "string 0");
  FUZZ_CHECK(d->n_mapping_table && d->n_location_table && d->n_function_table && d->n_link_table &&
                 d->n_attribute_table && d->n_stack_table,
             "a table without entry 0");
  const Pushprof__Otlp__Mapping *m0 = d->mapping_table[0];
  FUZZ_CHECK(!m0->memory_start && !m0->memory_limit && !m0->file_offset && !m0->filename_strindex &&
                 !m0->n_attribute_indices,
             "mapping 0 not zero");
  FUZZ_CHECK(!d->location_table[0]->mapping_index && !d->location_table[0]->address &&
                 !d->location_table[0]->n_lines,
             "location 0 not zero");
  const Pushprof__Otlp__Function *f0 = d->function_table[0];
  FUZZ_CHECK(!f0->name_strindex && !f0->system_name_strindex && !f0->filename_strindex &&
                 !f0->start_line,
             "function 0 not zero");
  FUZZ_CHECK(!d->attribute_table[0]->key_strindex && !d->attribute_table[0]->value,
             "attribute 0 not zero");
  FUZZ_CHECK(!d->stack_table[0]->n_location_indices, "stack 0 not empty");
  for (size_t i = 0; i < d->n_link_table; i++) {
    const Pushprof__Otlp__Link *l = d->link_table[i];
    FUZZ_CHECK(l->trace_id.len == 16 && l->span_id.len == 8, "link %zu id sizes", i);
    bool zero = true;
    for (size_t j = 0; j < 16; j++)
      zero &= l->trace_id.data[j] == 0;
    FUZZ_CHECK(zero == (i == 0), "link %zu trace id zero=%d", i, zero);
  }
  for (size_t i = 0; i < d->n_mapping_table; i++) {
    FUZZ_CHECK(in_range(d->mapping_table[i]->filename_strindex, d->n_string_table), "mapping");
    check_attrs(d, d->mapping_table[i]->attribute_indices,
                d->mapping_table[i]->n_attribute_indices);
  }
  for (size_t i = 0; i < d->n_function_table; i++) {
    const Pushprof__Otlp__Function *f = d->function_table[i];
    FUZZ_CHECK(in_range(f->name_strindex, d->n_string_table) &&
                   in_range(f->system_name_strindex, d->n_string_table) &&
                   in_range(f->filename_strindex, d->n_string_table),
               "function %zu strings", i);
  }
  for (size_t i = 0; i < d->n_location_table; i++) {
    const Pushprof__Otlp__Location *l = d->location_table[i];
    FUZZ_CHECK(in_range(l->mapping_index, d->n_mapping_table), "location %zu mapping", i);
    for (size_t j = 0; j < l->n_lines; j++)
      FUZZ_CHECK(in_range(l->lines[j]->function_index, d->n_function_table), "line function");
  }
  for (size_t i = 0; i < d->n_stack_table; i++)
    for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
      FUZZ_CHECK(in_range(d->stack_table[i]->location_indices[j], d->n_location_table),
                 "stack %zu location", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char why[256];
  Perftools__Profiles__Profile *p = pp_ref_parse(data, size, MAX_UNPACKED, why, sizeof why);
  if (!p)
    return 0;
  pp_otlp *o = pp_otlp_new();
  FUZZ_CHECK(o != NULL, "out of memory");
  pp_otlp_attr res[1] = {{.key = "service.name", .str = "fuzz"}};
  for (int i = 0; i < 2; i++)
    FUZZ_CHECK(pp_otlp_add(o, p, res, 1, "pushprof", "0", why, sizeof why) == 0, "add: %s", why);
  uint8_t *out;
  size_t len;
  FUZZ_CHECK(pp_otlp_pack(o, &out, &len) == 0, "pack");
  Pushprof__Otlp__ExportProfilesServiceRequest *r =
      pushprof__otlp__export_profiles_service_request__unpack(NULL, len, out);
  FUZZ_CHECK(r != NULL, "our own request does not unpack");
  const Pushprof__Otlp__ProfilesDictionary *d = r->dictionary;
  check_dictionary(d);
  FUZZ_CHECK(r->n_resource_profiles == 2, "%zu resources", r->n_resource_profiles);
  for (size_t ri = 0; ri < r->n_resource_profiles; ri++) {
    const Pushprof__Otlp__ScopeProfiles *sp = r->resource_profiles[ri]->scope_profiles[0];
    FUZZ_CHECK(sp->n_profiles == p->n_sample_type, "%zu profiles for %zu sample types",
               sp->n_profiles, p->n_sample_type);
    for (size_t t = 0; t < sp->n_profiles; t++) {
      const Pushprof__Otlp__Profile *pr = sp->profiles[t];
      uint64_t want = 0, got = 0;
      for (size_t i = 0; i < p->n_sample; i++)
        if (t < p->sample[i]->n_value)
          want += (uint64_t)p->sample[i]->value[t];
      FUZZ_CHECK(pr->sample_type && in_range(pr->sample_type->type_strindex, d->n_string_table) &&
                     strcmp(d->string_table[pr->sample_type->type_strindex],
                            p->string_table[p->sample_type[t]->type]) == 0,
                 "profile %zu sample type", t);
      for (size_t i = 0; i < pr->n_samples; i++) {
        const Pushprof__Otlp__Sample *s = pr->samples[i];
        FUZZ_CHECK(s->n_values == 1, "%zu values", s->n_values);
        FUZZ_CHECK(in_range(s->stack_index, d->n_stack_table), "stack index %d", s->stack_index);
        FUZZ_CHECK(in_range(s->link_index, d->n_link_table), "link index %d", s->link_index);
        check_attrs(d, s->attribute_indices, s->n_attribute_indices);
        got += (uint64_t)s->values[0];
      }
      FUZZ_CHECK(got == want, "sample type %zu: sum %llu, pushed %llu", t, (unsigned long long)got,
                 (unsigned long long)want);
    }
  }
  pushprof__otlp__export_profiles_service_request__free_unpacked(r, NULL);
  free(out);
  pp_otlp_free(o);
  perftools__profiles__profile__free_unpacked(p, NULL);
  return 0;
}
