/* Hash index and id map for the pprof builder, validation and merge. */
#include "pp_hash.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t rotl64(uint64_t x, unsigned r) {
  return (x << r) | (x >> (64 - r));
}

/* The 8 bytes at p, least significant first (the order a little-endian
 * load gives; memcpy plus a swap elsewhere). */
static inline uint64_t load64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

static inline uint64_t load32(const unsigned char *p) {
  uint32_t w;
  memcpy(&w, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap32(w);
#endif
  return w;
}

/* Independent lanes of one multiply per 8 bytes (a merge hashes every
 * sample's stack: this was its biggest cost with a full mix per word), and
 * one full mix at the end. The last 1-7 bytes are one load too: the 8
 * bytes ending with them when the key has 8, else two overlapping 4-byte
 * loads or three single bytes (a byte loop there was a tenth of the
 * hashing of strings). Not keyed: the tables compare keys, so a collision
 * costs a probe, never a wrong answer. */
uint64_t pp_hash_bytes(const void *data, size_t len, uint64_t seed) {
  const unsigned char *p = data;
  const size_t total = len;
  uint64_t a = seed ^ (len * 0x9e3779b97f4a7c15ULL), b = ~seed + len;
  uint64_t w0, w1;
  if (len >= 64) { /* long keys (stacks): four lanes, folded into two */
    uint64_t c = seed + 0x165667b19e3779f9ULL, d = seed ^ 0x27d4eb2f165667c5ULL, w2, w3;
    do {
      w0 = load64(p);
      w1 = load64(p + 8);
      w2 = load64(p + 16);
      w3 = load64(p + 24);
      a = rotl64((a ^ w0) * 0x9e3779b97f4a7c15ULL, 31);
      b = rotl64((b ^ w1) * 0xc2b2ae3d27d4eb4fULL, 29);
      c = rotl64((c ^ w2) * 0x9e3779b97f4a7c15ULL, 27);
      d = rotl64((d ^ w3) * 0xc2b2ae3d27d4eb4fULL, 33);
      p += 32;
      len -= 32;
    } while (len >= 32);
    a ^= pp_hash_mix(c);
    b ^= pp_hash_mix(d);
  }
  while (len >= 16) {
    w0 = load64(p);
    w1 = load64(p + 8);
    a = rotl64((a ^ w0) * 0x9e3779b97f4a7c15ULL, 31);
    b = rotl64((b ^ w1) * 0xc2b2ae3d27d4eb4fULL, 29);
    p += 16;
    len -= 16;
  }
  if (len >= 8) {
    w0 = load64(p);
    a = rotl64((a ^ w0) * 0x9e3779b97f4a7c15ULL, 31);
    p += 8;
    len -= 8;
  }
  if (len) {
    if (total >= 8) /* the bytes before p were hashed: shifted out */
      w1 = load64(p + len - 8) >> (8 * (8 - len));
    else if (len >= 4) /* bytes 0-3 and len-4..len-1: every byte */
      w1 = load32(p) | load32(p + len - 4) << 32;
    else
      w1 = (uint64_t)p[0] | (uint64_t)p[len / 2] << 8 | (uint64_t)p[len - 1] << 16;
    b = rotl64((b ^ w1 ^ ((uint64_t)len << 56)) * 0xc2b2ae3d27d4eb4fULL, 29);
  }
  /* One mix of the two lanes together avalanches both (two mixes in a
   * chain before); b is rotated so that two lanes in the same state (a key
   * of equal words) do not cancel. */
  return pp_hash_mix(a ^ rotl64(b, 32));
}

int pp_htab_init(pp_htab *t, size_t expected) {
  size_t cap = 16;
  while (cap < expected * 2)
    cap <<= 1;
  t->slots = calloc(cap, sizeof *t->slots);
  if (!t->slots)
    return -1;
  t->mask = cap - 1;
  t->count = 0;
  return 0;
}

void pp_htab_free(pp_htab *t) {
  free(t->slots);
  t->slots = NULL;
  t->mask = 0;
  t->count = 0;
}

/* The tag (upper half of a well-mixed hash) also picks the position, so the
 * table can grow without the entries' full hashes. */
static void place(pp_htab_slot *slots, size_t mask, pp_htab_slot s) {
  size_t i = (size_t)s.tag & mask;
  while (slots[i].idx != 0)
    i = (i + 1) & mask;
  slots[i] = s;
}

int pp_htab_insert(pp_htab *t, uint64_t h, uint32_t idx) {
  if (idx == UINT32_MAX)
    return -1;
  if ((t->count + 1) * 2 > t->mask + 1) {
    size_t ncap = (t->mask + 1) * 2;
    pp_htab_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
      return -1;
    for (size_t i = 0; i <= t->mask; i++)
      if (t->slots[i].idx)
        place(ns, ncap - 1, t->slots[i]);
    free(t->slots);
    t->slots = ns;
    t->mask = ncap - 1;
  }
  pp_htab_slot s = {(uint32_t)(h >> 32), idx + 1};
  place(t->slots, t->mask, s);
  t->count++;
  return 0;
}

int pp_htab_insert_at(pp_htab *t, size_t slot, uint64_t h, uint32_t idx) {
  if ((t->count + 1) * 2 > t->mask + 1) /* it grows: the slot moves */
    return pp_htab_insert(t, h, idx);
  if (idx == UINT32_MAX)
    return -1;
  assert(slot <= t->mask && t->slots[slot].idx == 0);
  t->slots[slot] = (pp_htab_slot){(uint32_t)(h >> 32), idx + 1};
  t->count++;
  return 0;
}

static bool id_eq(const void *ctx, uint32_t idx) {
  const uint64_t *k = ctx;
  return ((const uint64_t *)k[0])[idx] == k[1];
}

int pp_idmap_init(pp_idmap *m, size_t n) {
  memset(m, 0, sizeof *m);
  m->n = n;
  m->keys = malloc((n ? n : 1) * sizeof *m->keys);
  return m->keys ? 0 : -1;
}

int pp_idmap_of(pp_idmap *m, const void *const *msgs, size_t n, size_t id_offset, uint64_t *bad) {
  if (pp_idmap_init(m, n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    memcpy(&m->keys[i], (const char *)msgs[i] + id_offset, sizeof m->keys[i]);
  return pp_idmap_index(m, bad);
}

int pp_idmap_index(pp_idmap *m, uint64_t *bad) {
  m->dense = true;
  for (size_t i = 0; i < m->n; i++) {
    if (m->keys[i] == 0)
      return 1;
    if (m->keys[i] != i + 1)
      m->dense = false;
  }
  if (m->dense)
    return 0;
  if (m->n >= UINT32_MAX || pp_htab_init(&m->t, m->n) != 0)
    return -1;
  for (size_t i = 0; i < m->n; i++) {
    uint64_t h = pp_hash_mix(m->keys[i]);
    if (pp_idmap_find(m, m->keys[i]) >= 0) {
      *bad = m->keys[i];
      return 2;
    }
    if (pp_htab_insert(&m->t, h, (uint32_t)i) != 0)
      return -1;
  }
  return 0;
}

int64_t pp_idmap_find_sparse(const pp_idmap *m, uint64_t id) {
  uint64_t ctx[2] = {(uint64_t)(uintptr_t)m->keys, id};
  return pp_htab_find(&m->t, pp_hash_mix(id), id_eq, ctx);
}

void pp_idmap_free(pp_idmap *m) {
  free(m->keys);
  m->keys = NULL;
  pp_htab_free(&m->t);
}
