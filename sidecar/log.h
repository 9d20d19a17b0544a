/* One line per event, logfmt, on stderr:
 *   ts=2026-11-22T10:00:00.123Z level=info msg="push accepted" service=api bytes=1234
 * Thread-safe (one write(2) per line). Never log credentials. */
#ifndef SIDECAR_LOG_H
#define SIDECAR_LOG_H
#include <stdarg.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
/* Events below level are not written (LOG_INFO until set). */
void log_set_level(enum log_level level);
/* "debug", "info", "warn" or "error" (any case) into *out; -1 otherwise. */
int log_level_parse(const char *s, enum log_level *out);
/* fmt is the key=value tail after msg; values with spaces must be quoted by
 * the caller (use log_quote). */
void log_event(enum log_level level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* log_event with the arguments in ap (pushprof-sidecar-http.so logs through it). */
void log_vevent(enum log_level level, const char *msg, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Quotes s for logfmt into buf (always NUL-terminated); returns buf. */
const char *log_quote(const char *s, char *buf, unsigned long buflen);
#endif
