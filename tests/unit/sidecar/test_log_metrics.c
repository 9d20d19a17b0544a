/* Unit tests for sidecar/log.c and sidecar/metrics.c. */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "pp_test.h"

static void test_log_quote_escapes_quotes_newlines_and_truncates(void) {
  char buf[64];
  PP_CHECK_STR(log_quote("plain", buf, sizeof buf), "\"plain\"");
  PP_CHECK_STR(log_quote("a \"b\"\nc\\", buf, sizeof buf), "\"a \\\"b\\\"\\nc\\\\\"");
  PP_CHECK_STR(log_quote(NULL, buf, sizeof buf), "\"\"");
  char small[8];
  log_quote("abcdefghijkl", small, sizeof small);
  PP_CHECK_INT(strlen(small), <, sizeof small);
  PP_CHECK_INT(small[0], ==, '"');
  PP_CHECK_INT(small[strlen(small) - 1], ==, '"');
  PP_CHECK_STR(log_quote("\x01", buf, sizeof buf), "\"\\x01\"");
}

static void test_log_event_writes_one_logfmt_line(void) {
  char path[] = "/tmp/pp_test_logXXXXXX";
  int fd = mkstemp(path);
  PP_CHECK(fd >= 0);
  if (fd < 0)
    return;
  int saved = dup(STDERR_FILENO);
  PP_CHECK(dup2(fd, STDERR_FILENO) >= 0);
  char q[64];
  log_event(LOG_WARN, "push refused", "service=%s bytes=%d", log_quote("a b", q, sizeof q), 12);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  char line[512] = {0};
  ssize_t n = pread(fd, line, sizeof line - 1, 0);
  close(fd);
  unlink(path);
  PP_CHECK(n > 0);
  PP_CHECK(strncmp(line, "ts=", 3) == 0);
  PP_CHECK(strstr(line, " level=warn msg=\"push refused\" service=\"a b\" bytes=12\n") != NULL);
  PP_CHECK(strchr(line, '\n') == line + n - 1); /* exactly one line */
  PP_CHECK(line[26] == 'Z');                    /* ts=YYYY-MM-DDTHH:MM:SS.mmmZ */
}

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
  PP_RUN(test_log_quote_escapes_quotes_newlines_and_truncates);
  PP_RUN(test_log_event_writes_one_logfmt_line);
  PP_RUN(test_metrics_render_has_help_type_and_values);
  PP_RUN(test_metrics_are_thread_safe);
  PP_RUN(test_metrics_many_reasons_fold_into_other); /* last: fills the reason table */
  PP_DONE();
}
