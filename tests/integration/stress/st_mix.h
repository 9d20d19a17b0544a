/* A frameless leaf and its caller for the no-frame-pointer cases (st_nofp,
 * the dlopen library), built -O2 -fomit-frame-pointer: the leaf's twelve
 * live values keep rbp busy as a general register, so an unwinder that
 * trusts frame pointers sees garbage there and only the CFI unwinds it. */
#ifndef ST_MIX_H
#define ST_MIX_H
#include "st_common.h"

/* `attrs uint64_t name(uint64_t rounds)`: the leaf. */
#define ST_MIX_LEAF(attrs, name)                                                                   \
  attrs uint64_t name(uint64_t rounds) {                                                           \
    uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, k = 9, m = 10, n = 11,        \
             p = 12;                                                                               \
    for (uint64_t i = 0; i < rounds; i++) {                                                        \
      a += b * i;                                                                                  \
      b ^= c + a;                                                                                  \
      c += d * b;                                                                                  \
      d ^= e + c;                                                                                  \
      e += f * d;                                                                                  \
      f ^= g + e;                                                                                  \
      g += h * f;                                                                                  \
      h ^= k + g;                                                                                  \
      k += m * h;                                                                                  \
      m ^= n + k;                                                                                  \
      n += p * m;                                                                                  \
      p ^= a + n;                                                                                  \
    }                                                                                              \
    return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ k ^ m ^ n ^ p;                                          \
  }

/* `uint64_t name(double seconds)`: calls leaf for that much thread CPU. */
#define ST_MIX_OUTER(name, leaf)                                                                   \
  uint64_t name(double seconds) {                                                                  \
    uint64_t acc = 0;                                                                              \
    double end = wl_thread_cpu() + seconds;                                                        \
    while (wl_thread_cpu() < end)                                                                  \
      acc += leaf(200000);                                                                         \
    return acc;                                                                                    \
  }
#endif
