/* The hot path runs in st_nofp_hot.c, built without frame pointers. */
#include "st_common.h"
#include "st_nofp.h"

int main(void) {
  uint64_t acc = st_nofp_outer(2.0);
  printf("nofp=%d hot=%lu\n", acc != 0, (unsigned long)st_nofp_hot(1000));
  return 0;
}
