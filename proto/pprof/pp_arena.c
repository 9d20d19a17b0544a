/* Arenas for decoded profiles: a few large chunks instead of many small
 * mallocs, and a small cache of freed chunks whose pages are already
 * faulted in. */
#include "pp_arena.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define ARENA_ALIGN 16
#define ARENA_SLACK ((size_t)64 << 10)
#define ARENA_FIRST_MAX ((size_t)256 << 20)
/* Chunks kept for reuse (their pages are already faulted in: a fresh 6 MiB
 * arena costs ~1,500 page faults, as much again as the decoding itself). */
#define CACHE_MAX_CHUNKS 8
#define CACHE_MAX_TOUCHED ((size_t)8 << 20)

typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t used, cap;
  size_t touched; /* high-water mark of used: what the chunk holds in RAM */
  _Alignas(ARENA_ALIGN) unsigned char mem[];
} arena_chunk;

struct pp_pprof {
  Perftools__Profiles__Profile *prof;
  arena_chunk *chunks;
  size_t total;
  size_t next_cap;
  bool oom;
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static arena_chunk *cache;
static size_t cache_n, cache_touched;

/* The smallest cached chunk of at least min bytes, else a new one of cap. */
static arena_chunk *chunk_get(size_t min, size_t cap) {
  arena_chunk *best = NULL, **bestp = NULL;
  pthread_mutex_lock(&cache_mu);
  for (arena_chunk **pp = &cache; *pp; pp = &(*pp)->next)
    if ((*pp)->cap >= min && (!best || (*pp)->cap < best->cap)) {
      best = *pp;
      bestp = pp;
    }
  if (best) {
    *bestp = best->next;
    cache_n--;
    cache_touched -= best->touched;
  }
  pthread_mutex_unlock(&cache_mu);
  if (best) {
    best->used = 0;
    return best;
  }
  if (cap > SIZE_MAX - sizeof(arena_chunk))
    return NULL;
  arena_chunk *c = malloc(sizeof *c + cap);
  if (c) {
    c->cap = cap;
    c->used = 0;
    c->touched = 0;
  }
  return c;
}

static void chunk_put(arena_chunk *c) {
  if (c->used > c->touched)
    c->touched = c->used;
  pthread_mutex_lock(&cache_mu);
  bool keep = cache_n < CACHE_MAX_CHUNKS && cache_touched + c->touched <= CACHE_MAX_TOUCHED;
  if (keep) {
    c->next = cache;
    cache = c;
    cache_n++;
    cache_touched += c->touched;
  }
  pthread_mutex_unlock(&cache_mu);
  if (!keep)
    free(c);
}

void pp_pprof_cache_trim(void) {
  pthread_mutex_lock(&cache_mu);
  arena_chunk *c = cache;
  cache = NULL;
  cache_n = 0;
  cache_touched = 0;
  pthread_mutex_unlock(&cache_mu);
  while (c) {
    arena_chunk *n = c->next;
    free(c);
    c = n;
  }
}

void *pp_pprof_arena_alloc(pp_pprof *a, size_t size) {
  /* No object is larger than PTRDIFF_MAX (malloc's own limit): such a
   * request fails here, without asking malloc. */
  if (size > (size_t)PTRDIFF_MAX - ARENA_ALIGN) {
    a->oom = true;
    return NULL;
  }
  size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (size == 0)
    size = ARENA_ALIGN;
  arena_chunk *c = a->chunks;
  if (!c || c->cap - c->used < size) {
    size_t cap = a->next_cap < size ? size : a->next_cap;
    c = chunk_get(size, cap);
    if (!c) {
      a->oom = true;
      return NULL;
    }
    c->next = a->chunks;
    a->chunks = c;
    a->total += c->cap;
    a->next_cap = c->cap <= SIZE_MAX / 2 ? c->cap * 2 : c->cap;
  }
  void *p = c->mem + c->used;
  c->used += size;
  return p;
}

void pp_pprof_free(pp_pprof *p) {
  if (!p)
    return;
  arena_chunk *c = p->chunks;
  while (c) {
    arena_chunk *n = c->next;
    chunk_put(c);
    c = n;
  }
  free(p);
}

const Perftools__Profiles__Profile *pp_pprof_profile(const pp_pprof *p) {
  return p->prof;
}

size_t pp_pprof_mem(const pp_pprof *p) {
  size_t used = 0;
  for (const arena_chunk *c = p->chunks; c; c = c->next)
    used += c->used;
  return used;
}

pp_pprof *pp_pprof_arena_new(size_t first_cap) {
  pp_pprof *a = calloc(1, sizeof *a);
  if (a)
    a->next_cap =
        first_cap < ARENA_FIRST_MAX - ARENA_SLACK ? first_cap + ARENA_SLACK : ARENA_FIRST_MAX;
  return a;
}

bool pp_pprof_arena_oom(const pp_pprof *a) {
  return a->oom;
}

void pp_pprof_set_profile(pp_pprof *a, Perftools__Profiles__Profile *p) {
  a->prof = p;
}
