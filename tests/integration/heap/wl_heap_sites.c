/* Three allocation sites with known byte shares, 60/30/10, on two threads,
 * sizes drawn from 16..8191 bytes; site_ten's blocks are kept live in a
 * ring of known capacity, the others freed at once.
 *   wl_heap_sites [total MiB allocated, default 1024]
 * Prints what it really did: true_site_sixty=... (bytes allocated per
 * site), true_total, true_live (bytes live at exit). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_common.h"

#define RING 8192 /* live blocks per thread */

/* noipa: one frame with its plain name, never a tail call into malloc. */
#define SITE(name)                                                                                 \
  __attribute__((noipa)) void *name(size_t n);                                                     \
  __attribute__((noipa)) void *name(size_t n) {                                                    \
    char *p = malloc(n);                                                                           \
    if (p)                                                                                         \
      p[0] = 1;                                                                                    \
    return p;                                                                                      \
  }
SITE(site_sixty)
SITE(site_thirty)
SITE(site_ten)

typedef struct {
  uint64_t budget, seed;
  uint64_t bytes[3];
  void *ring[RING];
  size_t ring_size[RING];
} job;

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static void *worker(void *arg) {
  job *j = arg;
  uint64_t done = 0;
  size_t r = 0;
  while (done < j->budget) {
    size_t n = 16 + next(&j->seed) % 8176;
    /* Shares by bytes: 6, 3 and 1 parts of every 10. */
    unsigned pick = (unsigned)(next(&j->seed) % 10);
    if (pick < 6) {
      free(site_sixty(n));
      j->bytes[0] += n;
    } else if (pick < 9) {
      free(site_thirty(n));
      j->bytes[1] += n;
    } else {
      free(j->ring[r]);
      j->ring[r] = site_ten(n);
      j->ring_size[r] = n;
      r = (r + 1) % RING;
      j->bytes[2] += n;
    }
    done += n;
  }
  return NULL;
}

int main(int argc, char **argv) {
  double mib = wl_arg(argc, argv, 1024, 65536, "wl_heap_sites [MiB to allocate, 0..65536]");
  wl_start();
  static job jobs[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    jobs[i].budget = (uint64_t)(mib * 1048576 / 2);
    jobs[i].seed = 1234567 + (uint64_t)i;
    if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0) {
      fprintf(stderr, "wl_heap_sites: pthread_create failed\n");
      return 1;
    }
  }
  uint64_t site[3] = {0, 0, 0}, live = 0;
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    for (int k = 0; k < 3; k++)
      site[k] += jobs[i].bytes[k];
    for (int k = 0; k < RING; k++)
      live += jobs[i].ring[k] ? jobs[i].ring_size[k] : 0;
  }
  printf("true_site_sixty=%llu\ntrue_site_thirty=%llu\ntrue_site_ten=%llu\n",
         (unsigned long long)site[0], (unsigned long long)site[1], (unsigned long long)site[2]);
  printf("true_total=%llu\ntrue_live=%llu\n", (unsigned long long)(site[0] + site[1] + site[2]),
         (unsigned long long)live);
  return 0; /* the live ring is still allocated: the exit profile shows it */
}
