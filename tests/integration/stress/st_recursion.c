/* Recursion 10,000 frames deep burning CPU at the bottom, several times.
 * The workload checks its own stack really is that deep (the compiler must
 * not turn the recursion into a loop) and prints the frame count. */
#include "st_common.h"

WL_SPIN_FN(st_deep_spin)

static char *g_top;
static int g_deep_ok = 1;

__attribute__((noipa)) uint64_t st_recurse(int depth);
__attribute__((noipa)) uint64_t st_recurse(int depth) {
  volatile char pad[64];
  pad[0] = (char)depth;
  if (depth == 0) {
    /* 10,000 frames of at least 64 bytes each. */
    if (g_top - (char *)__builtin_frame_address(0) < 10000L * 64)
      g_deep_ok = 0;
    return st_deep_spin(0.3) * 0;
  }
  uint64_t r = st_recurse(depth - 1);
  return r + 1 + (uint64_t)(pad[0] != (char)depth); /* pad lives across the call */
}

int main(void) {
  uint64_t total = 0;
  g_top = __builtin_frame_address(0);
  for (int i = 0; i < 5; i++)
    total += st_recurse(10000);
  printf("depth=10000 frames=%lu deep=%d\n", (unsigned long)total, g_deep_ok);
  return g_deep_ok ? 0 : 1;
}
