/* proto/pprof/pp_hash.c: the byte hash depends on every bit of every byte,
 * on the length and the seed, not on alignment; the hash index finds each
 * entry it holds across growth and under colliding hashes; the id map
 * finds dense and sparse ids and refuses zero and repeated ones. */
#include <stdint.h>

#include "pp_hash.h"
#include "pp_test.h"

static uint64_t next(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dULL;
}

/* Every length through the 64-byte lanes: a flip of any one bit changes
 * the hash, as do the seed and one more byte; a copy at another address
 * hashes the same. */
static void test_hash_bytes_sees_every_bit_length_and_seed(void) {
  unsigned char buf[160], moved[168];
  uint64_t s = 7;
  for (size_t i = 0; i < sizeof buf; i++)
    buf[i] = (unsigned char)next(&s);
  int same = 0, moved_differs = 0;
  for (size_t len = 0; len < 150; len++) {
    uint64_t h = pp_hash_bytes(buf, len, 0);
    for (size_t i = 0; i < len; i++)
      for (int bit = 0; bit < 8; bit++) {
        buf[i] ^= (unsigned char)(1u << bit);
        same += pp_hash_bytes(buf, len, 0) == h;
        buf[i] ^= (unsigned char)(1u << bit);
      }
    same += pp_hash_bytes(buf, len, 1) == h;
    same += pp_hash_bytes(buf, len + 1, 0) == h;
    for (size_t off = 1; off < 8; off++) {
      memcpy(moved + off, buf, len);
      moved_differs += pp_hash_bytes(moved + off, len, 0) != h;
    }
  }
  PP_CHECK_INT(same, ==, 0);
  PP_CHECK_INT(moved_differs, ==, 0);
  /* A zero byte appended is a different key. */
  PP_CHECK(pp_hash_bytes("ab", 2, 0) != pp_hash_bytes("ab\0", 3, 0));
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The index keys on the tag (the hash's upper half), so small keys must
 * spread there: 65536 two-byte keys give distinct tags, and each of 256
 * positions by the tag's low bits gets a fair share. */
static void test_hash_bytes_spreads_small_keys(void) {
  enum { N = 65536 };
  static uint32_t tags[N];
  static unsigned buckets[256];
  for (uint32_t k = 0; k < N; k++) {
    unsigned char key[2] = {(unsigned char)k, (unsigned char)(k >> 8)};
    tags[k] = (uint32_t)(pp_hash_bytes(key, 2, 0) >> 32);
    buckets[tags[k] & 255]++;
  }
  unsigned lo = N, hi = 0;
  for (int i = 0; i < 256; i++) {
    lo = buckets[i] < lo ? buckets[i] : lo;
    hi = buckets[i] > hi ? buckets[i] : hi;
  }
  PP_CHECK(lo > 256 * 3 / 4 && hi < 256 * 5 / 4); /* 256 expected in each */
  qsort(tags, N, sizeof *tags, cmp_u32);
  int collisions = 0;
  for (uint32_t k = 1; k < N; k++)
    collisions += tags[k] == tags[k - 1];
  PP_CHECK_INT(collisions, <=, 2); /* ~0.5 expected among 2^16 of 2^32 */
}

typedef struct keys {
  const uint64_t *v;
  uint64_t want;
} keys;

static bool key_eq(const void *ctx, uint32_t idx) {
  const keys *k = ctx;
  return k->v[idx] == k->want;
}

/* hash_of(key): a real hash, or (collide) one of only four hashes, so
 * that entries of equal hash are told apart only by eq. */
static uint64_t hash_of(uint64_t key, bool collide) {
  return collide ? pp_hash_mix(key % 4) : pp_hash_mix(key);
}

static void test_htab_finds_each_entry_across_growth(void) {
  enum { N = 5000 };
  static uint64_t v[N];
  for (int collide = 0; collide < 2; collide++) {
    pp_htab t;
    PP_CHECK_INT(pp_htab_init(&t, 4), ==, 0);
    size_t cap0 = t.mask + 1;
    int n = collide ? N / 10 : N; /* colliding probes are long */
    for (int i = 0; i < n; i++) {
      v[i] = 1000003ULL * (uint64_t)i + 17;
      keys k = {v, v[i]};
      size_t slot = 0;
      uint64_t h = hash_of(v[i], collide);
      PP_CHECK_INT(pp_htab_find_slot(&t, h, key_eq, &k, &slot), ==, -1);
      /* Half through the slot just found, half the plain way. */
      PP_CHECK_INT(i % 2 ? pp_htab_insert_at(&t, slot, h, (uint32_t)i)
                         : pp_htab_insert(&t, h, (uint32_t)i),
                   ==, 0);
    }
    PP_CHECK_INT(t.count, ==, n);
    PP_CHECK(t.mask + 1 > cap0 && t.count * 2 <= t.mask + 1); /* grew, half full at most */
    int wrong = 0;
    for (int i = 0; i < n; i++) {
      keys k = {v, v[i]};
      wrong += pp_htab_find(&t, hash_of(v[i], collide), key_eq, &k) != i;
      keys absent = {v, v[i] + 1}; /* never a key: keys are 17 mod 1000003 */
      wrong += pp_htab_find(&t, hash_of(v[i] + 1, collide), key_eq, &absent) != -1;
    }
    PP_CHECK_INT(wrong, ==, 0);
    pp_htab_free(&t);
    PP_CHECK(t.slots == NULL && t.count == 0);
  }
}

static void test_htab_refuses_the_one_index_it_cannot_store(void) {
  pp_htab t;
  PP_CHECK_INT(pp_htab_init(&t, 0), ==, 0);
  PP_CHECK_INT(pp_htab_insert(&t, pp_hash_mix(1), UINT32_MAX), ==, -1);
  PP_CHECK_INT(pp_htab_insert(&t, pp_hash_mix(1), UINT32_MAX - 1), ==, 0);
  PP_CHECK_INT(t.count, ==, 1);
  pp_htab_free(&t);
}

static void test_idmap_dense_sparse_zero_and_repeat(void) {
  pp_idmap m;
  uint64_t bad = 0;
  PP_CHECK_INT(pp_idmap_init(&m, 100), ==, 0);
  for (size_t i = 0; i < 100; i++)
    m.keys[i] = i + 1;
  PP_CHECK_INT(pp_idmap_index(&m, &bad), ==, 0);
  PP_CHECK(m.dense);
  PP_CHECK_INT(pp_idmap_find(&m, 1), ==, 0);
  PP_CHECK_INT(pp_idmap_find(&m, 100), ==, 99);
  PP_CHECK_INT(pp_idmap_find(&m, 0), ==, -1);
  PP_CHECK_INT(pp_idmap_find(&m, 101), ==, -1);
  pp_idmap_free(&m);

  static const uint64_t sparse[] = {10, 5, 1ULL << 40, UINT64_MAX, 2};
  PP_CHECK_INT(pp_idmap_init(&m, 5), ==, 0);
  memcpy(m.keys, sparse, sizeof sparse);
  PP_CHECK_INT(pp_idmap_index(&m, &bad), ==, 0);
  PP_CHECK(!m.dense);
  for (size_t i = 0; i < 5; i++)
    PP_CHECK_INT(pp_idmap_find(&m, sparse[i]), ==, (long long)i);
  PP_CHECK_INT(pp_idmap_find(&m, 1), ==, -1);
  PP_CHECK_INT(pp_idmap_find(&m, 11), ==, -1);
  pp_idmap_free(&m);

  PP_CHECK_INT(pp_idmap_init(&m, 3), ==, 0);
  memcpy(m.keys, (uint64_t[]){4, 0, 9}, 3 * sizeof(uint64_t));
  PP_CHECK_INT(pp_idmap_index(&m, &bad), ==, 1);
  pp_idmap_free(&m);

  PP_CHECK_INT(pp_idmap_init(&m, 4), ==, 0);
  memcpy(m.keys, (uint64_t[]){7, 3, 8, 3}, 4 * sizeof(uint64_t));
  PP_CHECK_INT(pp_idmap_index(&m, &bad), ==, 2);
  PP_CHECK_INT(bad, ==, 3);
  pp_idmap_free(&m);

  PP_CHECK_INT(pp_idmap_init(&m, 0), ==, 0); /* no entries: nothing found */
  PP_CHECK_INT(pp_idmap_index(&m, &bad), ==, 0);
  PP_CHECK_INT(pp_idmap_find(&m, 1), ==, -1);
  pp_idmap_free(&m);
}

int main(void) {
  PP_RUN(test_hash_bytes_sees_every_bit_length_and_seed);
  PP_RUN(test_hash_bytes_spreads_small_keys);
  PP_RUN(test_htab_finds_each_entry_across_growth);
  PP_RUN(test_htab_refuses_the_one_index_it_cannot_store);
  PP_RUN(test_idmap_dense_sparse_zero_and_repeat);
  PP_DONE();
}
