/* A live heap of known size, held while the process runs:
 *   wl_od_heap [seconds, default 6]
 * keep_live allocates 64 MiB in 4 KiB blocks and keeps them until exit;
 * meanwhile churn allocates and frees small blocks (nothing of it stays).
 * Prints true_live=<bytes> once the live heap is built, then runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_common.h"

#define BLOCK 4096
#define NBLOCKS (64 * 256) /* 64 MiB */

__attribute__((noipa)) void *keep_live(size_t n);
__attribute__((noipa)) void *keep_live(size_t n) {
  char *p = malloc(n);
  if (p)
    memset(p, 1, 64);
  return p;
}

__attribute__((noipa)) void churn(void);
__attribute__((noipa)) void churn(void) {
  void *p = malloc(96);
  if (p)
    ((volatile char *)p)[0] = 1;
  free(p);
}

int main(int argc, char **argv) {
  double seconds = wl_arg(argc, argv, 6, 600, "wl_od_heap [seconds, 0..600]");
  wl_start();
  void **keep = malloc(NBLOCKS * sizeof *keep);
  if (!keep)
    return 1;
  for (int i = 0; i < NBLOCKS; i++)
    keep[i] = keep_live(BLOCK);
  printf("true_live=%d\n", NBLOCKS * BLOCK);
  fflush(stdout);
  double t0 = wl_clock(CLOCK_MONOTONIC);
  while (wl_clock(CLOCK_MONOTONIC) - t0 < seconds)
    for (int i = 0; i < 10000; i++)
      churn();
  for (int i = 0; i < NBLOCKS; i++)
    free(keep[i]);
  free(keep);
  return 0;
}
