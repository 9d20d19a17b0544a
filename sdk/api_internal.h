/* Shared by the public API's own files (api.c, preload.c). */
#ifndef PUSHPROF_API_INTERNAL_H
#define PUSHPROF_API_INTERNAL_H

/* Writes one line (newline added) to stderr with a single write(2).
 * Thread-safe; not async-signal-safe (vsnprintf). */
void api_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The bounded final flush of exit(), also used before exec and _exit by the
 * preload library: stops sampling and pushes/writes the last window within
 * the exit timeout. Does nothing (returns 0) unless profiling runs in this
 * very process (not in a vfork or posix_spawn child). Returns 1 if it
 * stopped profiling. Not async-signal-safe. */
int api_final_flush(void);
#endif
