/* The profile types by bit (profiles.h). */
#include "profiles.h"

#include "collector.h"
#include "heap.h"
#include "sampler.h"
#include "wait.h"

int profiles_cut(unsigned bit, uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  switch (bit) {
  case PUSHPROF_PROFILE_HEAP:
    return heap_cut(out, len, start_ns, end_ns);
  case PUSHPROF_PROFILE_OFFCPU:
    return wait_cut(WAIT_OFFCPU, out, len, start_ns, end_ns);
  case PUSHPROF_PROFILE_LOCK:
    return wait_cut(WAIT_LOCK, out, len, start_ns, end_ns);
  default:
    return sampler_cut(out, len, start_ns, end_ns);
  }
}

int profiles_window_empty(unsigned bit) {
  switch (bit) {
  case PUSHPROF_PROFILE_HEAP:
    return heap_window_empty();
  case PUSHPROF_PROFILE_OFFCPU:
    return wait_window_empty(WAIT_OFFCPU);
  case PUSHPROF_PROFILE_LOCK:
    return wait_window_empty(WAIT_LOCK);
  default:
    return sampler_window_empty();
  }
}

int profiles_windows_empty(unsigned profiles) {
  for (unsigned bit = PROFILES_FIRST; bit <= PROFILES_LAST; bit <<= 1)
    if ((profiles & bit) && !profiles_window_empty(bit))
      return 0;
  return 1;
}

unsigned profiles_wait_mask(unsigned profiles) {
  return (profiles & PUSHPROF_PROFILE_OFFCPU ? 1u << WAIT_OFFCPU : 0) |
         (profiles & PUSHPROF_PROFILE_LOCK ? 1u << WAIT_LOCK : 0);
}

int profiles_session_cut(unsigned bit, uint64_t id, uint8_t **out, size_t *len, int64_t *start_ns,
                         int64_t *end_ns) {
  switch (bit) {
  case PUSHPROF_PROFILE_HEAP:
    return heap_snapshot(out, len, start_ns, end_ns);
  case PUSHPROF_PROFILE_CPU:
    return collector_session_cut(id, out, len, start_ns, end_ns);
  default:
    return PUSHPROF_EINVAL;
  }
}
