/* Shared by the public API's own files (api.c, preload.c, preload_exec.c). */
#ifndef PUSHPROF_API_INTERNAL_H
#define PUSHPROF_API_INTERNAL_H

/* The bounded final flush of exit(), also used before exec and _exit by the
 * preload library: stops sampling and pushes/writes the last window within
 * the exit timeout. Does nothing (returns 0) unless profiling runs in this
 * very process (not in a vfork or posix_spawn child). Returns 1 if it
 * stopped profiling. Not async-signal-safe. */
int api_final_flush(void);
#endif
