/* Internal to pushprof's own pprof code (the proto library and views/, never
 * a public header): an open-addressing hash index over entries kept by the
 * caller in its own arrays (the table stores entry indices and 32-bit hash
 * tags only), a byte hash, and an id -> position map used by validation,
 * merge and the views. Not thread-safe; one owner at a time. */
#ifndef PP_HASH_H
#define PP_HASH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pp_htab_slot {
  uint32_t tag; /* high bits of the hash */
  uint32_t idx; /* entry index + 1; 0 = empty */
} pp_htab_slot;

typedef struct pp_htab {
  pp_htab_slot *slots;
  size_t mask; /* capacity - 1; capacity is a power of two */
  size_t count;
} pp_htab;

/* 64-bit finalizer (good avalanche for integer keys). */
static inline uint64_t pp_hash_mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

/* Hashes len bytes, continuing from seed. */
uint64_t pp_hash_bytes(const void *data, size_t len, uint64_t seed);

int pp_htab_init(pp_htab *t, size_t expected); /* 0 or -1 (ENOMEM) */
void pp_htab_free(pp_htab *t);
/* Records entry idx under hash h (the caller checked it is absent). 0 or -1. */
int pp_htab_insert(pp_htab *t, uint64_t h, uint32_t idx);

/* Returns the entry index for which eq(ctx, idx) holds among those stored
 * under h, or -1 and in *slot the empty slot where h goes (for
 * pp_htab_insert_at: one probe sequence instead of two). */
static inline int64_t pp_htab_find_slot(const pp_htab *t, uint64_t h,
                                        bool (*eq)(const void *ctx, uint32_t idx), const void *ctx,
                                        size_t *slot) {
  uint32_t tag = (uint32_t)(h >> 32);
  for (size_t i = (size_t)tag & t->mask;; i = (i + 1) & t->mask) {
    const pp_htab_slot *s = &t->slots[i];
    if (s->idx == 0) {
      *slot = i;
      return -1;
    }
    if (s->tag == tag && eq(ctx, s->idx - 1))
      return (int64_t)(s->idx - 1);
  }
}

static inline int64_t pp_htab_find(const pp_htab *t, uint64_t h,
                                   bool (*eq)(const void *ctx, uint32_t idx), const void *ctx) {
  size_t slot;
  return pp_htab_find_slot(t, h, eq, ctx, &slot);
}

/* pp_htab_insert at the slot pp_htab_find_slot gave for h, with no change to
 * t since. 0 or -1. */
int pp_htab_insert_at(pp_htab *t, size_t slot, uint64_t h, uint32_t idx);

/* Maps the ids of a repeated pprof message (mappings, functions, locations)
 * to their positions. Fill keys[0..n) after init, then call index. */
typedef struct pp_idmap {
  size_t n;
  uint64_t *keys;
  bool dense; /* keys[i] == i + 1 for all i: no table needed */
  pp_htab t;
} pp_idmap;

int pp_idmap_init(pp_idmap *m, size_t n); /* 0 or -1 (ENOMEM) */
/* 0 ok; -1 ENOMEM; 1 an id is zero; 2 an id repeats (*bad set to it). */
int pp_idmap_index(pp_idmap *m, uint64_t *bad);
/* init and index in one: the keys are the uint64_t at id_offset in each of
 * the n messages msgs[i] (a pprof repeated field: mapping, function,
 * location). The codes of pp_idmap_index. */
int pp_idmap_of(pp_idmap *m, const void *const *msgs, size_t n, size_t id_offset, uint64_t *bad);
int64_t pp_idmap_find_sparse(const pp_idmap *m, uint64_t id);
/* Position of id, or -1 if absent (inline: validation and merge look up
 * every location id of every sample, and builders' ids are dense). */
static inline int64_t pp_idmap_find(const pp_idmap *m, uint64_t id) {
  if (m->dense)
    return id >= 1 && id <= m->n ? (int64_t)(id - 1) : -1;
  return pp_idmap_find_sparse(m, id);
}
void pp_idmap_free(pp_idmap *m);
#endif
