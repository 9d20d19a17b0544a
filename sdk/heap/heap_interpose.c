/* libpushprof_heap.so, the allocation interposers: malloc, calloc,
 * realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign,
 * valloc and pvalloc call the next definition (libc's, or an allocator
 * preloaded after us) and tell the heap profiler in the SDK through the
 * hooks of heap_hooks.h. C++'s operator new and delete reach them through
 * libstdc++. This object depends on nothing of the SDK's: loaded without
 * it, or with heap profiling off, an allocation costs one load and a
 * branch more than the allocator's own; a free, one load and a branch.
 *
 * The next definitions are looked up with dlsym(RTLD_NEXT), once, at the
 * first allocation (the loader and libc allocate before any constructor of
 * ours runs). dlsym itself allocates: what it asks for meanwhile comes from
 * a small static arena whose blocks are never given back. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap_hooks.h"

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);

/* The next definitions; all NULL until resolved, free stored last. */
static struct {
  _Atomic(malloc_fn) malloc;
  _Atomic(calloc_fn) calloc;
  _Atomic(realloc_fn) realloc;
  _Atomic(free_fn) free;
  _Atomic(posix_memalign_fn) posix_memalign;
  _Atomic(memalign_fn) memalign, aligned_alloc;
  _Atomic(malloc_fn) valloc, pvalloc;
} R;

#define REAL(name) atomic_load_explicit(&R.name, memory_order_relaxed)

static void *malloc_first(size_t n);
static void free_first(void *p);

/* Where malloc's and free's fast paths jump: never NULL. Until the next
 * definitions are known, functions that resolve them first; then the
 * allocator's own, except that free stays free_first for good if the
 * bootstrap arena handed out a block (those must never reach the
 * allocator). */
static struct {
  _Atomic(malloc_fn) malloc;
  _Atomic(free_fn) free;
} J = {malloc_first, free_first};

/* ---- the bootstrap arena (during dlsym) ---- */

static _Alignas(64) unsigned char g_boot[16384];
#define BOOT_CLOSED SIZE_MAX /* g_boot_used once resolved: no new block */
static _Atomic size_t g_boot_used;
static _Atomic int g_resolving;

static inline int in_boot(const void *p) {
  return (uintptr_t)p - (uintptr_t)g_boot < sizeof g_boot;
}

/* Each block is preceded by its size (for realloc). NULL when the arena is
 * full or closed (then the next definitions are known: see ready). */
static void *boot_alloc(size_t n, size_t align) {
  if (align < 16)
    align = 16;
  if (n > sizeof g_boot || align > 4096)
    return NULL;
  size_t used = atomic_load(&g_boot_used), start, end;
  do {
    if (used == BOOT_CLOSED)
      return NULL;
    start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
    end = start + n;
    if (end > sizeof g_boot)
      return NULL;
  } while (!atomic_compare_exchange_weak(&g_boot_used, &used, end));
  memcpy(g_boot + start - sizeof(size_t), &n, sizeof n);
  return g_boot + start;
}

static size_t boot_size(const void *p) {
  size_t n;
  memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
  return n;
}

