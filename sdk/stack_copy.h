/* Stack copies for the profilers that walk their own thread's stack
 * outside a signal handler (the heap, off-CPU and lock profilers). While
 * the walk needs a table that is not built yet (the first milliseconds of a
 * process, a library loaded since the last refresh), the thread copies its
 * registers and the stack above SP instead of guessing with frame pointers,
 * and the collector thread walks the copy later with the rows the walk needs
 * (collector_unwind_copy). Each copy holds at most STACK_COPY_BYTES; each
 * profiler keeps at most STACK_COPIES_MAX bytes of copies waiting (its own
 * budget: one profiler's burst never refuses another's copies). A refused
 * copy leaves the stack walked at once, frame pointers where no table is
 * (cut short). Not async-signal-safe (malloc): the signal handler's copies
 * are deferred.h's static slots. */
#ifndef PUSHPROF_STACK_COPY_H
#define PUSHPROF_STACK_COPY_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

#define STACK_COPY_BYTES (32u << 10)
#define STACK_COPIES_MAX (8u << 20)

/* The bytes of copies one profiler has waiting; zero-initialised (static). */
typedef struct stack_copy_budget {
  _Atomic size_t bytes;
} stack_copy_budget;

/* A copy: words holds the len bytes that were at [regs.sp, regs.sp + len);
 * partial: the stack went on above it. Owned by whoever took it until
 * stack_copy_free. */
typedef struct stack_copy {
  unwind_regs regs;
  stack_copy_budget *budget;
  size_t len;
  int partial;
  uintptr_t words[];
} stack_copy;

/* What stack_copy_capture did. */
enum { STACK_WALKED = 0, STACK_COPIED = 1, STACK_CUT_SHORT = 2 };

/* The calling thread's stack from r (its registers, taken in a caller that
 * is still live; [lo, hi) the thread's stack, r->sp inside it): walked into
 * raw (*n return addresses, *flags UNWIND_F_* bits) when every table the
 * walk meets exists (STACK_WALKED); else copied into *copy, nothing walked
 * (STACK_COPIED); else, the copy refused by b or by malloc, walked at once
 * with frame-pointer steps where no table is (STACK_CUT_SHORT). Wakes the
 * collector when it is the first to ask for tables. Thread-safe; never
 * blocks on the collector. */
int stack_copy_capture(const unwind_regs *r, uintptr_t lo, uintptr_t hi, stack_copy_budget *b,
                       uintptr_t *raw, uint32_t max, uint32_t *n, unsigned *flags,
                       stack_copy **copy);

/* Copies r and up to STACK_COPY_BYTES of [r->sp, hi) (SP rounded down to
 * a word) under b; NULL if b would pass STACK_COPIES_MAX, or no memory.
 * The caller guarantees [r->sp, hi) is readable. Thread-safe. */
stack_copy *stack_copy_take(stack_copy_budget *b, const unwind_regs *r, uintptr_t hi);

/* Frees c (NULL: nothing) and gives its bytes back to its budget. */
void stack_copy_free(stack_copy *c);

/* Walks c into pcs as the signal handler's deferred copies are walked
 * (collector_unwind_copy: the rows of just the FDEs it needs, one walk at a
 * time with the collector's). *flags gets UNWIND_F_* bits, TRUNCATED also
 * when the walk ran off a partial copy. Any thread but a signal handler;
 * may wait for the collector's drain, so never on a profiled thread's
 * recording path. */
uint32_t stack_copy_walk(const stack_copy *c, uintptr_t *pcs, uint32_t max, unsigned *flags);
#endif
