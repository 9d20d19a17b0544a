/* proto/pprof/pp_arena.c: allocations are 16-byte aligned and disjoint
 * across chunk growth, the bytes in use are accounted, an impossible size
 * fails and sets the oom flag without spoiling the arena, the profile is
 * kept, and a freed arena's chunk serves the next arena. */
#include <stdint.h>

#include "pp_arena.h"
#include "pp_test.h"

static void test_arena_allocations_aligned_and_disjoint(void) {
  enum { N = 2000 };
  pp_pprof *a = pp_pprof_arena_new(100);
  PP_CHECK(a != NULL);
  if (!a)
    return;
  PP_CHECK_INT(pp_pprof_mem(a), ==, 0);
  PP_CHECK(pp_pprof_profile(a) == NULL);
  static unsigned char *ptr[N];
  static size_t size[N];
  size_t want_mem = 0;
  uint32_t x = 12345;
  for (int i = 0; i < N; i++) { /* about 2 MB in all: several chunks */
    x = x * 1103515245u + 12345u;
    size[i] = i % 10 == 0 ? 0 : (x >> 8) % 2000;
    ptr[i] = pp_pprof_arena_alloc(a, size[i]);
    PP_CHECK(ptr[i] != NULL);
    if (!ptr[i])
      break;
    PP_CHECK_INT((uintptr_t)ptr[i] % 16, ==, 0);
    memset(ptr[i], (unsigned char)i, size[i]);
    want_mem += size[i] ? (size[i] + 15) / 16 * 16 : 16;
  }
  PP_CHECK_INT(pp_pprof_mem(a), ==, want_mem);
  int damaged = 0;
  for (int i = 0; i < N && ptr[i]; i++)
    for (size_t j = 0; j < size[i]; j++)
      damaged += ptr[i][j] != (unsigned char)i;
  PP_CHECK_INT(damaged, ==, 0);
  /* A zero-byte allocation still gets a place of its own. */
  unsigned char *z1 = pp_pprof_arena_alloc(a, 0), *z2 = pp_pprof_arena_alloc(a, 0);
  PP_CHECK(z1 && z2 && z1 != z2);
  PP_CHECK(!pp_pprof_arena_oom(a));
  pp_pprof_free(a);
}

static void test_arena_oversized_request_fails_and_flags_oom(void) {
  pp_pprof *a = pp_pprof_arena_new(0);
  PP_CHECK(a != NULL);
  if (!a)
    return;
  PP_CHECK(!pp_pprof_arena_oom(a));
  PP_CHECK(pp_pprof_arena_alloc(a, SIZE_MAX) == NULL);
  PP_CHECK(pp_pprof_arena_oom(a));
  PP_CHECK(pp_pprof_arena_alloc(a, SIZE_MAX - 64) == NULL);
  /* The arena still serves what fits, and the flag stays set. */
  void *p = pp_pprof_arena_alloc(a, 100);
  PP_CHECK(p != NULL);
  PP_CHECK_INT(pp_pprof_mem(a), ==, 112);
  PP_CHECK(pp_pprof_arena_oom(a));
  pp_pprof_free(a);
  pp_pprof_free(NULL);
}

static void test_arena_keeps_its_profile(void) {
  pp_pprof *a = pp_pprof_arena_new(1024);
  PP_CHECK(a != NULL);
  if (!a)
    return;
  Perftools__Profiles__Profile *p = pp_pprof_arena_alloc(a, sizeof *p);
  PP_CHECK(p != NULL);
  if (p) {
    perftools__profiles__profile__init(p);
    p->period = 10000000;
    pp_pprof_set_profile(a, p);
  }
  PP_CHECK(pp_pprof_profile(a) == p);
  PP_CHECK(p && pp_pprof_profile(a)->period == 10000000);
  pp_pprof_free(a);
}

static void test_arena_reuses_a_freed_chunk(void) {
  pp_pprof *a = pp_pprof_arena_new(4096);
  uintptr_t first = a ? (uintptr_t)pp_pprof_arena_alloc(a, 64) : 0;
  PP_CHECK(first != 0);
  pp_pprof_free(a);
  /* The chunk went to the cache: the next arena starts in it. */
  pp_pprof *b = pp_pprof_arena_new(4096);
  uintptr_t again = b ? (uintptr_t)pp_pprof_arena_alloc(b, 64) : 0;
  PP_CHECK(again != 0);
  PP_CHECK(again == first);
  pp_pprof_free(b);
  pp_pprof_cache_trim();
}

int main(void) {
  PP_RUN(test_arena_allocations_aligned_and_disjoint);
  PP_RUN(test_arena_oversized_request_fails_and_flags_oom);
  PP_RUN(test_arena_keeps_its_profile);
  PP_RUN(test_arena_reuses_a_freed_chunk);
  pp_pprof_cache_trim();
  PP_DONE();
}
