#include "sk_leaf.h"

uint64_t leaf(uint64_t n, uint64_t seed) {
  uint64_t x = seed | 1, acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    acc ^= x >> 29;
  }
  return acc;
}
