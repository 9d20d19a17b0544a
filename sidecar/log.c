/* logfmt lines on stderr, one write(2) per line so concurrent threads never
 * interleave within a line. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 4096

/* Per-push events are debug: at info (the default) a busy sidecar writes
 * lines for what changes, not one per push. */
static atomic_int min_level = LOG_INFO;

void log_set_level(enum log_level level) {
  atomic_store(&min_level, (int)level);
}

int log_level_parse(const char *s, enum log_level *out) {
  static const struct {
    const char *name;
    enum log_level level;
  } names[] = {{"debug", LOG_DEBUG}, {"info", LOG_INFO}, {"warn", LOG_WARN}, {"error", LOG_ERROR}};
  for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0) {
      *out = names[i].level;
      return 0;
    }
  return -1;
}

static const char *level_name(enum log_level level) {
  switch (level) {
  case LOG_DEBUG:
    return "debug";
  case LOG_INFO:
    return "info";
  case LOG_WARN:
    return "warn";
  case LOG_ERROR:
    return "error";
  }
  return "info";
}

const char *log_quote(const char *s, char *buf, unsigned long buflen) {
  if (!buf || buflen == 0)
    return "";
  if (!s)
    s = "";
  size_t o = 0;
  /* Reserve room for the closing quote and NUL. */
  if (buflen < 3) {
    buf[0] = '\0';
    return buf;
  }
  buf[o++] = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[5];
    size_t n;
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      n = 2;
    } else if (*p == '\n') {
      memcpy(esc, "\\n", 2);
      n = 2;
    } else if (*p == '\r') {
      memcpy(esc, "\\r", 2);
      n = 2;
    } else if (*p == '\t') {
      memcpy(esc, "\\t", 2);
      n = 2;
    } else if (*p < 0x20 || *p == 0x7f) {
      snprintf(esc, sizeof esc, "\\x%02x", *p);
      n = 4;
    } else {
      esc[0] = (char)*p;
      n = 1;
    }
    if (o + n + 2 > buflen) /* closing quote + NUL */
      break;
    memcpy(buf + o, esc, n);
    o += n;
  }
  buf[o++] = '"';
  buf[o] = '\0';
  return buf;
}

void log_event(enum log_level level, const char *msg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_vevent(level, msg, fmt, ap);
  va_end(ap);
}

void log_vevent(enum log_level level, const char *msg, const char *fmt, va_list ap) {
  if ((int)level < atomic_load_explicit(&min_level, memory_order_relaxed))
    return;
  int saved = errno;
  char line[LOG_LINE_MAX];
  char qmsg[512];
  struct timespec ts;
  struct tm tm;
  size_t o = 0;
  int n;

  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
    ts.tv_sec = 0;
    ts.tv_nsec = 0;
  }
  if (!gmtime_r(&ts.tv_sec, &tm))
    memset(&tm, 0, sizeof tm);
  n = snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=%s",
               tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
               ts.tv_nsec / 1000000L, level_name(level), log_quote(msg, qmsg, sizeof qmsg));
  if (n < 0)
    goto out;
  o = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (fmt && *fmt && o + 2 < sizeof line) {
    line[o++] = ' ';
    n = vsnprintf(line + o, sizeof line - o, fmt, ap);
    if (n < 0)
      n = 0;
    o += (size_t)n < sizeof line - o ? (size_t)n : sizeof line - o - 1;
  }
  /* A truncated line still ends in a newline. */
  if (o >= sizeof line - 1)
    o = sizeof line - 2;
  line[o++] = '\n';
  {
    size_t off = 0;
    while (off < o) {
      ssize_t w = write(STDERR_FILENO, line + off, o - off);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      off += (size_t)w;
    }
  }
out:
  errno = saved;
}
