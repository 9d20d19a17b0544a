/* Built -O2 -fomit-frame-pointer into libcfi_omitfp_obj.so: an object whose
 * CFI test_cfi_build checks against libdw. The functions give the compiler reasons
 * for every kind of row: frameless leaves, big stack frames (def_cfa_offset
 * above 32767), a variable-length array (CFA from RBP), early returns
 * (remember_state / restore_state) and many callee-saved registers. */
#include <stddef.h>
#include <string.h>

int cfi_obj_leaf(int x);
long cfi_obj_big_frame(const char *s, size_t n);
long cfi_obj_vla(size_t n);
int cfi_obj_early(const int *v, size_t n);
long cfi_obj_saved(long a, long b, long c, long d);

__attribute__((noinline)) int cfi_obj_leaf(int x) {
  return x * 3 + 1;
}

long cfi_obj_big_frame(const char *s, size_t n) {
  char buf[70000];
  if (n > sizeof buf)
    n = sizeof buf;
  memcpy(buf, s, n);
  long sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += buf[i] * cfi_obj_leaf((int)i);
  return sum;
}

long cfi_obj_vla(size_t n) {
  volatile long v[n + 1];
  for (size_t i = 0; i <= n; i++)
    v[i] = cfi_obj_leaf((int)i);
  long s = 0;
  for (size_t i = 0; i <= n; i++)
    s += v[i];
  return s;
}

int cfi_obj_early(const int *v, size_t n) {
  if (!v)
    return -1;
  int acc = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < 0)
      return acc;
    acc += cfi_obj_leaf(v[i]);
  }
  return acc + cfi_obj_leaf(acc);
}

long cfi_obj_saved(long a, long b, long c, long d) {
  long r = 0;
  for (long i = 0; i < a; i++) {
    r += cfi_obj_leaf((int)(i + b));
    r ^= cfi_obj_leaf((int)(i * c));
    r += cfi_obj_leaf((int)(d - i));
    r += cfi_obj_big_frame("x", (size_t)(r & 1));
  }
  return r + a + b + c + d;
}
