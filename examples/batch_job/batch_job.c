/* batch_job: a cron-style job that runs for a fraction of a second.
 *
 * It knows nothing about pushprof: run it under LD_PRELOAD with
 * PUSHPROF_SOCKET set (see run_batch_job.sh) and the SDK pushes its profile to
 * the sidecar at exit, so even a 0.2 s run is profiled.
 *
 *   batch_job [records]   (default 300000; prints one summary line)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct record {
  uint64_t key;
  uint32_t amount;
  uint32_t region;
} record;

/* "Reads" the input: a deterministic stream of records. */
__attribute__((noinline)) static void load_records(record *r, size_t n, uint64_t seed) {
  uint64_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r[i].key = x;
    r[i].amount = (uint32_t)(x % 100000);
    r[i].region = (uint32_t)((x >> 32) % 16);
  }
}

/* Heapsort by key: the job's own code (frame pointers all the way), no
 * extra memory. */
static void sift_down(record *r, size_t root, size_t n) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n)
      return;
    if (child + 1 < n && r[child + 1].key > r[child].key)
      child++;
    if (r[root].key >= r[child].key)
      return;
    record t = r[root];
    r[root] = r[child];
    r[child] = t;
    root = child;
  }
}

__attribute__((noinline)) static void sort_records(record *r, size_t n) {
  for (size_t i = n / 2; i-- > 0;)
    sift_down(r, i, n);
  for (size_t end = n; end-- > 1;) {
    record t = r[0];
    r[0] = r[end];
    r[end] = t;
    sift_down(r, 0, end);
  }
}

/* Per-region totals and a rolling checksum over the sorted records. */
__attribute__((noinline)) static uint64_t summarize_regions(const record *r, size_t n,
                                                            uint64_t totals[16]) {
  uint64_t sum = 1469598103934665603ULL;
  for (int pass = 0; pass < 96; pass++) {
    for (size_t i = 0; i < n; i++) {
      totals[r[i].region] += r[i].amount;
      sum = (sum ^ r[i].key) * 1099511628211ULL;
    }
  }
  return sum;
}

int main(int argc, char **argv) {
  size_t n = 300000;
  if (argc > 1) {
    char *end;
    unsigned long v = strtoul(argv[1], &end, 10);
    if (*end || v == 0 || v > 50000000) {
      fprintf(stderr, "batch_job: records must be 1..50000000, got \"%s\"\n", argv[1]);
      return 2;
    }
    n = v;
  }
  record *r = malloc(n * sizeof *r);
  if (!r) {
    fprintf(stderr, "batch_job: out of memory for %zu records\n", n);
    return 1;
  }
  uint64_t totals[16] = {0};
  load_records(r, n, 88172645463325252ULL);
  sort_records(r, n);
  uint64_t sum = summarize_regions(r, n, totals);
  printf("batch_job: %zu records, region0=%llu checksum=%016llx\n", n,
         (unsigned long long)totals[0], (unsigned long long)sum);
  free(r);
  return 0;
}
