/* Built without .eh_frame (-fno-asynchronous-unwind-tables): the unwinder
 * can only use its .debug_frame (test_unwind_dwarf). */
#include <stdint.h>

#pragma GCC visibility push(default) /* the build hides symbols by default */
uint64_t udf_leaf(uint64_t n);
uint64_t udf_caller(uint64_t n);
#pragma GCC visibility pop

__attribute__((noinline)) uint64_t udf_leaf(uint64_t n) {
  uint64_t x = n;
  for (uint64_t i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + i;
  return x;
}

__attribute__((noinline)) uint64_t udf_caller(uint64_t n) {
  return udf_leaf(n) + 1;
}
