/* The SDK's one way to say something: a line on stderr, written with one
 * write(2) so it is not interleaved with the host's output. Every line
 * starts with "pushprof: " (callers include it) and names the fix. */
#ifndef PUSHPROF_SDK_LOG_H
#define PUSHPROF_SDK_LOG_H

/* Writes one line (newline added, cut at 1 KiB). Thread-safe; not
 * async-signal-safe (vsnprintf). */
void sdk_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
