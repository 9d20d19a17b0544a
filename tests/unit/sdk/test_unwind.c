/* The unwinder's frame-pointer steps on synthetic stacks (no unwind
 * tables are loaded here, so every frame takes one): it must follow good
 * chains, stop at any corrupt link without reading outside [sp, hi), and
 * cap the depth at the limit it is given, saying so. */
#include <pthread.h>

#include "pp_test.h"
#include "unwind.h"

#define WORDS 1024
static uintptr_t stack_mem[WORDS] __attribute__((aligned(16)));

static uintptr_t at(size_t word) {
  return (uintptr_t)&stack_mem[word];
}

/* Frames at words first, first + step, ...: [fp] = next fp, [fp+8] = ret. */
static void build_chain(size_t first, size_t step, size_t nframes) {
  memset(stack_mem, 0, sizeof stack_mem);
  for (size_t i = 0; i < nframes; i++) {
    size_t w = first + i * step;
    stack_mem[w] = i + 1 < nframes ? at(w + step) : 0;
    stack_mem[w + 1] = 0x400000 + i;
  }
}

/* unwind_stack with the truncation flag as an int. */
static uint32_t fp_walk(const unwind_regs *regs, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
                        uint32_t max, int *trunc) {
  unsigned flags;
  uint32_t d = unwind_stack(regs, lo, hi, pcs, max, &flags);
  *trunc = (flags & UNWIND_F_TRUNCATED) != 0;
  return d;
}

static uint32_t walk(uintptr_t fp, uintptr_t *pcs, uint32_t max, int *trunc) {
  unwind_regs regs = {.pc = 0x1234, .fp = fp, .sp = at(0)};
  return fp_walk(&regs, at(0), at(WORDS), pcs, max, trunc);
}

static void test_unwind_follows_good_chain(void) {
  uintptr_t pcs[128];
  int trunc = -1;
  build_chain(2, 4, 5);
  uint32_t d = walk(at(2), pcs, 128, &trunc);
  PP_CHECK_INT(d, ==, 6);
  PP_CHECK_INT(trunc, ==, 0);
  PP_CHECK_INT(pcs[0], ==, 0x1234);
  for (uint32_t i = 1; i < d; i++)
    PP_CHECK_INT(pcs[i], ==, 0x400000 + i - 1);
}

static void test_unwind_stops_at_corrupt_fp(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 6);
  stack_mem[2 + 2 * 4] = 0xdeadbeef0000;              /* frame 2 points far away */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 4); /* leaf + frames 0..2 */
  PP_CHECK_INT(trunc, ==, 0);
}

static void test_unwind_stops_at_misaligned_fp(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 6);
  stack_mem[2 + 1 * 4] = at(2 + 2 * 4) + 3;
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 3);
  PP_CHECK_INT(walk(at(2) + 4, pcs, 128, &trunc), ==, 1); /* misaligned from the start */
}

static void test_unwind_stops_when_chain_goes_backwards(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 6);
  stack_mem[2 + 3 * 4] = at(2 + 1 * 4); /* frame 3 -> frame 1 */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 5);
}

static void test_unwind_stops_at_self_loop(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 6);
  stack_mem[2 + 2 * 4] = at(2 + 2 * 4); /* frame 2 -> itself */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 4);
  PP_CHECK_INT(trunc, ==, 0);
}

static void test_unwind_stops_at_overlapping_frame(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 6);
  stack_mem[2 + 1 * 4] = at(2 + 1 * 4 + 1); /* next record would overlap this one */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 3);
}

