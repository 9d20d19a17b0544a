/* sdk_log (sdk/sdk_log.c): what reaches stderr. stderr is pointed at a
 * pipe while sdk_log runs and restored before anything is checked, so a
 * failing check still prints. */
#include <string.h>
#include <unistd.h>

#include "pp_test.h"
#include "sdk_log.h"

/* Reads what is in the pipe (at most cap - 1 bytes), NUL-terminated. */
static size_t drain(int fd, char *buf, size_t cap) {
  size_t n = 0;
  ssize_t r;
  while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
    n += (size_t)r;
  buf[n] = '\0';
  return n;
}

/* Runs sdk_log("%s%s", a, b) with stderr on a pipe; what it wrote is in
 * buf. Returns its length, or -1 if the pipe could not be set up. */
static long capture(const char *a, const char *b, char *buf, size_t cap) {
  int p[2];
  if (pipe(p) != 0)
    return -1;
  int saved = dup(STDERR_FILENO);
  if (saved < 0 || dup2(p[1], STDERR_FILENO) < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  close(p[1]);
  sdk_log("%s%s", a, b);
  dup2(saved, STDERR_FILENO); /* closes the pipe's last write end */
  close(saved);
  size_t n = drain(p[0], buf, cap);
  close(p[0]);
  return (long)n;
}

static void test_sdk_log_writes_one_formatted_line(void) {
  char buf[4096];
  long n = capture("pushprof: cannot open x: ", "No such file", buf, sizeof buf);
  PP_CHECK_STR(buf, "pushprof: cannot open x: No such file\n");
  PP_CHECK_INT(n, ==, (long)strlen("pushprof: cannot open x: No such file\n"));
  n = capture("", "", buf, sizeof buf); /* an empty message is still a line */
  PP_CHECK_STR(buf, "\n");
  PP_CHECK_INT(n, ==, 1);
}

/* The line buffer is 1 KiB: 1022 characters and the newline fit; a longer
 * message keeps its first 1022 characters and still ends the line. */
static void test_sdk_log_cuts_long_messages_and_keeps_the_newline(void) {
  static char msg[3000], want[1024], buf[4096];
  for (size_t i = 0; i < sizeof msg - 1; i++)
    msg[i] = (char)('a' + i % 26);
  char head[] = "pushprof: ";
  memcpy(want, head, sizeof head - 1);
  memcpy(want + sizeof head - 1, msg, 1022 - (sizeof head - 1));
  want[1022] = '\n';

  long n = capture(head, msg, buf, sizeof buf);
  PP_CHECK_INT(n, ==, 1023);
  PP_CHECK(n == 1023 && memcmp(buf, want, 1023) == 0);

  msg[1022 - (sizeof head - 1)] = '\0'; /* exactly the longest line kept whole */
  n = capture(head, msg, buf, sizeof buf);
  PP_CHECK_INT(n, ==, 1023);
  PP_CHECK(n == 1023 && memcmp(buf, want, 1023) == 0);

  msg[1021 - (sizeof head - 1)] = '\0'; /* one shorter: not cut either */
  n = capture(head, msg, buf, sizeof buf);
  PP_CHECK_INT(n, ==, 1022);
  PP_CHECK(n == 1022 && memcmp(buf, want, 1021) == 0 && buf[1021] == '\n');
}

int main(void) {
  PP_RUN(test_sdk_log_writes_one_formatted_line);
  PP_RUN(test_sdk_log_cuts_long_messages_and_keeps_the_newline);
  PP_DONE();
}
