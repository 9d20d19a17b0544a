/* Built without unwind tables (tests/arm64/CMakeLists.txt) but with frame
 * pointers: test_a64_unwind's frames that only the frame-pointer chain
 * can step through, between a leaf and a caller that have CFI. */
#include <stdint.h>

uint64_t a64_leaf(uint64_t n);
#pragma GCC visibility push(default)
uint64_t a64_nocfi_mid(uint64_t n);
uint64_t a64_nocfi_outer(uint64_t n);
#pragma GCC visibility pop

__attribute__((noinline)) uint64_t a64_nocfi_mid(uint64_t n) {
  uint64_t r = a64_leaf(n);
  __asm__ volatile("" ::: "memory"); /* no tail call: a frame of its own */
  return r + 1;
}

/* A frame bigger than its frame record: the caller's SP is not just above
 * the record, as a frame-pointer step on aarch64 would guess. */
__attribute__((noinline)) uint64_t a64_nocfi_outer(uint64_t n) {
  volatile uint64_t pad[32];
  pad[n & 31] = n;
  uint64_t r = a64_nocfi_mid(n);
  return r * 3 + pad[n & 31];
}
