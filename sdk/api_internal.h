/* Shared by the public API's own files (api.c, preload.c). */
#ifndef PUSHPROF_API_INTERNAL_H
#define PUSHPROF_API_INTERNAL_H

/* Writes one line (newline added) to stderr with a single write(2).
 * Thread-safe; not async-signal-safe (vsnprintf). */
void api_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
