/* The profile types by their PUSHPROF_PROFILE_* bit: what cuts each
 * window, and whether a window holds anything. CPU is the sampler's, heap
 * the heap profiler's (heap/), off-CPU and lock the wait profiler's
 * (wait/). Each type is cut, written and pushed on its own. */
#ifndef PUSHPROF_PROFILES_H
#define PUSHPROF_PROFILES_H
#include <stddef.h>
#include <stdint.h>

#include "pushprof.h"

#define PROFILES_FIRST PUSHPROF_PROFILE_CPU
#define PROFILES_LAST PUSHPROF_PROFILE_LOCK
#define PROFILES_ALL                                                                               \
  (PUSHPROF_PROFILE_CPU | PUSHPROF_PROFILE_HEAP | PUSHPROF_PROFILE_OFFCPU | PUSHPROF_PROFILE_LOCK)
#define PROFILES_WAIT (PUSHPROF_PROFILE_OFFCPU | PUSHPROF_PROFILE_LOCK)

/* Cuts bit's window: an uncompressed pprof. 0 or a negative PUSHPROF_E*. */
int profiles_cut(unsigned bit, uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
/* An on-demand session's profile: CPU ends session id and cuts its table,
 * heap takes a snapshot (the window goes on); other types PUSHPROF_EINVAL. */
int profiles_session_cut(unsigned bit, uint64_t id, uint8_t **out, size_t *len, int64_t *start_ns,
                         int64_t *end_ns);
/* 1 if bit's window holds nothing. */
int profiles_window_empty(unsigned bit);
/* 1 if the window of every type in profiles holds nothing. */
int profiles_windows_empty(unsigned profiles);
/* The wait profiler's kinds (1 << WAIT_*) for the bits in profiles. */
unsigned profiles_wait_mask(unsigned profiles);
#endif