static void resolve(void) {
  if (atomic_exchange(&g_resolving, 1))
    return; /* another thread is resolving: it will be done shortly */
  atomic_store(&R.malloc, (malloc_fn)dlsym(RTLD_NEXT, "malloc"));
  atomic_store(&R.calloc, (calloc_fn)dlsym(RTLD_NEXT, "calloc"));
  atomic_store(&R.realloc, (realloc_fn)dlsym(RTLD_NEXT, "realloc"));
  atomic_store(&R.posix_memalign, (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign"));
  atomic_store(&R.memalign, (memalign_fn)dlsym(RTLD_NEXT, "memalign"));
  atomic_store(&R.aligned_alloc, (memalign_fn)dlsym(RTLD_NEXT, "aligned_alloc"));
  atomic_store(&R.valloc, (malloc_fn)dlsym(RTLD_NEXT, "valloc"));
  atomic_store(&R.pvalloc, (malloc_fn)dlsym(RTLD_NEXT, "pvalloc"));
  free_fn f = (free_fn)dlsym(RTLD_NEXT, "free");
  atomic_store(&R.free, f);
  if (f && REAL(malloc)) {
    /* Closed after R is complete: a caller that finds it closed finds the
     * next definitions known. */
    size_t used = atomic_exchange(&g_boot_used, BOOT_CLOSED);
    atomic_store(&J.free, used ? free_first : f);
    atomic_store(&J.malloc, REAL(malloc));
  }
  atomic_store(&g_resolving, 0);
}

/* 1 once the next definitions are known; 0 while dlsym runs (the caller
 * then uses the arena, or, if that is closed meanwhile, asks again). */
static inline int ready(void) {
  if (__builtin_expect(REAL(free) != NULL, 1))
    return 1;
  if (atomic_load(&g_resolving))
    return 0;
  resolve();
  return REAL(free) != NULL;
}

/* A block from the arena while dlsym runs: 1 with *out set, else 0 (the
 * next definitions are known by now, or nothing can be had). */
static int boot_take(size_t n, size_t align, void **out) {
  if (ready())
    return 0;
  *out = boot_alloc(n, align);
  return *out != NULL || !ready();
}

/* ---- the hooks ---- */

static __thread heap_tls g_tls __attribute__((tls_model("initial-exec")));

static heap_tls *self(void) {
  return &g_tls;
}

static int is_ours(void);
static void real_free(void *p);

static heap_hooks H = {
    .self = self,
    .is_ours = is_ours,
    .real_free = real_free,
    .own_code = (const void *)(uintptr_t)self,
};

__attribute__((visibility("default"))) heap_hooks *pushprof_heap_hooks_v1(void);
heap_hooks *pushprof_heap_hooks_v1(void) {
  return &H;
}

#define after_alloc(p, n) heap_fast_after_alloc(&H, &g_tls, (p), (n))

/* ---- the interposers ---- */

/* malloc and free are the hot pair. malloc's fast path is the jump
 * target's load, the thread's byte count and the jump; free's, the jump
 * target's and the filter's loads (and the filter bit while heap profiling
 * runs) and the jump. Neither needs a frame; every rarer case (not
 * resolved yet, a crossed interval, a free that may be of a sampled block)
 * is out of line. */

/* While heap profiling is off, a crossing sets this interval: a start is
 * seen within this many bytes of each thread's allocations, and only a
 * block at least this large costs a call more. */
#define OFF_INTERVAL ((int64_t)1 << 20)

static void *malloc_first(size_t n) {
  void *p;
  if (boot_take(n, 16, &p))
    return p;
  malloc_fn f = REAL(malloc);
  return f ? f(n) : NULL;
}

/* An allocation that reached its thread's interval (not counted). */
__attribute__((noinline)) static void *malloc_cross(size_t n) {
  malloc_fn f = atomic_load_explicit(&J.malloc, memory_order_relaxed);
  heap_sample_fn s = atomic_load_explicit(&H.sample_slow, memory_order_relaxed);
  if (f == malloc_first || !s || !heap_fast_sampling(&H)) {
    if (f != malloc_first)
      g_tls.left = OFF_INTERVAL;
    return f(n);
  }
  void *p = f(n);
  if (p)
    s(p, n); /* draws the next interval */
  return p;
}

/* Each of the pair starts a cache line: the PLT's jump lands on one line
 * that holds the whole fast path. */
__attribute__((visibility("default"), aligned(64))) void *malloc(size_t n) {
  malloc_fn f = atomic_load_explicit(&J.malloc, memory_order_relaxed);
  if (__builtin_expect((uint64_t)n >= (uint64_t)g_tls.left, 0))
    return malloc_cross(n);
  g_tls.left -= (int64_t)n;
  return f(n);
}

/* Frees before resolution, and for good once the arena was used. */
static void free_first(void *p) {
  if (in_boot(p))
    return;
  if (ready())
    REAL(free)(p);
}

__attribute__((noinline)) static void free_slow(void *p) {
  if (heap_fast_before_free(&H, p))
    return; /* parked: freed when this thread leaves the profiler */
  atomic_load_explicit(&J.free, memory_order_relaxed)(p);
}

__attribute__((visibility("default"), aligned(64))) void free(void *p) {
  free_fn f = atomic_load_explicit(&J.free, memory_order_relaxed);
  if (__builtin_expect(heap_fast_filter_hit(&H, p), 0)) {
    free_slow(p);
    return;
  }
  f(p);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size) {
  size_t bytes;
  void *p;
  if (__builtin_expect(!ready(), 0) && !__builtin_mul_overflow(n, size, &bytes) &&
      boot_take(bytes, 16, &p))
    return p; /* static storage: already zero */
  if (!ready())
    return NULL;
  p = REAL(calloc)(n, size);
  after_alloc(p, n * size);
  return p;
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n) {
  if (!p)
    return malloc(n);
  if (__builtin_expect(in_boot(p), 0)) {
    void *q = malloc(n);
    if (q) {
      size_t old = boot_size(p);
      memcpy(q, p, old < n ? old : n);
    }
    return q;
  }
  if (!ready())
    return NULL;
  if (n == 0) { /* glibc frees p and returns NULL */
    if (heap_fast_before_free(&H, p))
      return NULL;
    return REAL(realloc)(p, 0);
  }
  /* A move is a free and an allocation; so is a block resized in place. */
  heap_ptr_fn take = atomic_load_explicit(&H.realloc_take, memory_order_relaxed);
  int taken = heap_fast_filter_hit(&H, p) && take ? take(p) : 0;
  void *q = REAL(realloc)(p, n);
  if (!q) {
    if (taken)
      atomic_load_explicit(&H.realloc_failed, memory_order_relaxed)(p);
    return NULL;
  }
  after_alloc(q, n);
  return q;
}

__attribute__((visibility("default"))) void *reallocarray(void *p, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, bytes);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t n) {
  void *p;
  if (__builtin_expect(!ready(), 0) && boot_take(n, align, &p)) {
    if (!p)
      return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = REAL(posix_memalign)(out, align, n);
  if (rc == 0)
    after_alloc(*out, n);
  return rc;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t n) {
  void *p;
  if (__builtin_expect(!ready(), 0) && boot_take(n, align, &p))
    return p;
  memalign_fn f = REAL(aligned_alloc) ? REAL(aligned_alloc) : REAL(memalign);
  p = f(align, n);
  after_alloc(p, n);
  return p;
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t n) {
  void *p;
  if (__builtin_expect(!ready(), 0) && boot_take(n, align, &p))
    return p;
  p = REAL(memalign)(align, n);
  after_alloc(p, n);
  return p;
}

static size_t page_size(void) {
  long pg = sysconf(_SC_PAGESIZE);
  return pg > 0 ? (size_t)pg : 4096;
}

__attribute__((visibility("default"))) void *valloc(size_t n) {
  void *p;
  if (__builtin_expect(!ready(), 0) && boot_take(n, 4096, &p))
    return p;
  p = REAL(valloc) ? REAL(valloc)(n) : REAL(memalign)(page_size(), n);
  after_alloc(p, n);
  return p;
}

__attribute__((visibility("default"))) void *pvalloc(size_t n) {
  size_t pg = page_size();
  size_t rounded = n ? (n + pg - 1) & ~(pg - 1) : pg;
  if (rounded < n) {
    errno = ENOMEM;
    return NULL;
  }
  void *p;
  if (__builtin_expect(!ready(), 0) && boot_take(rounded, 4096, &p))
    return p;
  p = REAL(pvalloc) ? REAL(pvalloc)(n) : REAL(memalign)(pg, rounded);
  after_alloc(p, rounded);
  return p;
}

/* ---- for the SDK ---- */

/* The next definitions are looked up at the first call of an interposer,
 * and heap_start makes an allocation through the PLT first: if they are
 * still unknown then, nobody's malloc calls reach ours (a sanitizer's
 * runtime or an allocator linked into the program comes first). Comparing
 * addresses would not do: a program that takes malloc's address (not
 * built as PIE) makes its own PLT entry the address everyone sees, while
 * its calls still come here. */
static int is_ours(void) {
  return REAL(free) != NULL;
}

/* Frees parked while the thread was in the profiler: the allocator's free,
 * not ours (their table entries are already gone). */
static void real_free(void *p) {
  if (in_boot(p))
    return;
  free_fn f = REAL(free);
  if (f)
    f(p);
}
