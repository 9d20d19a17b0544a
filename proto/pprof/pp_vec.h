/* Growing a caller's array: the one growth rule of the codec, the views
 * and the exporters. Thread-safe as far as the array is the caller's. */
#ifndef PP_VEC_H
#define PP_VEC_H
#include <stdint.h>
#include <stdlib.h>

/* Makes room for need elements of elem bytes in the array *(T **)v of
 * capacity *cap: the capacity at least doubles, from first when it is 0,
 * so n appends cost O(n) copies. 0, or -1 on ENOMEM or a size past
 * SIZE_MAX (then *v and *cap are unchanged; the array stays valid). */
static inline int pp_vec_grow(void *v, size_t *cap, size_t need, size_t elem, size_t first) {
  if (need <= *cap)
    return 0;
  size_t ncap = *cap ? *cap : first;
  while (ncap < need)
    ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
  if (ncap > SIZE_MAX / elem)
    return -1;
  void *nv = realloc(*(void **)v, ncap * elem);
  if (!nv)
    return -1;
  *(void **)v = nv;
  *cap = ncap;
  return 0;
}
#endif
