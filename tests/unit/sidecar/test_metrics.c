/* Unit tests for sidecar/metrics.c: the rendered text, labelled reasons,
 * the table's overflow into "other", and updates from several threads. */
#include <pthread.h>

#include "metrics.h"
#include "pp_test.h"

static void test_metrics_render_has_help_type_and_values(void) {
  metrics_add(M_PUSHES_RECEIVED, 3);
  metrics_add(M_PUSHES_RECEIVED, 2);
  metrics_set(G_SPOOL_BYTES, 4096);
  metrics_reject("bad_magic");
  metrics_reject("bad_magic");
  metrics_reject("invalid_pprof");
  metrics_drop("max_age", 7);
  char *out = metrics_render();
  PP_CHECK(out != NULL);
  if (!out)
    return;
  PP_CHECK(strstr(out, "# HELP pushprof_pushes_received_total ") != NULL);
  PP_CHECK(strstr(out, "# TYPE pushprof_pushes_received_total counter\n") != NULL);
  PP_CHECK(strstr(out, "\npushprof_pushes_received_total 5\n") != NULL);
  PP_CHECK(strstr(out, "# TYPE pushprof_spool_bytes gauge\n") != NULL);
  PP_CHECK(strstr(out, "\npushprof_spool_bytes 4096\n") != NULL);
  PP_CHECK(strstr(out, "# TYPE pushprof_pushes_rejected_total counter\n") != NULL);
  PP_CHECK(strstr(out, "pushprof_pushes_rejected_total{reason=\"bad_magic\"} 2\n") != NULL);
  PP_CHECK(strstr(out, "pushprof_pushes_rejected_total{reason=\"invalid_pprof\"} 1\n") != NULL);
  PP_CHECK(strstr(out, "pushprof_drops_total{reason=\"max_age\"} 7\n") != NULL);
  /* A reject reason is not a drop reason. */
  PP_CHECK(strstr(out, "pushprof_drops_total{reason=\"bad_magic\"}") == NULL);
  /* Every line ends in a newline and none is empty. */
  PP_CHECK(out[strlen(out) - 1] == '\n');
  PP_CHECK(strstr(out, "\n\n") == NULL);
  free(out);
  PP_CHECK_INT(metrics_reason_value("pushprof_pushes_rejected_total", "bad_magic"), ==, 2);
  PP_CHECK_INT(metrics_reason_value("rejected", "invalid_pprof"), ==, 1);
  PP_CHECK_INT(metrics_reason_value("drops", "max_age"), ==, 7);
  PP_CHECK_INT(metrics_reason_value("drops", "never_seen"), ==, 0);
}

static void test_metrics_many_reasons_fold_into_other(void) {
  static char names[100][16];
  for (int i = 0; i < 100; i++) {
    snprintf(names[i], sizeof names[i], "r%d", i);
    metrics_drop(names[i], 1);
  }
  uint64_t total = 0;
  for (int i = 0; i < 100; i++)
    total += metrics_reason_value("drops", names[i]);
  total += metrics_reason_value("drops", "other");
  PP_CHECK_INT(total, ==, 100);
  PP_CHECK(metrics_reason_value("drops", "other") > 0);
}

static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < 10000; i++) {
    metrics_add(M_EXPORT_RETRIES, 1);
    metrics_reject("threaded");
    metrics_set(G_OPEN_CONNECTIONS, i);
    if (i % 1000 == 0)
      free(metrics_render());
  }
  return NULL;
}

static void test_metrics_are_thread_safe(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    PP_CHECK_INT(pthread_create(&t[i], NULL, hammer, NULL), ==, 0);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  PP_CHECK_INT(metrics_reason_value("rejected", "threaded"), ==, 40000);
  char *out = metrics_render();
  PP_CHECK(out && strstr(out, "\npushprof_export_retries_total 40000\n"));
  free(out);
}

int main(void) {
  PP_RUN(test_metrics_render_has_help_type_and_values);
  PP_RUN(test_metrics_are_thread_safe);
  PP_RUN(test_metrics_many_reasons_fold_into_other); /* last: fills the reason table */
  PP_DONE();
}
