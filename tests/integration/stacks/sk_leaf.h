#ifndef SK_LEAF_H
#define SK_LEAF_H
#include <stdint.h>
/* A real leaf (sk_leaf.c, its own file so nothing inlines it): a dependent
 * multiply-add chain of n steps that calls nothing, so gcc gives it no frame
 * whatever -f[no-]omit-frame-pointer says. */
uint64_t leaf(uint64_t n, uint64_t seed);
#endif
