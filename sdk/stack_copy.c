/* Stack copies walked later (stack_copy.h). */
#include "stack_copy.h"

#include <stdlib.h>

#include "collector.h"
#include "unwind_tables.h"

/* A word loop, not memcpy: a sanitizer's memcpy would check the stack's
 * redzones, and the bounds are ours to guarantee. */
__attribute__((no_sanitize_address)) stack_copy *
stack_copy_take(stack_copy_budget *b, const unwind_regs *r, uintptr_t hi) {
  uintptr_t sp = r->sp & ~(uintptr_t)(sizeof(uintptr_t) - 1);
  if (hi <= sp)
    return NULL;
  size_t len = hi - sp, room = len > STACK_COPY_BYTES ? STACK_COPY_BYTES : len;
  size_t had = atomic_fetch_add(&b->bytes, room);
  if (had + room > STACK_COPIES_MAX) {
    atomic_fetch_sub(&b->bytes, room);
    return NULL;
  }
  stack_copy *c = malloc(sizeof *c + room);
  if (!c) {
    atomic_fetch_sub(&b->bytes, room);
    return NULL;
  }
  c->regs = *r;
  c->regs.sp = sp;
  c->budget = b;
  c->len = room;
  c->partial = len > room;
  for (size_t i = 0; i < room / sizeof(uintptr_t); i++)
    c->words[i] = ((const volatile uintptr_t *)sp)[i];
  return c;
}

void stack_copy_free(stack_copy *c) {
  if (c) {
    atomic_fetch_sub(&c->budget->bytes, c->len);
    free(c);
  }
}

int stack_copy_capture(const unwind_regs *r, uintptr_t lo, uintptr_t hi, stack_copy_budget *b,
                       uintptr_t *raw, uint32_t max, uint32_t *n, unsigned *flags,
                       stack_copy **copy) {
  *copy = NULL;
  *n = 0;
  *flags = 0;
  if (utab_ready()) {
    *n = unwind_stack(r, lo, hi, raw, max, flags);
    if (!(*flags & UNWIND_F_PENDING))
      return STACK_WALKED;
  } else if (utab_want()) {
    collector_wake_from_signal(); /* the first ask builds the tables */
  }
  *copy = stack_copy_take(b, r, hi);
  if (*copy)
    return STACK_COPIED;
  if (*n == 0)
    *n = unwind_stack(r, lo, hi, raw, max, flags); /* frame pointers where no table */
  return STACK_CUT_SHORT;
}

uint32_t stack_copy_walk(const stack_copy *c, uintptr_t *pcs, uint32_t max, unsigned *flags) {
  return collector_unwind_copy(&c->regs, c->words, c->len, c->partial, pcs, max, flags);
}
