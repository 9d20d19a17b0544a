/* The arena a decoded profile lives in (pp_decode.h, pp_parse.h): a few
 * large chunks instead of many small mallocs, freed at once. Freed chunks
 * are kept for reuse, their pages already faulted in. An arena is used by
 * one thread at a time; the chunk cache is thread-safe. */
#ifndef PP_ARENA_H
#define PP_ARENA_H
#include <stdbool.h>
#include <stddef.h>

#include "profile.pb-c.h"

typedef struct pp_pprof pp_pprof;
/* An empty arena (the first chunk of at least first_cap bytes, capped at
 * 256 MiB), for pp_pprof_arena_alloc; NULL on ENOMEM. Its allocations fail
 * (NULL) past ENOMEM; pp_pprof_arena_oom says whether one did. Free with
 * pp_pprof_free (NULL is fine). */
pp_pprof *pp_pprof_arena_new(size_t first_cap);
bool pp_pprof_arena_oom(const pp_pprof *a);
/* size bytes (16-byte aligned, uninitialized) from arena a, freed with it;
 * NULL (and the oom flag set) on ENOMEM. */
void *pp_pprof_arena_alloc(pp_pprof *a, size_t size);
/* The profile the arena holds (set by its decoder); NULL if none. */
const Perftools__Profiles__Profile *pp_pprof_profile(const pp_pprof *p);
void pp_pprof_set_profile(pp_pprof *a, Perftools__Profiles__Profile *p);
size_t pp_pprof_mem(const pp_pprof *p); /* bytes of the arena in use */
/* Thread-safe: a few freed chunks are kept for reuse; pp_pprof_cache_trim
 * returns them to the system. */
void pp_pprof_free(pp_pprof *p);
void pp_pprof_cache_trim(void);
#endif
