/* The stack copies the heap and wait profilers take while a table is
 * missing (sdk/stack_copy.c): each at most STACK_COPY_BYTES, at most
 * STACK_COPIES_MAX bytes waiting per budget, every byte given back by the
 * free; a copy cut short walks as truncated; with no table built (this
 * process starts no collector) a capture copies, and with its budget spent
 * walks at once. The copies are of a static buffer posing as a stack, with
 * a PC in no object: the checks are of sizes, flags and counts, not frames
 * (test_wait walks real copies). */
#include <stdint.h>
#include <string.h>

#include "pp_test.h"
#include "stack_copy.h"
#include "unwind_tables.h"

static uintptr_t g_stack[(STACK_COPY_BYTES + 4096) / sizeof(uintptr_t)];

static unwind_regs regs_at(size_t word) {
  unwind_regs r = {.pc = 16, .fp = 0, .sp = (uintptr_t)&g_stack[word], .lr = 0};
  return r;
}

static void test_stack_copy_budget_refuses_then_takes_what_is_freed(void) {
  static stack_copy_budget b;
  static stack_copy *c[STACK_COPIES_MAX / STACK_COPY_BYTES];
  const size_t nmax = STACK_COPIES_MAX / STACK_COPY_BYTES;
  unwind_regs r = regs_at(0);
  uintptr_t hi = r.sp + STACK_COPY_BYTES + 1024; /* longer than one copy holds */
  for (size_t i = 0; i < nmax; i++) {
    c[i] = stack_copy_take(&b, &r, hi);
    PP_CHECK(c[i] != NULL);
    if (!c[i])
      return;
    PP_CHECK_INT(c[i]->len, ==, STACK_COPY_BYTES);
    PP_CHECK_INT(c[i]->partial, ==, 1);
  }
  PP_CHECK_INT(atomic_load(&b.bytes), ==, STACK_COPIES_MAX);
  PP_CHECK(stack_copy_take(&b, &r, hi) == NULL); /* the budget is spent */
  PP_CHECK(stack_copy_take(&b, &r, r.sp + 64) == NULL);
  PP_CHECK_INT(atomic_load(&b.bytes), ==, STACK_COPIES_MAX);
  static stack_copy_budget other; /* another profiler's budget is its own */
  stack_copy *o = stack_copy_take(&other, &r, hi);
  PP_CHECK(o != NULL);
  stack_copy_free(o);
  PP_CHECK_INT(atomic_load(&other.bytes), ==, 0);
  stack_copy_free(c[7]);
  c[7] = stack_copy_take(&b, &r, hi);
  PP_CHECK(c[7] != NULL);
  for (size_t i = 0; i < nmax; i++)
    stack_copy_free(c[i]);
  PP_CHECK_INT(atomic_load(&b.bytes), ==, 0);
  stack_copy_free(NULL);
}

/* SP is rounded down to a word; the copy holds the words up to hi, and a
 * whole one walks without the truncated flag, a cut one with it. */
static void test_stack_copy_holds_the_words_and_walks_cut_copies_as_truncated(void) {
  static stack_copy_budget b;
  for (size_t i = 0; i < 64; i++)
    g_stack[i] = 0x1000 + i;
  unwind_regs r = regs_at(2);
  r.sp += 3;
  stack_copy *c = stack_copy_take(&b, &r, (uintptr_t)&g_stack[10]);
  PP_CHECK(c != NULL);
  if (!c)
    return;
  PP_CHECK_INT(c->regs.sp, ==, (uintptr_t)&g_stack[2]);
  PP_CHECK_INT(c->len, ==, 8 * sizeof(uintptr_t));
  PP_CHECK_INT(c->partial, ==, 0);
  PP_CHECK(memcmp(c->words, &g_stack[2], c->len) == 0);
  uintptr_t pcs[8];
  unsigned flags = 0;
  PP_CHECK_INT(stack_copy_walk(c, pcs, 8, &flags), >=, 1);
  PP_CHECK_INT(pcs[0], ==, 16);
  PP_CHECK_INT(flags & UNWIND_F_TRUNCATED, ==, 0);
  stack_copy_free(c);
  c = stack_copy_take(&b, &r, r.sp + STACK_COPY_BYTES + 1024);
  PP_CHECK(c != NULL);
  if (c) {
    (void)stack_copy_walk(c, pcs, 8, &flags);
    PP_CHECK_INT(flags & UNWIND_F_TRUNCATED, ==, UNWIND_F_TRUNCATED);
  }
  stack_copy_free(c);
  r = regs_at(4);
  PP_CHECK(stack_copy_take(&b, &r, r.sp) == NULL); /* an empty stack is not copied */
  PP_CHECK_INT(atomic_load(&b.bytes), ==, 0);
}

/* No table is built in this process: a capture copies; once its budget is
 * spent it walks at once (the leaf, then frame pointers) and says so. */
static void test_stack_copy_capture_copies_until_the_budget_is_spent(void) {
  static stack_copy_budget b;
  static stack_copy *c[STACK_COPIES_MAX / STACK_COPY_BYTES];
  const size_t nmax = STACK_COPIES_MAX / STACK_COPY_BYTES;
  PP_CHECK(!utab_ready());
  unwind_regs r = regs_at(0);
  uintptr_t lo = (uintptr_t)g_stack, hi = (uintptr_t)g_stack + sizeof g_stack;
  uintptr_t raw[8];
  uint32_t n = 99;
  unsigned flags = 99;
  for (size_t i = 0; i < nmax; i++) {
    PP_CHECK_INT(stack_copy_capture(&r, lo, hi, &b, raw, 8, &n, &flags, &c[i]), ==, STACK_COPIED);
    PP_CHECK(c[i] != NULL);
    PP_CHECK_INT(n, ==, 0);
  }
  stack_copy *more = (stack_copy *)&b;
  PP_CHECK_INT(stack_copy_capture(&r, lo, hi, &b, raw, 8, &n, &flags, &more), ==, STACK_CUT_SHORT);
  PP_CHECK(more == NULL);
  PP_CHECK_INT(n, >=, 1);
  PP_CHECK_INT(raw[0], ==, 16);
  for (size_t i = 0; i < nmax; i++)
    stack_copy_free(c[i]);
  PP_CHECK_INT(atomic_load(&b.bytes), ==, 0);
}

int main(void) {
  PP_RUN(test_stack_copy_budget_refuses_then_takes_what_is_freed);
  PP_RUN(test_stack_copy_holds_the_words_and_walks_cut_copies_as_truncated);
  PP_RUN(test_stack_copy_capture_copies_until_the_budget_is_spent);
  PP_DONE();
}
