#include "deferred.h"

#include <stdatomic.h>
#include <string.h>

#include "unwind_tables.h"

typedef struct defer_slot {
  unwind_regs regs;
  size_t len;  /* bytes copied */
  int partial; /* the stack went on above the copy */
  uintptr_t words[DEFER_BYTES / sizeof(uintptr_t)];
} defer_slot;

static defer_slot g_slots[DEFER_SLOTS]; /* BSS: untouched until a sample needs it */
static _Atomic unsigned g_busy;

/* A word loop, not memcpy: a sanitizer's memcpy would check the stack's
 * poisoned redzones, and the bounds are ours to guarantee. */
__attribute__((no_sanitize_address)) static void copy_words(uintptr_t *dst, const uintptr_t *src,
                                                            size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = ((const volatile uintptr_t *)src)[i];
}

int defer_take(const unwind_regs *regs, uintptr_t hi) {
  uintptr_t sp = regs->sp & ~(uintptr_t)(sizeof(uintptr_t) - 1);
  if (hi <= sp)
    return -1;
  unsigned busy = atomic_load_explicit(&g_busy, memory_order_relaxed);
  int i;
  for (;;) {
    for (i = 0; i < DEFER_SLOTS && (busy & (1u << i)); i++)
      ;
    if (i == DEFER_SLOTS)
      return -1;
    if (atomic_compare_exchange_weak_explicit(&g_busy, &busy, busy | (1u << i),
                                              memory_order_acquire, memory_order_relaxed))
      break;
  }
  defer_slot *s = &g_slots[i];
  size_t len = hi - sp;
  s->partial = len > DEFER_BYTES;
  if (s->partial)
    len = DEFER_BYTES;
  s->regs = *regs;
  s->regs.sp = sp;
  s->len = len;
  copy_words(s->words, (const uintptr_t *)sp, len / sizeof(uintptr_t));
  return i;
}

uint32_t defer_unwind_copy(const unwind_regs *regs, const uintptr_t *words, size_t len, int partial,
                           uintptr_t *pcs, uint32_t max, unsigned *flags) {
  uint32_t depth = 0;
  *flags = 0;
  /* Objects with no table yet give the rows of just the FDEs this stack
   * needs (a short process need not compile whole objects); an object
   * without .eh_frame is built whole, then the walk is redone (bounded by
   * the number of objects one stack can cross). */
  utab_on_demand_trim();
  for (int tries = 0; tries < 16; tries++) {
    uintptr_t missing = 0;
    depth = unwind_stack_copy(regs, words, len, pcs, max, flags, &missing, utab_row_on_demand);
    if (!(*flags & UNWIND_F_NO_TABLE) || !missing || utab_build_for(missing) == 0)
      break;
  }
  if (partial && !(*flags & UNWIND_F_TRUNCATED) && !(*flags & UNWIND_F_END))
    *flags |= UNWIND_F_TRUNCATED;
  return depth;
}

uint32_t defer_unwind(int slot, uintptr_t *pcs, uint32_t max, unsigned *flags) {
  *flags = 0;
  if (slot < 0 || slot >= DEFER_SLOTS)
    return 0;
  defer_slot *s = &g_slots[slot];
  uint32_t depth = defer_unwind_copy(&s->regs, s->words, s->len, s->partial, pcs, max, flags);
  atomic_fetch_and_explicit(&g_busy, ~(1u << slot), memory_order_release);
  return depth;
}

unsigned defer_busy(void) {
  return (unsigned)__builtin_popcount(atomic_load(&g_busy));
}

void defer_atfork_child(void) {
  atomic_store(&g_busy, 0);
}
