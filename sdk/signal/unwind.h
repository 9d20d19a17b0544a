/* The signal handler's unwinder. Per frame it looks up the unwind row for
 * the PC in the process's CFI tables (unwind_tables.h) and follows it: CFA
 * from SP or FP, return address and caller's FP loaded from the stack.
 * Where no row covers the PC (no table yet, code without CFI) it takes one
 * frame-pointer step if the chain looks plausible, else it stops.
 * Every load is 8-aligned inside [lo, hi) of the interrupted thread's stack
 * (or of its sigaltstack, up to the signal frame that leaves it) and every
 * step moves SP strictly upwards (signal frames aside), so a
 * corrupt stack ends the walk instead of faulting or looping.
 * Async-signal-safe: no locks, no syscalls, no allocation, bounded by max. */
#ifndef PUSHPROF_UNWIND_H
#define PUSHPROF_UNWIND_H
#include <stddef.h>
#include <stdint.h>

typedef struct unwind_regs {
  uintptr_t pc, fp, sp, lr; /* lr: the link register where there is one (aarch64) */
} unwind_regs;

#define UNWIND_F_TRUNCATED 1u /* max reached with frames left */
#define UNWIND_F_NO_TABLE 2u  /* a frame in code no table covers yet: frame-pointer step */
#define UNWIND_F_FP_STEP 4u   /* at least one frame-pointer step was taken */
#define UNWIND_F_END 8u       /* reached the outermost frame (CFI says the RA is undefined) */
#define UNWIND_F_PENDING 16u  /* a frame in an object whose table is not built yet */

/* Extracts pc/fp/sp(/lr) from a ucontext_t (x86_64, aarch64). 0, or -1 on
 * an unsupported architecture. Async-signal-safe. */
int unwind_regs_from_ucontext(const void *uc, unwind_regs *out);

/* pcs[0] = regs->pc (exact), then one return address per frame found. lo/hi
 * 0 means unknown bounds: only the leaf. Returns the depth; *flags gets
 * UNWIND_F_* bits. Async-signal-safe. */
uint32_t unwind_stack(const unwind_regs *regs, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
                      uint32_t max, unsigned *flags);

/* The same for a thread interrupted on its sigaltstack [alt_lo, alt_hi):
 * the walk starts there and, at the signal frame of the handler running on
 * it, goes on to the interrupted code on the thread's own stack [lo, hi)
 * (0, 0: unknown, the walk ends at that signal frame). */
uint32_t unwind_stack_alt(const unwind_regs *regs, uintptr_t alt_lo, uintptr_t alt_hi, uintptr_t lo,
                          uintptr_t hi, uintptr_t *pcs, uint32_t max, unsigned *flags);

/* Where a walk of a copy finds rows for PCs in objects with no published
 * table (utab_row_on_demand); sets *known as utab_find does. */
typedef const struct cfi_row *(*unwind_fill_fn)(uintptr_t pc, int *known);

/* The same walk over a copy of the stack taken at sampling time: copy holds
 * the len bytes that were at [regs->sp, regs->sp + len). Used for samples
 * taken before the tables existed (deferred.h). fill (may be NULL) is
 * asked for the rows of PCs in objects whose table is not published yet.
 * *missing (may be NULL) gets the first PC whose object had no table nor
 * rows from fill (0 if none). Allocates nothing itself; meant for the
 * collector. */
uint32_t unwind_stack_copy(const unwind_regs *regs, const void *copy, size_t len, uintptr_t *pcs,
                           uint32_t max, unsigned *flags, uintptr_t *missing, unwind_fill_fn fill);

#endif
