/* Interface between the sampler (collector thread) and symbolization: turns
 * aggregated stacks into an uncompressed pprof with mappings (file, offset,
 * build id from /proc/self/maps and ELF notes), locations and demangled
 * function names. Collector thread only; never from a signal handler. */
#ifndef PUSHPROF_PROFBUILD_H
#define PUSHPROF_PROFBUILD_H
#include <stddef.h>
#include <stdint.h>

#include "pp_builder.h"

typedef struct profbuild_stack {
  const uintptr_t *pcs; /* leaf first: pcs[0] is the interrupted pc, the rest return addresses */
  uint32_t depth;
  const pp_label *labels; /* per-sample string labels (trace_id, ...) */
  size_t nlabels;
  int64_t count; /* samples; cpu/nanoseconds = count * period */
  /* Non-NULL: a pseudo-frame with this name, e.g. "[pushprof] ring full",
   * as the leaf; pcs (may be NULL) are its callers. */
  const char *special;
  /* With profbuild_meta.types: this stack's values, one per type (count is
   * then unused). */
  const int64_t *values;
  int leaf_is_return; /* pcs[0] is a return address too (a walk from our own code) */
} profbuild_stack;

typedef struct profbuild_type {
  const char *type, *unit;
} profbuild_type;

typedef struct profbuild_meta {
  int64_t period_ns; /* 1e9 / hz */
  int64_t time_nanos;
  int64_t duration_nanos;
  const char *const *comments;
  size_t ncomments;
  /* NULL: the CPU layout (samples/count and cpu/nanoseconds from each
   * stack's count; period cpu/nanoseconds = period_ns). Else these sample
   * types, each stack's values, and the period below. */
  const profbuild_type *types;
  size_t ntypes;
  profbuild_type period_type;
  int64_t period;
  const char *default_type; /* may be NULL */
} profbuild_meta;

typedef struct profbuild profbuild; /* caches mappings and ELF symbols by build id */

profbuild *profbuild_new(void);
void profbuild_free(profbuild *pb);
/* Re-reads /proc/self/maps (call before build so dlopen'ed code is known),
 * and takes the libraries retained since (profbuild_retain_library). */
int profbuild_refresh_maps(profbuild *pb);
/* Keeps what the next two builds need to name pcs in the library of a dlopen
 * handle about to be dlclose'd: its executable mappings and its symbols,
 * read now (at most PROFBUILD_RETAIN_MAX libraries wait for a build). Any
 * thread, never a signal handler; takes no lock (a lock-free list). */
#define PROFBUILD_RETAIN_MAX 64
void profbuild_retain_library(void *handle);
/* Builds the pprof. *out malloc'ed, caller frees. Returns 0 or -1. */
int profbuild_build(profbuild *pb, const profbuild_stack *stacks, size_t n,
                    const profbuild_meta *meta, uint8_t **out, size_t *len);
#endif
