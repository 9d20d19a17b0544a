/* Built with -fomit-frame-pointer (sdk_stress.cmake): the hot loop keeps
 * rbp busy as a general register, so an unwinder that trusts frame pointers
 * sees garbage there. */
#include "st_common.h"
#include "st_nofp.h"

uint64_t st_nofp_hot(uint64_t rounds) {
  uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, k = 9, m = 10, n = 11, p = 12;
  for (uint64_t i = 0; i < rounds; i++) {
    a += b * i;
    b ^= c + a;
    c += d * b;
    d ^= e + c;
    e += f * d;
    f ^= g + e;
    g += h * f;
    h ^= k + g;
    k += m * h;
    m ^= n + k;
    n += p * m;
    p ^= a + n;
  }
  return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ k ^ m ^ n ^ p;
}

uint64_t st_nofp_outer(double seconds) {
  uint64_t acc = 0;
  double end = wl_thread_cpu() + seconds;
  while (wl_thread_cpu() < end)
    acc += st_nofp_hot(200000);
  return acc;
}
