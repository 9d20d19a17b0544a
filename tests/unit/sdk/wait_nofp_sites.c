/* Waiting sites compiled without frame pointers (test_wait's CMake rule):
 * a frame-pointer walk from wait_record loses wait_nofp_outer, which only
 * the DWARF walk finds. */
#include "wait.h"

void wait_nofp_mid(int kind, int64_t c, int64_t d);
void wait_nofp_outer(int kind, int64_t c, int64_t d);

__attribute__((noinline)) void wait_nofp_mid(int kind, int64_t c, int64_t d) {
  wait_record(kind, c, d);
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame is in the stack */
}

__attribute__((noinline)) void wait_nofp_outer(int kind, int64_t c, int64_t d) {
  wait_nofp_mid(kind, c, d);
  __asm__ volatile("" ::: "memory");
}
