/* Benchmark workload for heap profilers: threads doing a FIXED amount of
 * allocation-heavy work (the same sequence every run), so a profiler's
 * overhead shows as extra CPU time. Each operation picks a size of 16-512
 * bytes (half up to 64, a third up to 192), allocates it a few calls deep
 * (4-11 frames, so stacks vary and a sampled stack walk has some depth),
 * fills the first bytes and reads another block; the block replaces one of
 * 8192 that live for a while (freed as a later operation takes its slot).
 * Every 64th operation also replaces one of 16384 long-lived blocks,
 * every 16th grows a block with realloc, every 8th makes and frees a
 * scratch string at once. The work per operation, default 0, adds that
 * many rounds of arithmetic on the new block's first byte (registers only),
 * which sets the allocator's share of the CPU.
 *   bench_heap_overhead [operations per thread, in thousands, default 4000]
 *                       [threads, default 4] [work per operation, default 0]
 * Prints ops=N and checksum=X lines. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8192
#define LONG_SLOTS 16384

typedef struct {
  uint64_t ops, rng, sum, work;
  void *slot[SLOTS];
  void *keep[LONG_SLOTS];
} job;

static uint64_t next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static size_t pick_size(uint64_t r) {
  unsigned c = (unsigned)(r % 10);
  r >>= 8;
  if (c < 5)
    return 16 + (size_t)(r % 49); /* 16..64 */
  if (c < 8)
    return 65 + (size_t)(r % 128); /* 65..192 */
  return 193 + (size_t)(r % 320);  /* 193..512 */
}

/* Allocates n bytes depth calls down and fills the block's first bytes. */
__attribute__((noipa)) static unsigned char *nest(unsigned depth, size_t n, uint64_t tag) {
  if (depth) {
    unsigned char *q = nest(depth - 1, n, tag);
    __asm__ volatile("" : : "r"(q) : "memory"); /* a real frame each: no tail call */
    return q;
  }
  unsigned char *p = malloc(n);
  if (!p)
    abort();
  memset(p, (int)(tag & 0xff), n < 64 ? n : 64);
  return p;
}

__attribute__((noipa)) static unsigned char *make_string(const char *a, uint64_t tag) {
  char *s = malloc(48);
  if (!s)
    abort();
  snprintf(s, 48, "%s-%016llx", a, (unsigned long long)tag);
  return (unsigned char *)s;
}

/* rounds dependent multiply-xorshift steps from seed. */
__attribute__((noipa)) static uint64_t busy(uint64_t seed, uint64_t rounds) {
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < rounds; i++) {
    x *= 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
  }
  return x;
}

static void *worker(void *arg) {
  job *j = arg;
  for (uint64_t i = 0; i < j->ops; i++) {
    uint64_t r = next(&j->rng);
    size_t n = pick_size(r);
    unsigned char *p = nest(4 + (unsigned)(r >> 40) % 8, n, r);
    if (j->work)
      j->sum += busy(p[0] + r, j->work);
    uint32_t k = (uint32_t)(r >> 20) % SLOTS;
    unsigned char *old = j->slot[k];
    if (old)
      j->sum += old[0] + old[15];
    free(old);
    j->slot[k] = p;
    if ((i & 15) == 7) { /* grow a block: a move or a resize in place */
      uint32_t g = (uint32_t)(r >> 33) % SLOTS;
      unsigned char *q = realloc(j->slot[g], 520 + (r & 511));
      if (!q)
        abort();
      q[519] = 1;
      j->slot[g] = q;
    }
    if ((i & 7) == 3) {
      unsigned char *s = make_string("key", r);
      j->sum += s[4];
      free(s);
    }
    if ((i & 63) == 0) {
      uint32_t q = (uint32_t)(r >> 48) % LONG_SLOTS;
      free(j->keep[q]);
      j->keep[q] = nest(6, pick_size(r >> 7), r);
    }
  }
  for (int k = 0; k < SLOTS; k++)
    free(j->slot[k]);
  for (int k = 0; k < LONG_SLOTS; k++)
    free(j->keep[k]);
  return NULL;
}

int main(int argc, char **argv) {
  long kops = argc > 1 ? atol(argv[1]) : 4000;
  int nthreads = argc > 2 ? atoi(argv[2]) : 4;
  long work = argc > 3 ? atol(argv[3]) : 0;
  if (kops < 1 || kops > 10000000 || nthreads < 1 || nthreads > 64 || work < 0 || work > 100000) {
    fprintf(stderr, "usage: bench_heap_overhead [thousands of operations per thread, "
                    "1..10000000] [threads, 1..64] [work per operation, 0..100000]\n");
    return 2;
  }
  job *jobs = calloc((size_t)nthreads, sizeof *jobs);
  pthread_t *t = calloc((size_t)nthreads, sizeof *t);
  if (!jobs || !t)
    return 1;
  for (int i = 0; i < nthreads; i++) {
    jobs[i].ops = (uint64_t)kops * 1000;
    jobs[i].work = (uint64_t)work;
    jobs[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
  }
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0)
      return 1;
  uint64_t sum = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(t[i], NULL);
    sum += jobs[i].sum;
  }
  printf("ops=%llu\nchecksum=%llu\n",
         (unsigned long long)kops * 1000 * (unsigned long long)nthreads, (unsigned long long)sum);
  free(jobs);
  free(t);
  return 0;
}
