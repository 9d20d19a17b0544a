/* Heap profiling: sampled allocations and the live sampled heap, by stack.
 *
 * Sampling. Each thread counts the bytes it allocates down from an
 * exponentially distributed interval of mean heap rate R bytes; the
 * allocation that crosses zero is sampled and a new interval drawn (a
 * Poisson process over bytes: an allocation of s bytes is sampled with
 * probability p = 1 - exp(-s/R), whatever the others were). A sample
 * stands for 1/p allocations and s/p bytes, so the expected totals equal
 * the true ones. The cost of an unsampled allocation is one subtraction in
 * thread-local storage and a branch.
 *
 * The live heap. Sampled blocks are kept in a table by address until they
 * are freed. A free must tell sampled from unsampled blocks cheaply and
 * exactly: a counting filter (one 16-bit counter per hash of the address,
 * raised while a sampled block with that hash is live, summarised in one
 * bit per counter that the free reads) answers "not sampled" with one load
 * from 8 KiB for almost every free; a set bit sends the free to the table,
 * which is exact. No free of a sampled block is
 * missed: the table entry goes before the block is given back to malloc.
 *
 * Reentrancy. The sampled path and the table run with the thread's busy
 * flag set. An allocation made while it is set (our own code, dlsym, the
 * stack walk, a signal handler of the host that interrupts us) is never
 * sampled; a free made then that may be of a sampled block is parked on the
 * thread and done after the table is released. The SDK's own threads never
 * sample. No lock is held across a call into malloc except the table's,
 * which is taken in fork's prepare handler before malloc's own.
 *
 * Stacks are walked on the allocating thread with the DWARF unwinder; before
 * the unwind tables exist (the first milliseconds) or in an object whose
 * table is not built yet, a copy of the stack is taken (deferred.h) and
 * walked on the collector thread.
 *
 * The interposers (heap_interpose.c, in the .so files only) call the inline
 * functions below; everything else is for the API and the tests. */
#ifndef PUSHPROF_HEAP_H
#define PUSHPROF_HEAP_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define HEAP_RATE_DEFAULT 524288
#define HEAP_RATE_MAX (1LL << 40)
#define HEAP_FILTER_BITS 16
#define HEAP_PARKED_MAX 16

typedef struct heap_tls {
  int64_t left;  /* bytes until the next sample */
  uint64_t rng;  /* 0: not seeded yet */
  uint32_t busy; /* inside the sampled path or the table */
  uint32_t nparked;
  void *parked[HEAP_PARKED_MAX]; /* frees made while busy, done on release */
  uintptr_t stack_lo, stack_hi;  /* this thread's stack, once known */
  uintptr_t saved_p;             /* heap_realloc_take's entry, for heap_realloc_failed */
  uint32_t saved_stack;
  int64_t saved_obj, saved_bytes;
} heap_tls;

extern __thread heap_tls heap_self __attribute__((tls_model("initial-exec")));
/* 1 while heap profiling runs. */
extern _Atomic int heap_on;
/* While heap profiling runs, one bit per filter slot: set while the slot's
 * count of live sampled blocks is not 0 (8 KiB, so the check on every
 * free stays in the cache); else NULL. */
extern _Atomic(uint64_t *) heap_filter;

/* The allocator's free, for frees parked while busy (set by the
 * interposers; the tests set theirs). */
typedef void (*heap_free_fn)(void *);
void heap_set_real_free(heap_free_fn fn);

void heap_sample_slow(void *p, size_t size);
int heap_free_slow(void *p);

static inline size_t heap_filter_slot(const void *p) {
  return (size_t)(((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - HEAP_FILTER_BITS));
}

/* After an allocation of size bytes returned p (p NULL: nothing). */
static inline void heap_after_alloc(void *p, size_t size) {
  if (__builtin_expect(!atomic_load_explicit(&heap_on, memory_order_relaxed), 1) || !p)
    return;
  heap_tls *t = &heap_self;
  if (size > (size_t)INT64_MAX / 2)
    size = (size_t)INT64_MAX / 2;
  t->left -= (int64_t)size;
  if (__builtin_expect(t->left > 0, 1))
    return;
  heap_sample_slow(p, size);
}

/* 1 if p may be a live sampled block (then the table knows), 0 if not. */
static inline int heap_filter_hit(const void *p) {
  uint64_t *f = atomic_load_explicit(&heap_filter, memory_order_relaxed);
  if (__builtin_expect(!f, 1) || !p)
    return 0;
  size_t s = heap_filter_slot(p);
  _Atomic uint64_t *w = (_Atomic uint64_t *)&f[s >> 6];
  return (int)((atomic_load_explicit(w, memory_order_relaxed) >> (s & 63)) & 1);
}

/* Before p is given back to the allocator (free, or a realloc that may
 * move it). Returns 1 if the caller must not free p now (it was parked and
 * will be freed when this thread leaves the sampled path), else 0. */
static inline int heap_before_free(void *p) {
  if (__builtin_expect(!heap_filter_hit(p), 1))
    return 0;
  return heap_free_slow(p);
}

/* A realloc: p's entry, if sampled, is taken out before the real realloc
 * (which may free p); heap_realloc_failed puts it back if the real realloc
 * failed and p is still live. Returns 1 if an entry was taken. */
int heap_realloc_take(void *p);
void heap_realloc_failed(void *p);

/* Starts heap profiling at the given mean rate (bytes, 1..HEAP_RATE_MAX).
 * 0, or -1 with a reason in err (the interposers are not the process's
 * malloc: the static library, or a sanitizer or allocator that comes
 * first). */
int heap_start(int64_t rate, char *err, size_t errlen);
/* Stops: nothing is sampled after it and the live table is emptied. */
void heap_stop(void);
int heap_running(void);
/* The interposers (heap_interpose.c) hand over is_ours (1 if the process's
 * malloc is theirs) and an address in their object, whose frames are cut
 * from the top of every stack (own_code NULL: none are). */
void heap_set_interposed(int (*is_ours)(void), const void *own_code);

/* Cuts a window: an uncompressed pprof in Go's heap layout
 * (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes; period space/bytes = the rate): allocations since
 * the previous cut and the live sampled heap now. 0, or a negative
 * PUSHPROF_E* code. */
int heap_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
/* 1 if nothing was allocated since the last cut and nothing is live. */
int heap_window_empty(void);

/* Collector thread, after each drain: walks the stack copies of samples
 * taken before their tables existed. */
void heap_resolve_pending(void);

/* Statistics (tests, profile comments). */
typedef struct heap_stats {
  uint64_t samples, live, frees_sampled, filter_misses, parked, parked_full, deferred, skipped_busy,
      table_oom, cut_short;
} heap_stats;
void heap_get_stats(heap_stats *st);

void heap_atfork_prepare(void);
void heap_atfork_parent(void);
void heap_atfork_child(void);
#endif
