#include "membudget.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define GUARD_READ_NS 10000000LL  /* one statm read per 10 ms at most */
#define GUARD_TRIM_NS 100000000LL /* one malloc_trim per 100 ms at most */

static _Atomic uint64_t g_limit;
static _Atomic int64_t g_read_at, g_trim_at;
static _Atomic int64_t g_last_rss;

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t membudget_rss(void) {
  /* read(2) on a small buffer: no stdio lock or allocation, cheap enough to
   * ask on a hot path every few milliseconds. */
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  char *p = buf, *end;
  strtoll(p, &end, 10); /* size */
  if (end == p)
    return -1;
  p = end;
  long long rss = strtoll(p, &end, 10);
  if (end == p || rss < 0)
    return -1;
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (int64_t)rss * page : -1;
}

int membudget_split(uint64_t max, uint64_t fixed, uint64_t *dynamic, char *err, size_t errlen) {
  if (fixed < max && max - fixed >= MEMBUDGET_MIN_DYNAMIC) {
    *dynamic = max - fixed;
    return 0;
  }
  uint64_t want = fixed + MEMBUDGET_MIN_DYNAMIC;
  snprintf(err, errlen,
           "--max-memory %llu MiB is too small: the sidecar itself takes %llu MiB (code, the "
           "exporters' libraries, threads) and needs at least %llu MiB more for frames and "
           "batches; set --max-memory to %llu MiB or more",
           (unsigned long long)(max >> 20), (unsigned long long)((fixed + (1 << 20) - 1) >> 20),
           (unsigned long long)(MEMBUDGET_MIN_DYNAMIC >> 20),
           (unsigned long long)((want + (1 << 20) - 1) >> 20));
  return -1;
}

void membudget_guard(uint64_t limit) {
  atomic_store(&g_limit, limit);
  atomic_store(&g_read_at, 0);
}

uint64_t membudget_guard_limit(void) {
  return atomic_load(&g_limit);
}

bool membudget_over(void) {
  uint64_t limit = atomic_load(&g_limit);
  if (!limit)
    return false;
  int64_t now = mono_ns();
  int64_t at = atomic_load(&g_read_at);
  int64_t rss = atomic_load(&g_last_rss);
  if (now - at >= GUARD_READ_NS && atomic_compare_exchange_strong(&g_read_at, &at, now)) {
    rss = membudget_rss();
    if (rss >= 0 && (uint64_t)rss > limit) {
      int64_t t = atomic_load(&g_trim_at);
      if (now - t >= GUARD_TRIM_NS && atomic_compare_exchange_strong(&g_trim_at, &t, now)) {
        malloc_trim(0);
        rss = membudget_rss();
      }
    }
    atomic_store(&g_last_rss, rss);
  }
  return rss >= 0 && (uint64_t)rss > limit;
}
