/* Unit tests for sidecar/log.c: quoting of values, the logfmt line, levels. */
#include <fcntl.h>
#include <unistd.h>

#include "log.h"
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

/* Runs one log_event with stderr redirected; what it wrote, NUL-terminated. */
static ssize_t capture_event(enum log_level level, const char *msg, char *out, size_t outlen) {
  char path[] = "/tmp/pp_test_logXXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  log_event(level, msg, "k=%d", 1);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  ssize_t n = pread(fd, out, outlen - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(path);
  return n;
}

static void test_log_level_parse_and_filter(void) {
  enum log_level l = LOG_ERROR;
  PP_CHECK_INT(log_level_parse("debug", &l), ==, 0);
  PP_CHECK_INT(l, ==, LOG_DEBUG);
  PP_CHECK_INT(log_level_parse("WARN", &l), ==, 0);
  PP_CHECK_INT(l, ==, LOG_WARN);
  PP_CHECK_INT(log_level_parse("Error", &l), ==, 0);
  PP_CHECK_INT(l, ==, LOG_ERROR);
  PP_CHECK_INT(log_level_parse("info", &l), ==, 0);
  PP_CHECK_INT(l, ==, LOG_INFO);
  l = LOG_DEBUG;
  PP_CHECK_INT(log_level_parse("warning", &l), ==, -1);
  PP_CHECK_INT(log_level_parse("", &l), ==, -1);
  PP_CHECK_INT(l, ==, LOG_DEBUG); /* left alone on failure */

  char line[512];
  /* The default level writes info and drops debug. */
  PP_CHECK_INT(capture_event(LOG_DEBUG, "quiet", line, sizeof line), ==, 0);
  PP_CHECK(capture_event(LOG_INFO, "heard", line, sizeof line) > 0);
  PP_CHECK(strstr(line, " level=info msg=\"heard\" k=1\n") != NULL);
  log_set_level(LOG_ERROR);
  PP_CHECK_INT(capture_event(LOG_WARN, "quiet", line, sizeof line), ==, 0);
  PP_CHECK(capture_event(LOG_ERROR, "loud", line, sizeof line) > 0);
  PP_CHECK(strstr(line, " level=error msg=\"loud\" k=1\n") != NULL);
  log_set_level(LOG_DEBUG);
  PP_CHECK(capture_event(LOG_DEBUG, "now heard", line, sizeof line) > 0);
  PP_CHECK(strstr(line, " level=debug msg=\"now heard\" k=1\n") != NULL);
  log_set_level(LOG_INFO);
}

int main(void) {
  PP_RUN(test_log_quote_escapes_quotes_newlines_and_truncates);
  PP_RUN(test_log_event_writes_one_logfmt_line);
  PP_RUN(test_log_level_parse_and_filter);
  PP_DONE();
}
