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
 * table is not built yet, a copy of the stack is taken (stack_copy.h) and
 * walked on the collector thread.
 *
 * The interposers (heap_interpose.c, libpushprof_heap.so) reach this code
 * through the hooks of heap_hooks.h; everything else is for the API and the
 * tests. */
#ifndef PUSHPROF_HEAP_H
#define PUSHPROF_HEAP_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "heap_hooks.h"

#define HEAP_RATE_DEFAULT 524288
#define HEAP_RATE_MAX (1LL << 40)

/* The slow paths the interposers reach through heap_hooks. */
void heap_sample_slow(void *p, size_t size);
int heap_free_slow(void *p);

/* A realloc: p's entry, if sampled, is taken out before the real realloc
 * (which may free p); heap_realloc_failed puts it back if the real realloc
 * failed and p is still live. Returns 1 if an entry was taken. */
int heap_realloc_take(void *p);
void heap_realloc_failed(void *p);

/* Starts heap profiling at the given mean rate (bytes, 1..HEAP_RATE_MAX).
 * 0, or -1 with a reason in err (libpushprof_heap.so is not loaded, or a
 * sanitizer or an allocator comes before it). */
int heap_start(int64_t rate, char *err, size_t errlen);
/* Stops: nothing is sampled after it and the live table is emptied. */
void heap_stop(void);
int heap_running(void);
/* The hooks heap_start uses: NULL (the default) looks up the interposer
 * library's (heap_hooks.h); the tests hand over their own. */
void heap_use_hooks(heap_hooks *h);

/* Cuts a window: an uncompressed pprof in Go's heap layout
 * (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes; period space/bytes = the rate): allocations since
 * the previous cut and the live sampled heap now. 0, or a negative
 * PUSHPROF_E* code. */
int heap_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
/* The same profile without cutting: the window (its allocations so far)
 * goes on, so the next heap_cut still holds them. For on-demand sessions. */
int heap_snapshot(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
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
