/* Unit tests for sidecar/exporters/exporter_names.c: path segments, URLs
 * fit for logs, the heap/CPU type of a batch and its object names. */
#include <stdio.h>
#include <string.h>

#include "exporter.h"
#include "pp_test.h"

static void test_sanitize_keeps_safe_bytes_and_neutralizes_dots(void) {
  char out[64];
  PP_CHECK_STR(exporter_sanitize("api-v1.2_x", out, sizeof out), "api-v1.2_x");
  PP_CHECK_STR(exporter_sanitize("../../etc", out, sizeof out), ".._.._etc");
  PP_CHECK_STR(exporter_sanitize("..", out, sizeof out), "_");
  PP_CHECK_STR(exporter_sanitize(".", out, sizeof out), "_");
  PP_CHECK_STR(exporter_sanitize("", out, sizeof out), "_");
  PP_CHECK_STR(exporter_sanitize(NULL, out, sizeof out), "_");
  PP_CHECK_STR(exporter_sanitize("a/b c\xff", out, sizeof out), "a_b_c_");
  char small[3];
  PP_CHECK_STR(exporter_sanitize("..abc", small, sizeof small), "_");
}

static void test_exporter_redact_url_drops_userinfo_and_query(void) {
  char out[256];
  exporter_redact_url("https://user:s3cr3t@host:8443/a/b?token=xyz#f", out, sizeof out);
  PP_CHECK_STR(out, "https://host:8443/a/b");
  exporter_redact_url("http://h/p@q?x=1", out, sizeof out);
  PP_CHECK_STR(out, "http://h/p@q");
  exporter_redact_url("https://host/very/long/path", out, 12);
  PP_CHECK_INT(strlen(out), ==, 11);
}

/* A profile whose sample types are the given names, in a string table. */
typedef struct typed_profile {
  Perftools__Profiles__Profile p;
  Perftools__Profiles__ValueType vt[2], *vtp[2];
  char *strings[4];
} typed_profile;

static void typed(typed_profile *t, const char *a, const char *b) {
  perftools__profiles__profile__init(&t->p);
  t->strings[0] = (char *)"";
  t->strings[1] = (char *)a;
  t->strings[2] = (char *)(b ? b : "");
  t->strings[3] = (char *)"count";
  t->p.string_table = t->strings;
  t->p.n_string_table = 4;
  for (int i = 0; i < 2; i++) {
    perftools__profiles__value_type__init(&t->vt[i]);
    t->vt[i].type = 1 + i;
    t->vt[i].unit = 3;
    t->vtp[i] = &t->vt[i];
  }
  t->p.sample_type = t->vtp;
  t->p.n_sample_type = b ? 2 : 1;
}

static void test_exporter_profile_type_is_heap_for_go_heap_layouts(void) {
  typed_profile t;
  typed(&t, "alloc_objects", "alloc_space");
  PP_CHECK_STR(exporter_profile_type(&t.p), "heap");
  typed(&t, "inuse_space", NULL);
  PP_CHECK_STR(exporter_profile_type(&t.p), "heap");
  /* Any sample type of the heap layout makes it a heap batch. */
  typed(&t, "samples", "inuse_objects");
  PP_CHECK_STR(exporter_profile_type(&t.p), "heap");
  typed(&t, "samples", "cpu");
  PP_CHECK_STR(exporter_profile_type(&t.p), "");
  typed(&t, "alloc", "inuse");
  PP_CHECK_STR(exporter_profile_type(&t.p), "");
  /* A type index outside the string table names nothing. */
  typed(&t, "samples", NULL);
  t.vt[0].type = 99;
  PP_CHECK_STR(exporter_profile_type(&t.p), "");
  t.vt[0].type = -1;
  PP_CHECK_STR(exporter_profile_type(&t.p), "");
  PP_CHECK_STR(exporter_profile_type(NULL), "");
}

static void test_exporter_object_name_is_utc_type_and_hash_prefix(void) {
  char name[64];
  export_object o = {.start_ns = 1700000000LL * 1000000000LL + 999999999LL,
                     .content_hash = "0123456789abcdef0123456789abcdef"};
  PP_CHECK_INT(exporter_object_name(&o, name, sizeof name), ==, 0);
  PP_CHECK_STR(name, "20231114T221320Z-0123456789abcdef.pb.gz");
  o.profile_type = "heap";
  PP_CHECK_INT(exporter_object_name(&o, name, sizeof name), ==, 0);
  PP_CHECK_STR(name, "20231114T221320Z-heap-0123456789abcdef.pb.gz");
  /* Hostile type and hash bytes stay inside one path segment. */
  o.profile_type = "a/b";
  o.content_hash = "../x";
  PP_CHECK_INT(exporter_object_name(&o, name, sizeof name), ==, 0);
  PP_CHECK_STR(name, "20231114T221320Z-a_b-.._x.pb.gz");
  o.profile_type = "";
  o.content_hash = NULL;
  PP_CHECK_INT(exporter_object_name(&o, name, sizeof name), ==, 0);
  PP_CHECK_STR(name, "20231114T221320Z-nohash.pb.gz");
  /* Exactly fits, then one byte short. */
  size_t need = strlen("20231114T221320Z-nohash.pb.gz") + 1;
  PP_CHECK_INT(exporter_object_name(&o, name, need), ==, 0);
  PP_CHECK_INT(exporter_object_name(&o, name, need - 1), ==, -1);
  /* No start time: now, which is after the example's. */
  o.start_ns = 0;
  PP_CHECK_INT(exporter_object_name(&o, name, sizeof name), ==, 0);
  PP_CHECK_INT(strlen(name), ==, strlen("20231114T221320Z-nohash.pb.gz"));
  PP_CHECK(strcmp(name, "20231114T221320Z-nohash.pb.gz") > 0);
  PP_CHECK(strcmp(name + 15, "Z-nohash.pb.gz") == 0);
}

int main(void) {
  PP_RUN(test_sanitize_keeps_safe_bytes_and_neutralizes_dots);
  PP_RUN(test_exporter_redact_url_drops_userinfo_and_query);
  PP_RUN(test_exporter_profile_type_is_heap_for_go_heap_layouts);
  PP_RUN(test_exporter_object_name_is_utc_type_and_hash_prefix);
  PP_DONE();
}
