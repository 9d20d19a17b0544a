/* Unit tests for sidecar/exporters/exporter_pyroscope.c's pure parts: the
 * series labels a batch is pushed under and Pyroscope's label name rule. */
#include <stdio.h>
#include <string.h>

#include "exporter_pyroscope.h"
#include "pp_test.h"

static const char *find(const pyroscope_label *l, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(l[i].name, name) == 0)
      return l[i].value;
  return NULL;
}

static void test_pyroscope_labels_follow_pyroscope_rules(void) {
  static const char *kv[][2] = {
      {"k8s.pod.name", "pod-1"},
      {"service.name", "other"},
      {"1st", "a"},
      {"__secret", "b"},
      {"a-b", "c"},
      {"empty", ""},
      {"bad.utf8", "x\xff"
                   "y"},
      {"___", "dropped"},
      {"service_name", "dup"},
  };
  size_t n = sizeof kv / sizeof kv[0];
  Pushprof__V1__Label store[64], *ptrs[64];
  for (size_t i = 0; i < n; i++) {
    pushprof__v1__label__init(&store[i]);
    store[i].key = (char *)kv[i][0];
    store[i].value = (char *)kv[i][1];
    ptrs[i] = &store[i];
  }
  pyroscope_label *out = NULL;
  size_t nout = 0;
  char notes[1024];
  PP_CHECK_INT(pyroscope_series_labels("checkout", "", ptrs, n, &out, &nout, notes, sizeof notes),
               ==, 0);
  PP_CHECK_STR(find(out, nout, "__name__"), "process_cpu");
  PP_CHECK(find(out, nout, "__delta__") == NULL);
  PP_CHECK_STR(find(out, nout, "service_name"), "checkout");
  PP_CHECK_STR(find(out, nout, "k8s_pod_name"), "pod-1");
  PP_CHECK_STR(find(out, nout, "_1st"), "a");
  PP_CHECK_STR(find(out, nout, "_secret"), "b");
  PP_CHECK_STR(find(out, nout, "a_b"), "c");
  PP_CHECK_STR(find(out, nout, "bad_utf8"), "x_y");
  PP_CHECK(find(out, nout, "empty") == NULL);
  PP_CHECK_INT(nout, ==, 7);
  for (size_t i = 0; i < nout; i++) {
    PP_CHECK(pyroscope_label_name_valid(out[i].name));
    if (i > 0)
      PP_CHECK(strcmp(out[i - 1].name, out[i].name) < 0);
  }
  /* Dropped ones are reported, not silent. */
  PP_CHECK(strstr(notes, "service.name") != NULL);
  PP_CHECK(strstr(notes, "___") != NULL);
  pyroscope_labels_free(out, nout);

  /* More than Pyroscope's 30 names per series: the rest are reported. */
  char keys[40][16];
  for (size_t i = 0; i < 40; i++) {
    snprintf(keys[i], sizeof keys[i], "k%02zu", i);
    pushprof__v1__label__init(&store[i]);
    store[i].key = keys[i];
    store[i].value = "v";
    ptrs[i] = &store[i];
  }
  PP_CHECK_INT(pyroscope_series_labels("svc", NULL, ptrs, 40, &out, &nout, notes, sizeof notes), ==,
               0);
  PP_CHECK_INT(nout, ==, PYROSCOPE_MAX_LABELS);
  PP_CHECK(strstr(notes, "over 30 labels") != NULL);
  pyroscope_labels_free(out, nout);

  /* A heap batch is Pyroscope's "memory", its alloc_* already per batch. */
  PP_CHECK_INT(pyroscope_series_labels("svc", "heap", ptrs, 40, &out, &nout, notes, sizeof notes),
               ==, 0);
  PP_CHECK_STR(find(out, nout, "__name__"), "memory");
  PP_CHECK_STR(find(out, nout, "__delta__"), "false");
  PP_CHECK_STR(find(out, nout, "service_name"), "svc");
  PP_CHECK_INT(nout, ==, PYROSCOPE_MAX_LABELS);
  for (size_t i = 1; i < nout; i++)
    PP_CHECK(strcmp(out[i - 1].name, out[i].name) < 0);
  pyroscope_labels_free(out, nout);
}

static void test_pyroscope_label_name_rule(void) {
  PP_CHECK(pyroscope_label_name_valid("a"));
  PP_CHECK(pyroscope_label_name_valid("_a9"));
  PP_CHECK(!pyroscope_label_name_valid(""));
  PP_CHECK(!pyroscope_label_name_valid("9a"));
  PP_CHECK(!pyroscope_label_name_valid("a.b"));
  PP_CHECK(!pyroscope_label_name_valid("a-b"));
}

int main(void) {
  PP_RUN(test_pyroscope_labels_follow_pyroscope_rules);
  PP_RUN(test_pyroscope_label_name_rule);
  PP_DONE();
}