static void test_unwind_never_reads_outside_bounds(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 3);
  /* The last frame record straddles hi: not read. */
  stack_mem[2 + 2 * 4] = at(WORDS - 1);
  stack_mem[WORDS - 1] = at(2); /* would loop back if it were read */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 4);
  /* fp below sp: only the leaf. */
  unwind_regs regs = {.pc = 1, .fp = at(2), .sp = at(4)};
  PP_CHECK_INT(fp_walk(&regs, at(0), at(WORDS), pcs, 128, &trunc), ==, 1);
  /* sp outside [lo, hi) (another stack): only the leaf. */
  regs = (unwind_regs){.pc = 1, .fp = at(6), .sp = at(2)};
  PP_CHECK_INT(fp_walk(&regs, at(4), at(WORDS), pcs, 128, &trunc), ==, 1);
  /* Unknown bounds: only the leaf. */
  regs = (unwind_regs){.pc = 1, .fp = at(2), .sp = at(0)};
  PP_CHECK_INT(fp_walk(&regs, 0, 0, pcs, 128, &trunc), ==, 1);
  PP_CHECK_INT(pcs[0], ==, 1);
  /* Tiny bounds. */
  PP_CHECK_INT(fp_walk(&regs, at(0), at(0) + 8, pcs, 128, &trunc), ==, 1);
}

static void test_unwind_stops_at_zero_return_address(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 4, 6);
  stack_mem[2 + 3 * 4 + 1] = 0;
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 4);
}

static void test_unwind_caps_depth_and_counts_truncation(void) {
  uintptr_t pcs[128];
  int trunc;
  build_chain(2, 2, 200); /* 200 frames, more than the cap */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 128);
  PP_CHECK_INT(trunc, ==, 1);
  PP_CHECK_INT(pcs[127], ==, 0x400000 + 126);
  build_chain(2, 2, 127); /* leaf + 127 frames: exactly the cap, nothing lost */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 128);
  PP_CHECK_INT(trunc, ==, 0);
  build_chain(2, 2, 128); /* one more frame than fits */
  PP_CHECK_INT(walk(at(2), pcs, 128, &trunc), ==, 128);
  PP_CHECK_INT(trunc, ==, 1);
  PP_CHECK_INT(walk(at(2), pcs, 0, &trunc), ==, 0);
}

/* A real stack: three nested frames of ours must show up. */
static uintptr_t real_pcs[128];
static uint32_t real_depth;

__attribute__((noinline)) static void real_leaf(void) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  int trunc;
  if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
      pthread_attr_getstack(&attr, &addr, &size) != 0)
    return;
  pthread_attr_destroy(&attr);
  unwind_regs regs = {.pc = (uintptr_t)__builtin_return_address(0),
                      .fp = (uintptr_t)__builtin_frame_address(0),
                      .sp = (uintptr_t)__builtin_frame_address(0)};
  real_depth = fp_walk(&regs, (uintptr_t)addr, (uintptr_t)addr + size, real_pcs, 128, &trunc);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void real_mid(void) {
  real_leaf();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void real_top(void) {
  real_mid();
  __asm__ volatile("" ::: "memory");
}

static void test_unwind_walks_a_real_stack(void) {
  real_top();
  PP_CHECK_INT(real_depth, >=, 4);
  /* Return addresses lie inside the callers, in call order. */
  int found_mid = 0, found_top = 0;
  for (uint32_t i = 1; i < real_depth; i++) {
    if (real_pcs[i] > (uintptr_t)real_mid && real_pcs[i] < (uintptr_t)real_mid + 256)
      found_mid = 1;
    if (real_pcs[i] > (uintptr_t)real_top && real_pcs[i] < (uintptr_t)real_top + 256)
      found_top = 1;
  }
  PP_CHECK(found_mid);
  PP_CHECK(found_top);
}

int main(void) {
  PP_RUN(test_unwind_follows_good_chain);
  PP_RUN(test_unwind_stops_at_corrupt_fp);
  PP_RUN(test_unwind_stops_at_misaligned_fp);
  PP_RUN(test_unwind_stops_when_chain_goes_backwards);
  PP_RUN(test_unwind_stops_at_self_loop);
  PP_RUN(test_unwind_stops_at_overlapping_frame);
  PP_RUN(test_unwind_never_reads_outside_bounds);
  PP_RUN(test_unwind_stops_at_zero_return_address);
  PP_RUN(test_unwind_caps_depth_and_counts_truncation);
  PP_RUN(test_unwind_walks_a_real_stack);
  PP_DONE();
}
