/* The contract between the allocation interposers (libpushprof_heap.so,
 * heap_interpose.c) and the heap profiler in the SDK (heap.c).
 *
 * They are separate objects so that a process that does not profile its
 * heap has no interposer in front of its malloc at all: only a program that
 * loads libpushprof_heap.so (LD_PRELOAD, or linked with -lpushprof_heap)
 * pays for the check on every allocation.
 *
 * The interposer library exports one function, pushprof_heap_hooks_v1,
 * returning its hooks. The _v1 names this layout: a different layout gets a
 * different name, so an SDK never reads a layout it does not know. The SDK
 * looks the function up with dlsym when heap profiling starts, fills in its
 * slow paths, publishes the filter and then sets `on`. malloc counts every
 * allocation against its thread's interval (`left`), on or off, and reads
 * `on` only when the interval is crossed; the other allocation functions
 * read `on` first; free reads `filter`. The SDK is called only when an
 * allocation is sampled or a free may be of a sampled block. While heap
 * profiling is off, a crossing only sets a short fixed interval, so a
 * start is seen within that many bytes. The slow paths, once set,
 * are never cleared (stopping clears `on` and `filter` only), so an
 * interposer that read `on` just before a stop still calls valid code. */
#ifndef PUSHPROF_HEAP_HOOKS_H
#define PUSHPROF_HEAP_HOOKS_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define HEAP_FILTER_BITS 16
#define HEAP_PARKED_MAX 16
#define HEAP_HOOKS_SYMBOL "pushprof_heap_hooks_v1"

/* One thread's sampling state, in the interposer library's TLS. */
typedef struct heap_tls {
  int64_t left;  /* bytes until the next sample: >= 1, or 0 before the first */
  uint64_t rng;  /* 0: not seeded yet */
  uint32_t busy; /* inside the sampled path or the table */
  uint32_t nparked;
  void *parked[HEAP_PARKED_MAX]; /* frees made while busy, done on release */
  uintptr_t stack_lo, stack_hi;  /* this thread's stack, once known */
  uintptr_t saved_p;             /* heap_realloc_take's entry, for heap_realloc_failed */
  uint32_t saved_stack;
  int64_t saved_obj, saved_bytes;
} heap_tls;

typedef void (*heap_sample_fn)(void *p, size_t size);
typedef int (*heap_ptr_fn)(void *p);
typedef void (*heap_void_fn)(void *p);

typedef struct heap_hooks {
  /* Read on the interposers' paths (see above). */
  _Atomic int on;             /* 1 while heap profiling runs */
  _Atomic(uint64_t *) filter; /* one bit per filter slot while on, else NULL */
  /* Set by the interposer library. */
  heap_tls *(*self)(void); /* the calling thread's state */
  int (*is_ours)(void);    /* 1 if the process's malloc calls reach the interposers */
  heap_void_fn real_free;  /* the allocator's own free */
  const void *own_code;    /* an address in the interposer library */
  /* Set by the SDK before it sets on; never cleared. */
  _Atomic(heap_sample_fn) sample_slow;
  _Atomic(heap_ptr_fn) free_slow;       /* 1: parked, the caller must not free now */
  _Atomic(heap_ptr_fn) realloc_take;    /* 1: the block's entry was taken out */
  _Atomic(heap_void_fn) realloc_failed; /* puts a taken entry back */
} heap_hooks;

typedef heap_hooks *(*heap_hooks_fn)(void);

static inline size_t heap_filter_slot(const void *p) {
  return (size_t)(((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - HEAP_FILTER_BITS));
}

/* 1 while heap profiling runs. */
static inline int heap_fast_sampling(heap_hooks *h) {
  return atomic_load_explicit(&h->on, memory_order_relaxed);
}

/* Counts size bytes against the thread's interval: 1 if this allocation
 * reaches it and is to be sampled (the count is left as it is: the sampled
 * path draws the next interval), else 0. `left` is at least 1 once the
 * thread has allocated; a fresh thread's 0 makes its first allocation
 * cross, which is where its first interval is drawn. */
static inline int heap_fast_count(heap_tls *t, size_t size) {
  if (__builtin_expect((uint64_t)size >= (uint64_t)t->left, 0))
    return 1;
  t->left -= (int64_t)size;
  return 0;
}

/* After an allocation of size bytes returned p (p NULL: nothing). t is the
 * calling thread's state (h->self()). */
static inline void heap_fast_after_alloc(heap_hooks *h, heap_tls *t, void *p, size_t size) {
  if (__builtin_expect(!atomic_load_explicit(&h->on, memory_order_relaxed), 1) || !p)
    return;
  if (!heap_fast_count(t, size))
    return;
  heap_sample_fn f = atomic_load_explicit(&h->sample_slow, memory_order_relaxed);
  if (f)
    f(p, size);
}

/* 1 if p may be a live sampled block (then the table knows), 0 if not.
 * NULL may hit too: the table holds no such block. */
static inline int heap_fast_filter_hit(heap_hooks *h, const void *p) {
  uint64_t *f = atomic_load_explicit(&h->filter, memory_order_relaxed);
  if (__builtin_expect(!f, 1))
    return 0;
  size_t s = heap_filter_slot(p);
  _Atomic uint64_t *w = (_Atomic uint64_t *)&f[s >> 6];
  return (int)((atomic_load_explicit(w, memory_order_relaxed) >> (s & 63)) & 1);
}

/* Before p is given back to the allocator. Returns 1 if the caller must not
 * free p now (it was parked and is freed when this thread leaves the
 * sampled path), else 0. */
static inline int heap_fast_before_free(heap_hooks *h, void *p) {
  if (__builtin_expect(!heap_fast_filter_hit(h, p), 1))
    return 0;
  heap_ptr_fn f = atomic_load_explicit(&h->free_slow, memory_order_relaxed);
  return f ? f(p) : 0;
}
#endif
