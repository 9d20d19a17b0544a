/* Samples taken before the unwind tables exist (the first milliseconds of
 * a process) keep a copy of their stack instead of a frame-pointer guess:
 * the handler copies the registers and up to DEFER_BYTES of the stack
 * above SP into one of DEFER_SLOTS static slots, and the collector walks
 * the copy later with the real tables (unwind_stack_copy). A short job thus
 * gets the same stacks as a long one; when every slot is busy the sample
 * is unwound at once, counted as "no unwind table yet".
 * Slots are claimed with one CAS on a bitmask and released by the
 * collector after the walk; the slot's bytes are published by the ring
 * record's release (ring_commit), so no other ordering is needed. */
#ifndef PUSHPROF_DEFERRED_H
#define PUSHPROF_DEFERRED_H
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

#define DEFER_SLOTS 8
#define DEFER_BYTES (64u << 10)

/* Copies regs and the stack [regs->sp, min(hi, sp + DEFER_BYTES)) into a
 * free slot; returns its index, or -1 if none is free. Async-signal-safe. */
int defer_take(const unwind_regs *regs, uintptr_t hi);

/* Collector: walks slot's copy into pcs (see unwind_stack_copy), with the
 * rows of just the FDEs it needs in objects that have no table yet
 * (utab_row_on_demand; a whole table for an object without .eh_frame),
 * then frees the slot. One call at a time.
 * *flags gets UNWIND_F_* bits (UNWIND_F_TRUNCATED also when the walk ran
 * off the end of a partial copy). */
uint32_t defer_unwind(int slot, uintptr_t *pcs, uint32_t max, unsigned *flags);

/* The same walk over any copy: words holds the len bytes that were at
 * [regs->sp, regs->sp + len); partial: the stack went on above it. One
 * call at a time with defer_unwind (the collector's lock). */
uint32_t defer_unwind_copy(const unwind_regs *regs, const uintptr_t *words, size_t len, int partial,
                           uintptr_t *pcs, uint32_t max, unsigned *flags);

/* Slots in use (tests, statistics). */
unsigned defer_busy(void);

/* fork child: the threads that held slots are gone. */
void defer_atfork_child(void);
#endif
