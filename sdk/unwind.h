/* Frame-pointer unwinder for the signal handler. Reads memory only inside
 * [sp, hi) of the interrupted thread's stack, so a corrupt chain ends the walk
 * instead of faulting. Async-signal-safe, no syscalls, bounded by max. */
#ifndef PUSHPROF_UNWIND_H
#define PUSHPROF_UNWIND_H
#include <stdint.h>

typedef struct unwind_regs {
  uintptr_t pc, fp, sp;
} unwind_regs;

/* Extracts pc/fp/sp from a ucontext_t (x86_64, aarch64). 0, or -1 on an
 * unsupported architecture. Async-signal-safe. */
int unwind_regs_from_ucontext(const void *uc, unwind_regs *out);

/* pcs[0] = regs->pc, then one return address per valid frame. A frame is
 * valid when fp is 8-aligned, above the previous fp (or >= sp for the
 * first), and fp + 16 <= hi. lo/hi 0 means unknown: only the leaf. Returns
 * the depth; *truncated = 1 if max was reached with frames left. */
uint32_t unwind_fp(const unwind_regs *regs, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
                   uint32_t max, int *truncated);
#endif
