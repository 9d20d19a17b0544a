/* Recursion 10,000 frames deep burning CPU at the bottom, several times. */
#include "st_common.h"

WL_SPIN_FN(st_deep_spin)

__attribute__((noipa)) uint64_t st_recurse(int depth);
__attribute__((noipa)) uint64_t st_recurse(int depth) {
  volatile char pad[64];
  pad[0] = (char)depth;
  if (depth == 0)
    return st_deep_spin(0.3) * 0; /* the frame count only */
  return st_recurse(depth - 1) + 1 + (uint64_t)(pad[0] & 0); /* not a tail call */
}

int main(void) {
  uint64_t total = 0;
  for (int i = 0; i < 5; i++)
    total += st_recurse(10000);
  printf("depth=10000 frames=%lu\n", (unsigned long)total);
  return 0;
}
