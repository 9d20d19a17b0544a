/* The deferred stack copies (sdk/signal/deferred.c): DEFER_SLOTS slots,
 * each taken once until the collector's walk frees it; a stack longer
 * than DEFER_BYTES is cut and its walk marked truncated. The copies here
 * are of a static buffer posing as a stack, with a PC in no object: the
 * walks check the slots and flags, not the frames (test_unwind_dwarf
 * walks real copies). */
#include <stdint.h>

#include "deferred.h"
#include "pp_test.h"

static uintptr_t g_stack[(DEFER_BYTES + 4096) / sizeof(uintptr_t)];

static unwind_regs regs_at(size_t word) {
  unwind_regs r = {.pc = 16, .fp = 0, .sp = (uintptr_t)&g_stack[word], .lr = 0};
  return r;
}

static void test_deferred_slots_are_taken_once_and_freed_by_the_walk(void) {
  unwind_regs r = regs_at(0);
  uintptr_t hi = r.sp + 256;
  int slot[DEFER_SLOTS + 1];
  unsigned seen = 0;
  for (int i = 0; i < DEFER_SLOTS; i++) {
    slot[i] = defer_take(&r, hi);
    PP_CHECK(slot[i] >= 0 && slot[i] < DEFER_SLOTS);
    if (slot[i] >= 0 && slot[i] < DEFER_SLOTS) {
      PP_CHECK(!(seen & 1u << slot[i])); /* never one slot twice */
      seen |= 1u << slot[i];
    }
    PP_CHECK_INT(defer_busy(), ==, i + 1);
  }
  PP_CHECK_INT(defer_take(&r, hi), ==, -1); /* all busy */
  PP_CHECK_INT(defer_busy(), ==, DEFER_SLOTS);

  uintptr_t pcs[8];
  unsigned flags = 99;
  PP_CHECK_INT(defer_unwind(-1, pcs, 8, &flags), ==, 0);
  PP_CHECK_INT(flags, ==, 0);
  PP_CHECK_INT(defer_unwind(DEFER_SLOTS, pcs, 8, &flags), ==, 0);
  PP_CHECK_INT(defer_busy(), ==, DEFER_SLOTS);

  (void)defer_unwind(slot[3], pcs, 8, &flags);
  PP_CHECK_INT(defer_busy(), ==, DEFER_SLOTS - 1);
  PP_CHECK_INT(defer_take(&r, hi), ==, slot[3]); /* the freed one, again */
  for (int i = 0; i < DEFER_SLOTS; i++)
    (void)defer_unwind(slot[i], pcs, 8, &flags);
  PP_CHECK_INT(defer_busy(), ==, 0);

  PP_CHECK_INT(defer_take(&r, r.sp), ==, -1); /* an empty stack is not copied */
  PP_CHECK_INT(defer_busy(), ==, 0);
  PP_CHECK(defer_take(&r, hi) >= 0);
  PP_CHECK(defer_take(&r, hi) >= 0);
  defer_atfork_child(); /* the threads that held them are gone */
  PP_CHECK_INT(defer_busy(), ==, 0);
}

/* A copy cut at DEFER_BYTES marks its walk truncated; a whole one does
 * not. The length counts from SP rounded down to a word. */
static void test_deferred_cut_copies_walk_as_truncated(void) {
  unwind_regs r = regs_at(0);
  uintptr_t pcs[8];
  unsigned flags = 0;
  int s = defer_take(&r, r.sp + 512);
  PP_CHECK(s >= 0);
  (void)defer_unwind(s, pcs, 8, &flags);
  PP_CHECK_INT(flags & UNWIND_F_TRUNCATED, ==, 0);
  s = defer_take(&r, r.sp + DEFER_BYTES + 1024);
  PP_CHECK(s >= 0);
  (void)defer_unwind(s, pcs, 8, &flags);
  PP_CHECK_INT(flags & UNWIND_F_TRUNCATED, ==, UNWIND_F_TRUNCATED);
  r = regs_at(1);
  r.sp += 3; /* rounded down to a word: the copy would hold DEFER_BYTES + 2 */
  s = defer_take(&r, (uintptr_t)&g_stack[1] + DEFER_BYTES + 2);
  PP_CHECK(s >= 0);
  (void)defer_unwind(s, pcs, 8, &flags);
  PP_CHECK_INT(flags & UNWIND_F_TRUNCATED, ==, UNWIND_F_TRUNCATED);
  PP_CHECK_INT(defer_busy(), ==, 0);
}

int main(void) {
  PP_RUN(test_deferred_slots_are_taken_once_and_freed_by_the_walk);
  PP_RUN(test_deferred_cut_copies_walk_as_truncated);
  PP_DONE();
}
