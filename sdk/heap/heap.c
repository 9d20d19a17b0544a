/* Heap profiling: the sampled path, the live table and the cut (heap.h). */
#include "heap.h"

#include <inttypes.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "profbuild.h"
#include "pushprof.h"
#include "ring.h"
#include "stack_copy.h"
#include "threads_linux.h"
#include "unwind.h"
#include "walk_here.h"

/* The interposer library's hooks once heap profiling has started (or the
 * tests'); NULL before. */
static heap_hooks *_Atomic g_h;
static heap_hooks *g_test_hooks;
/* The thread state of a thread when there are no hooks (heap profiling
 * never started): cuts and stops still mark themselves busy. */
static __thread heap_tls g_no_hooks_tls;

#define OBJ_ONE 1024 /* objects are counted in 1/1024ths: a sample stands for 1/p of them */
#define MAX_DEPTH RING_MAX_DEPTH

/* One distinct allocation stack and what it allocated and holds. */
typedef struct hstack {
  uintptr_t *pcs; /* return addresses, caller of malloc first; NULL while pending */
  uint32_t depth;
  stack_copy *copy; /* non-NULL: the stack is this copy, walked later */
  uint64_t hash;
  unsigned truncated : 1;
  unsigned used : 1;
  int64_t alloc_obj, alloc_bytes; /* since the last cut */
  int64_t inuse_obj, inuse_bytes; /* live sampled blocks */
} hstack;

/* One live sampled block. */
typedef struct hlive {
  uintptr_t p; /* 0: empty */
  uint32_t stack;
  int64_t obj, bytes;
} hlive;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;     /* the tables below */
static pthread_mutex_t g_cut_mu = PTHREAD_MUTEX_INITIALIZER; /* one cut at a time */
static hstack *g_st;                                         /* g_nst used slots of g_stcap */
static size_t g_nst, g_stcap;
static uint32_t *g_free_st; /* unused slots of g_st */
static size_t g_nfree_st, g_free_cap;
static uint32_t *g_sidx; /* stack index + 1 by hash, open addressing */
static size_t g_sidx_cap;
static hlive *g_live; /* by address, open addressing, backward-shift delete */
static size_t g_live_cap, g_nlive;
static uint16_t *g_filter_mem;  /* live sampled blocks per filter slot */
static uint64_t *g_filter_bits; /* heap_filter's bits; kept across stop/start: racing frees
                                 * may still read it */
static _Atomic int64_t g_rate = HEAP_RATE_DEFAULT;
static int64_t g_win_start_ns;
/* The interposer library's code: a stack starts below its frames. */
static uintptr_t g_own_lo, g_own_hi;
static size_t g_npending; /* stacks whose copy waits to be walked; under g_mu */

/* The copies of stacks whose walk waits for tables (stack_copy.h), walked
 * on the collector thread after each drain and before each cut. */
static stack_copy_budget g_copies;
static const pp_label truncated_label = {.key = "pushprof_stack", .str = "truncated"};

static struct {
  _Atomic uint64_t samples, frees_sampled, filter_misses, parked, parked_full, deferred,
      skipped_busy, table_oom, cut_short;
} S;

void heap_use_hooks(heap_hooks *h) {
  g_test_hooks = h;
}

static heap_tls *self(void) {
  heap_hooks *h = atomic_load_explicit(&g_h, memory_order_acquire);
  return h ? h->self() : &g_no_hooks_tls;
}

static int is_on(void) {
  heap_hooks *h = atomic_load_explicit(&g_h, memory_order_acquire);
  return h && atomic_load_explicit(&h->on, memory_order_relaxed);
}

int heap_running(void) {
  return is_on();
}

static int64_t now_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- sampling intervals ---- */

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* ln(u) for u in (0, 1], without libm (the static library's users do not
 * link it): u = m * 2^e with m in [1, 2), ln(m) = 2 atanh((m-1)/(m+1)) by
 * its series (relative error under 1e-7, plenty for an interval). */
static double ln_unit(double u) {
  uint64_t b;
  memcpy(&b, &u, sizeof b);
  int e = (int)((b >> 52) & 0x7ff) - 1023;
  b = (b & ((1ull << 52) - 1)) | (1023ull << 52);
  double m;
  memcpy(&m, &b, sizeof m);
  double t = (m - 1) / (m + 1), t2 = t * t;
  double s = t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 / 11)))));
  return e * 0.6931471805599453 + 2 * s;
}

/* 1 - exp(-x) for x >= 0, without libm, to about 1e-12: a series near 0
 * (no cancellation), else exp(-x) = 2^-k exp(-r) with r in [0, ln 2). */
static double one_minus_exp_neg(double x) {
  if (x < 1e-2)
    return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4 * (1 - x / 5 * (1 - x / 6)))));
  if (x > 700)
    return 1;
  int k = (int)(x / 0.6931471805599453);
  double r = x - k * 0.6931471805599453, term = 1, e = 1;
  for (int i = 1; i <= 14; i++) {
    term *= -r / i;
    e += term;
  }
  uint64_t b = (uint64_t)(1023 - k) << 52; /* 2^-k, k <= 1010 */
  double scale;
  memcpy(&scale, &b, sizeof scale);
  return 1 - e * scale;
}

/* An exponentially distributed interval of mean g_rate bytes, at least 1. */
static int64_t draw(heap_tls *t) {
  if (t->rng == 0) {
    uint64_t seed =
        (uint64_t)now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)gettid() << 32) ^ (uint64_t)(uintptr_t)t;
    t->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
  }
  double u = (double)((rng_next(&t->rng) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
  double v = -ln_unit(u) * (double)atomic_load_explicit(&g_rate, memory_order_relaxed);
  if (v < 1)
    return 1;
  if (v > (double)(INT64_MAX / 4))
    return INT64_MAX / 4;
  return (int64_t)v;
}

/* ---- the parked frees ---- */

static void table_remove_locked(uintptr_t p, int count);

/* Leaves the busy state: the frees parked meanwhile go (their entries
 * first, then the blocks). */
static void leave_busy(heap_tls *t) {
  while (t->nparked) {
    void *q[HEAP_PARKED_MAX];
    uint32_t n = t->nparked;
    memcpy(q, t->parked, n * sizeof *q);
    t->nparked = 0;
    pthread_mutex_lock(&g_mu);
    for (uint32_t i = 0; i < n; i++)
      table_remove_locked((uintptr_t)q[i], 1);
    pthread_mutex_unlock(&g_mu);
    heap_hooks *h = atomic_load_explicit(&g_h, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
      if (h && h->real_free)
        h->real_free(q[i]);
  }
  t->busy = 0;
}

/* ---- the stack table ---- */

static uint64_t stack_hash(const uintptr_t *pcs, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (uint32_t i = 0; i < n; i++) {
    h ^= (uint64_t)pcs[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h | 1;
}

/* The index is kept at most half full (sidx_rebuild), so a free slot is
 * always found; the bound is a guard only. */
static void sidx_insert(uint32_t idx) {
  size_t mask = g_sidx_cap - 1, i = (size_t)g_st[idx].hash & mask;
  for (size_t k = 0; k < g_sidx_cap; k++, i = (i + 1) & mask)
    if (g_sidx[i] == 0) {
      g_sidx[i] = idx + 1;
      return;
    }
}

/* Rebuilds the index from the used stacks that are walked, with room for
 * every slot at half load (stacks walked from copies join g_nst without
 * being indexed). Under g_mu; *garbage gets the old index to free. */
static int sidx_rebuild(void **garbage) {
  size_t cap = 512;
  while (cap < (g_nst + 1) * 2)
    cap *= 2;
  uint32_t *n = calloc(cap, sizeof *n);
  if (!n)
    return -1;
  *garbage = g_sidx;
  g_sidx = n;
  g_sidx_cap = cap;
  for (size_t i = 0; i < g_nst; i++)
    if (g_st[i].used && g_st[i].pcs)
      sidx_insert((uint32_t)i);
  return 0;
}

/* A stack slot, from the free list or the end. Under g_mu. -1: no memory. */
static int64_t stack_slot(void **garbage) {
  if (g_nfree_st)
    return g_free_st[--g_nfree_st];
  if (g_nst == g_stcap) {
    size_t cap = g_stcap ? g_stcap * 2 : 256;
    hstack *n = malloc(cap * sizeof *n);
    if (!n)
      return -1;
    if (g_nst)
      memcpy(n, g_st, g_nst * sizeof *n);
    *garbage = g_st;
    g_st = n;
    g_stcap = cap;
  }
  return (int64_t)g_nst++;
}

/* The index of the stack pcs[0..n), added if new (pcs copied). Under g_mu.
 * -1: no memory. */
static int64_t stack_intern(const uintptr_t *pcs, uint32_t n, int truncated, void **g1, void **g2) {
  uint64_t h = stack_hash(pcs, n);
  if (g_sidx_cap) {
    size_t mask = g_sidx_cap - 1;
    for (size_t i = (size_t)h & mask; g_sidx[i]; i = (i + 1) & mask) {
      hstack *s = &g_st[g_sidx[i] - 1];
      if (s->hash == h && s->depth == n && s->truncated == (unsigned)truncated &&
          memcmp(s->pcs, pcs, n * sizeof *pcs) == 0)
        return g_sidx[i] - 1;
    }
  }
  if ((g_nst + 1) * 2 > g_sidx_cap && sidx_rebuild(g1) != 0)
    return -1;
  uintptr_t *copy = malloc((n ? n : 1) * sizeof *copy);
  if (!copy)
    return -1;
  int64_t idx = stack_slot(g2);
  if (idx < 0) {
    free(copy); /* our own block, never sampled: no parking */
    return -1;
  }
  memcpy(copy, pcs, n * sizeof *pcs);
  hstack *s = &g_st[idx];
  memset(s, 0, sizeof *s);
  s->pcs = copy;
  s->depth = n;
  s->copy = NULL;
  s->hash = h;
  s->truncated = truncated != 0;
  s->used = 1;
  sidx_insert((uint32_t)idx);
  return idx;
}

/* ---- the live table ---- */

static size_t live_home(uintptr_t p) {
  return (size_t)(((uint64_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 17) & (g_live_cap - 1);
}

static hlive *live_find(uintptr_t p) {
  if (!g_live_cap)
    return NULL;
  size_t mask = g_live_cap - 1;
  for (size_t i = live_home(p); g_live[i].p; i = (i + 1) & mask)
    if (g_live[i].p == p)
      return &g_live[i];
  return NULL;
}

static void live_put(const hlive *e) {
  size_t mask = g_live_cap - 1;
  size_t i = live_home(e->p);
  while (g_live[i].p)
    i = (i + 1) & mask;
  g_live[i] = *e;
}

static int live_grow(void **garbage) {
  size_t cap = g_live_cap ? g_live_cap * 2 : 1024;
  hlive *n = calloc(cap, sizeof *n), *old = g_live;
  size_t oldcap = g_live_cap;
  if (!n)
    return -1;
  g_live = n;
  g_live_cap = cap;
  for (size_t i = 0; i < oldcap; i++)
    if (old[i].p)
      live_put(&old[i]);
  *garbage = old;
  return 0;
}

/* Removes e (backward-shift: no tombstones). */
static void live_delete(hlive *e) {
  size_t mask = g_live_cap - 1;
  size_t i = (size_t)(e - g_live);
  for (size_t j = (i + 1) & mask; g_live[j].p; j = (j + 1) & mask) {
    size_t home = live_home(g_live[j].p);
    /* g_live[j] may move to i if its home is not in (i, j] cyclically. */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      g_live[i] = g_live[j];
      i = j;
    }
  }
  g_live[i].p = 0;
  g_nlive--;
}

/* Under g_mu: the slot's count, and its bit when the count leaves or
 * reaches 0. A saturated count stays (its frees always check the table). */
static void filter_add(uintptr_t p, int d) {
  size_t s = heap_filter_slot((void *)p);
  uint16_t *c = &g_filter_mem[s];
  _Atomic uint64_t *w = (_Atomic uint64_t *)&g_filter_bits[s >> 6];
  uint64_t bit = 1ull << (s & 63);
  if (d > 0 && *c < UINT16_MAX) {
    if ((*c)++ == 0)
      atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
  } else if (d < 0 && *c > 0 && *c < UINT16_MAX) {
    if (--(*c) == 0)
      atomic_fetch_and_explicit(w, ~bit, memory_order_relaxed);
  }
}

/* The live entry of p goes: its stack's in-use totals drop. count: a free
 * (statistics). Under g_mu. */
static void table_remove_locked(uintptr_t p, int count) {
  hlive *e = live_find(p);
  if (!e) {
    if (count)
      atomic_fetch_add_explicit(&S.filter_misses, 1, memory_order_relaxed);
    return;
  }
  hstack *s = &g_st[e->stack];
  s->inuse_obj -= e->obj;
  s->inuse_bytes -= e->bytes;
  filter_add(p, -1);
  live_delete(e);
  if (count)
    atomic_fetch_add_explicit(&S.frees_sampled, 1, memory_order_relaxed);
}

/* ---- the sampled path ---- */

static void find_own(const void *code) {
  if (!g_own_hi)
    walk_here_code_range(code, &g_own_lo, &g_own_hi);
}

static void thread_bounds(heap_tls *t) {
  uintptr_t lo, hi;
  if (walk_here_bounds(&lo, &hi) == 0) {
    t->stack_lo = lo;
    t->stack_hi = hi;
  }
}

static uint32_t strip_own(const uintptr_t *raw, uint32_t n, uintptr_t *pcs) {
  return walk_here_strip(raw, n, g_own_lo, g_own_hi, pcs);
}

/* Walks the caller's stack into pcs (return addresses, the caller of malloc
 * first), or takes a copy (*copy) when the walk must wait for tables. */
__attribute__((noinline)) static uint32_t capture(heap_tls *t, uintptr_t *pcs, stack_copy **copy,
                                                  int *truncated) {
  unwind_regs r = {0};
#ifdef WALK_HERE_REGS
  WALK_HERE_REGS(r);
#else
  return 0;
#endif
  *copy = NULL;
  *truncated = 0;
  uintptr_t lo = t->stack_lo, hi = t->stack_hi;
  if (!hi || r.sp < lo || r.sp >= hi)
    return 0; /* another stack (a coroutine's): no walk */
  uintptr_t raw[MAX_DEPTH];
  unsigned fl;
  uint32_t n;
  int how = stack_copy_capture(&r, lo, hi, &g_copies, raw, MAX_DEPTH, &n, &fl, copy);
  if (how == STACK_COPIED) {
    atomic_fetch_add_explicit(&S.deferred, 1, memory_order_relaxed);
    return 0;
  }
  if (how == STACK_CUT_SHORT)
    atomic_fetch_add_explicit(&S.cut_short, 1, memory_order_relaxed);
  *truncated = (fl & UNWIND_F_TRUNCATED) != 0;
  return strip_own(raw, n, pcs);
}

void heap_sample_slow(void *p, size_t size) {
  heap_tls *t = self();
  if (t->busy || threads_is_own) {
    if (t->busy)
      atomic_fetch_add_explicit(&S.skipped_busy, 1, memory_order_relaxed);
    t->left = draw(t); /* our own allocations are not the program's */
    return;
  }
  if (t->rng == 0) { /* a thread's first crossing: its first interval now */
    t->left = draw(t);
    if (!heap_fast_count(t, size))
      return;
  }
  t->busy = 1;
  int64_t rate = atomic_load_explicit(&g_rate, memory_order_relaxed);
  t->left = draw(t);
  if (!t->stack_hi)
    thread_bounds(t);
  uintptr_t pcs[MAX_DEPTH];
  stack_copy *copy;
  int truncated;
  uint32_t n = capture(t, pcs, &copy, &truncated);
  /* Sampled with probability 1 - exp(-size/rate): the sample stands for
   * the inverse of that in allocations and in bytes. */
  double prob = one_minus_exp_neg((double)size / (double)rate);
  double inv = prob > 0 ? 1.0 / prob : 1.0;
  int64_t obj = (int64_t)(inv * OBJ_ONE + 0.5), bytes = (int64_t)((double)size * inv + 0.5);
  void *g1 = NULL, *g2 = NULL, *g3 = NULL;
  pthread_mutex_lock(&g_mu);
  if (!is_on() || !g_filter_mem) {
    pthread_mutex_unlock(&g_mu);
    stack_copy_free(copy);
    leave_busy(t);
    return;
  }
  int64_t idx;
  if (copy) {
    idx = stack_slot(&g2);
    if (idx >= 0) {
      memset(&g_st[idx], 0, sizeof g_st[idx]);
      g_st[idx].copy = copy;
      g_st[idx].used = 1;
      g_npending++;
      copy = NULL;
    }
  } else {
    idx = stack_intern(pcs, n, truncated, &g1, &g2);
  }
  if (idx < 0 || ((g_nlive + 1) * 10 > g_live_cap * 7 && live_grow(&g3) != 0)) {
    atomic_fetch_add_explicit(&S.table_oom, 1, memory_order_relaxed);
    pthread_mutex_unlock(&g_mu);
    stack_copy_free(copy);
    free(g1);
    free(g2);
    leave_busy(t);
    return;
  }
  hstack *s = &g_st[idx];
  s->alloc_obj += obj;
  s->alloc_bytes += bytes;
  s->inuse_obj += obj;
  s->inuse_bytes += bytes;
  table_remove_locked((uintptr_t)p, 0); /* a stale entry: that block's free went unseen */
  hlive e = {(uintptr_t)p, (uint32_t)idx, obj, bytes};
  live_put(&e);
  g_nlive++;
  filter_add((uintptr_t)p, +1);
  pthread_mutex_unlock(&g_mu);
  atomic_fetch_add_explicit(&S.samples, 1, memory_order_relaxed);
  free(g1);
  free(g2);
  free(g3);
  leave_busy(t);
}

int heap_free_slow(void *p) {
  if (!p)
    return 0; /* the filter may hit NULL: no block to forget, nothing to park */
  heap_tls *t = self();
  if (t->busy) {
    if (t->nparked < HEAP_PARKED_MAX) {
      t->parked[t->nparked++] = p;
      atomic_fetch_add_explicit(&S.parked, 1, memory_order_relaxed);
      return 1;
    }
    /* Its entry, if any, stays until the address is sampled again. */
    atomic_fetch_add_explicit(&S.parked_full, 1, memory_order_relaxed);
    return 0;
  }
  t->busy = 1;
  pthread_mutex_lock(&g_mu);
  table_remove_locked((uintptr_t)p, 1);
  pthread_mutex_unlock(&g_mu);
  leave_busy(t);
  return 0;
}

int heap_realloc_take(void *p) {
  heap_tls *t = self();
  if (t->busy) { /* its entry, if any, stays until the address is sampled again */
    atomic_fetch_add_explicit(&S.parked_full, 1, memory_order_relaxed);
    return 0;
  }
  t->busy = 1;
  int taken = 0;
  pthread_mutex_lock(&g_mu);
  hlive *e = live_find((uintptr_t)p);
  if (e) {
    t->saved_p = e->p;
    t->saved_stack = e->stack;
    t->saved_obj = e->obj;
    t->saved_bytes = e->bytes;
    taken = 1;
  }
  table_remove_locked((uintptr_t)p, 1);
  pthread_mutex_unlock(&g_mu);
  leave_busy(t);
  return taken;
}

void heap_realloc_failed(void *p) {
  heap_tls *t = self();
  if (t->busy || t->saved_p != (uintptr_t)p)
    return;
  t->busy = 1;
  void *g = NULL;
  pthread_mutex_lock(&g_mu);
  /* The stack may have been pruned by a cut meanwhile: then the block
   * counts as freed. */
  if (is_on() && t->saved_stack < g_nst && g_st[t->saved_stack].used &&
      ((g_nlive + 1) * 10 <= g_live_cap * 7 || live_grow(&g) == 0)) {
    hstack *s = &g_st[t->saved_stack];
    s->inuse_obj += t->saved_obj;
    s->inuse_bytes += t->saved_bytes;
    hlive e = {t->saved_p, t->saved_stack, t->saved_obj, t->saved_bytes};
    live_put(&e);
    g_nlive++;
    filter_add(e.p, +1);
  }
  pthread_mutex_unlock(&g_mu);
  t->saved_p = 0;
  free(g);
  leave_busy(t);
}

/* ---- start, stop ---- */

static void reset_locked(void **garbage, size_t *ng) {
  for (size_t i = 0; i < g_nst; i++)
    if (g_st[i].used && g_st[i].pcs)
      garbage[(*ng)++] = g_st[i].pcs; /* caller sized garbage for g_nst + 4 */
  garbage[(*ng)++] = g_st;
  garbage[(*ng)++] = g_free_st;
  garbage[(*ng)++] = g_sidx;
  garbage[(*ng)++] = g_live;
  g_st = NULL;
  g_nst = g_stcap = 0;
  g_free_st = NULL;
  g_nfree_st = g_free_cap = 0;
  g_sidx = NULL;
  g_sidx_cap = 0;
  g_live = NULL;
  g_live_cap = g_nlive = 0;
}

/* One allocation through the PLT, as the program's go (the asm keeps the
 * compiler from dropping the pair). */
__attribute__((noinline)) static void probe_malloc(void) {
  void *p = malloc(24);
  __asm__ volatile("" : : "r"(p) : "memory");
  free(p);
}

int heap_start(int64_t rate, char *err, size_t errlen) {
  if (rate < 1 || rate > HEAP_RATE_MAX) {
    snprintf(err, errlen, "heap rate %" PRId64 " is out of range (1..%lld bytes)", rate,
             (long long)HEAP_RATE_MAX);
    return -1;
  }
  heap_hooks *h = g_test_hooks;
  if (!h) {
    heap_hooks_fn get = (heap_hooks_fn)dlsym(RTLD_DEFAULT, HEAP_HOOKS_SYMBOL);
    h = get ? get() : NULL;
  }
  if (!h || !h->self || !h->is_ours) {
    snprintf(err, errlen,
             "heap profiling needs libpushprof_heap.so, the allocation interposers: add it to "
             "LD_PRELOAD (LD_PRELOAD=\"libpushprof_preload.so libpushprof_heap.so\") or link "
             "the program with -lpushprof_heap");
    return -1;
  }
  probe_malloc();
  if (!h->is_ours()) {
    snprintf(err, errlen,
             "libpushprof_heap.so is loaded but the program's malloc calls do not reach it: a "
             "sanitizer runtime or an allocator linked into the program comes first (with "
             "LD_PRELOAD, no allocator may come before libpushprof_heap.so)");
    return -1;
  }
  find_own(h->own_code);
  if (collector_add_after_drain(heap_resolve_pending) != 0) {
    snprintf(err, errlen, "the collector has no room for the heap profiler's stack copies");
    return -1;
  }
  pthread_mutex_lock(&g_mu);
  if (!g_filter_mem)
    g_filter_mem = calloc((size_t)1 << HEAP_FILTER_BITS, sizeof *g_filter_mem);
  if (!g_filter_bits)
    g_filter_bits = calloc(((size_t)1 << HEAP_FILTER_BITS) / 64, sizeof *g_filter_bits);
  if (!g_filter_mem || !g_filter_bits) {
    pthread_mutex_unlock(&g_mu);
    snprintf(err, errlen, "out of memory for the heap profiler's filter");
    return -1;
  }
  atomic_store(&g_rate, rate);
  g_win_start_ns = now_ns(CLOCK_REALTIME);
  atomic_store(&h->sample_slow, heap_sample_slow);
  atomic_store(&h->free_slow, heap_free_slow);
  atomic_store(&h->realloc_take, heap_realloc_take);
  atomic_store(&h->realloc_failed, heap_realloc_failed);
  atomic_store_explicit(&g_h, h, memory_order_release);
  atomic_store(&h->filter, g_filter_bits);
  atomic_store(&h->on, 1);
  pthread_mutex_unlock(&g_mu);
  collector_want_all_tables(); /* stacks need every table from the start */
  return 0;
}

void heap_stop(void) {
  pthread_mutex_lock(&g_cut_mu);
  heap_resolve_pending(); /* frees the stack copies */
  heap_tls *t = self();
  t->busy = 1;
  pthread_mutex_lock(&g_mu);
  heap_hooks *h = atomic_load(&g_h);
  if (h) {
    atomic_store(&h->on, 0);
    atomic_store(&h->filter, NULL);
  }
  size_t ng = 0;
  void **garbage = malloc((g_nst + 4) * sizeof *garbage);
  if (garbage)
    reset_locked(garbage, &ng);
  if (g_filter_mem)
    memset(g_filter_mem, 0, ((size_t)1 << HEAP_FILTER_BITS) * sizeof *g_filter_mem);
  if (g_filter_bits)
    for (size_t i = 0; i < ((size_t)1 << HEAP_FILTER_BITS) / 64; i++)
      atomic_store_explicit((_Atomic uint64_t *)&g_filter_bits[i], 0, memory_order_relaxed);
  pthread_mutex_unlock(&g_mu);
  for (size_t i = 0; i < ng; i++)
    free(garbage[i]);
  free(garbage);
  leave_busy(t);
  pthread_mutex_unlock(&g_cut_mu);
}

/* ---- stack copies ---- */

/* One resolver at a time (the collector after each drain, a cut before it
 * reads the table): each takes the pending copies' list under g_mu but walks
 * and frees them outside it, so two at once would free a copy twice. Taken
 * before g_mu, never inside it. */
static pthread_mutex_t g_resolve_mu = PTHREAD_MUTEX_INITIALIZER;
static void resolve_pending_locked(void);

void heap_resolve_pending(void) {
  pthread_mutex_lock(&g_resolve_mu);
  resolve_pending_locked();
  pthread_mutex_unlock(&g_resolve_mu);
}

static void resolve_pending_locked(void) {
  enum { BATCH = 32 };
  struct {
    uint32_t idx;
    stack_copy *copy;
    uint32_t depth;
    int truncated;
    uintptr_t *pcs;
  } todo[BATCH];
  heap_tls *t = self();
  int was_busy = t->busy;
  t->busy = 1;
  for (;;) {
    size_t n = 0;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; g_npending && i < g_nst && n < BATCH; i++)
      if (g_st[i].used && g_st[i].copy) {
        todo[n].idx = (uint32_t)i;
        todo[n].copy = g_st[i].copy;
        n++;
      }
    pthread_mutex_unlock(&g_mu);
    if (n == 0)
      break;
    for (size_t k = 0; k < n; k++) {
      uintptr_t raw[MAX_DEPTH], own[MAX_DEPTH];
      unsigned fl = 0;
      uint32_t d = stack_copy_walk(todo[k].copy, raw, MAX_DEPTH, &fl);
      d = strip_own(raw, d, own);
      todo[k].depth = d;
      todo[k].truncated = (fl & UNWIND_F_TRUNCATED) != 0;
      todo[k].pcs = malloc((d ? d : 1) * sizeof(uintptr_t));
      if (todo[k].pcs)
        memcpy(todo[k].pcs, own, d * sizeof(uintptr_t));
    }
    pthread_mutex_lock(&g_mu);
    for (size_t k = 0; k < n; k++) {
      /* Pending stacks are neither pruned nor reset: idx is still theirs. */
      hstack *s = &g_st[todo[k].idx];
      s->copy = NULL;
      g_npending--;
      s->pcs = todo[k].pcs;
      s->depth = todo[k].pcs ? todo[k].depth : 0;
      s->truncated = todo[k].truncated != 0;
      s->hash = s->pcs ? stack_hash(s->pcs, s->depth) : 1;
      todo[k].pcs = NULL;
      /* Not indexed: a later identical walk makes its own entry, and
       * readers sum identical stacks. */
    }
    pthread_mutex_unlock(&g_mu);
    for (size_t k = 0; k < n; k++)
      stack_copy_free(todo[k].copy);
  }
  if (!was_busy)
    leave_busy(t);
}

/* ---- the cut ---- */

static const profbuild_type heap_types[4] = {{"alloc_objects", "count"},
                                             {"alloc_space", "bytes"},
                                             {"inuse_objects", "count"},
                                             {"inuse_space", "bytes"}};

static int64_t objects(int64_t fx) {
  return (fx + OBJ_ONE / 2) / OBJ_ONE;
}

int heap_window_empty(void) {
  pthread_mutex_lock(&g_mu);
  int empty = g_nlive == 0;
  for (size_t i = 0; empty && i < g_nst; i++)
    if (g_st[i].used && g_st[i].alloc_obj)
      empty = 0;
  pthread_mutex_unlock(&g_mu);
  return empty;
}

/* keep: a snapshot (heap_snapshot) that leaves the window as it is. */
static int cut(int keep, uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  if (!out || !len || !start_ns || !end_ns)
    return PUSHPROF_EINVAL;
  *out = NULL;
  *len = 0;
  pthread_mutex_lock(&g_cut_mu);
  heap_resolve_pending();
  heap_tls *t = self();
  int was_busy = t->busy;
  t->busy = 1;
  int rc = 0;
  void *g1 = NULL, **garbage = NULL;
  size_t ng = 0, ns = 0;
  pthread_mutex_lock(&g_mu);
  int64_t rate = atomic_load(&g_rate);
  size_t nlive = g_nlive;
  profbuild_stack *st = calloc(g_nst + 1, sizeof *st);
  int64_t *vals = calloc((g_nst + 1) * 4, sizeof *vals);
  garbage = calloc(g_nst + 1, sizeof *garbage);
  if (g_nst + 1 > g_free_cap) {
    uint32_t *f = realloc(g_free_st, (g_nst + 1) * sizeof *f);
    if (f) {
      g_free_st = f;
      g_free_cap = g_nst + 1;
    }
  }
  if (!st || !vals || !garbage || g_free_cap < g_nst + 1) {
    pthread_mutex_unlock(&g_mu);
    rc = PUSHPROF_ENOMEM;
    goto done;
  }
  int64_t asum = 0, isum = 0;
  size_t pruned = 0;
  for (size_t i = 0; i < g_nst; i++) {
    hstack *s = &g_st[i];
    if (!s->used)
      continue;
    if (!keep && !s->alloc_obj && !s->inuse_obj && !s->copy) {
      garbage[ng++] = s->pcs; /* nothing left to say: the slot goes */
      s->used = 0;
      s->pcs = NULL;
      g_free_st[g_nfree_st++] = (uint32_t)i;
      pruned++;
      continue;
    }
    int64_t *v = vals + ns * 4;
    v[0] = objects(s->alloc_obj);
    v[1] = s->alloc_bytes;
    v[2] = objects(s->inuse_obj);
    v[3] = s->inuse_bytes;
    asum += v[1];
    isum += v[3];
    st[ns++] = (profbuild_stack){.pcs = s->pcs,
                                 .depth = s->depth,
                                 .values = v,
                                 .leaf_is_return = 1,
                                 .special = s->copy ? "[pushprof] stack not walked yet"
                                            : !s->pcs || !s->depth ? "[pushprof] no stack"
                                                                   : NULL,
                                 .labels = s->truncated ? &truncated_label : NULL,
                                 .nlabels = s->truncated ? 1 : 0};
    if (!keep)
      s->alloc_obj = s->alloc_bytes = 0;
  }
  if (pruned && g_sidx_cap && sidx_rebuild(&g1) != 0) {
    /* The old index would point at freed slots: drop it, stacks are then
     * simply not shared until the next rebuild. */
    g1 = g_sidx;
    g_sidx = NULL;
    g_sidx_cap = 0;
  }
  int64_t t0 = g_win_start_ns, t1 = now_ns(CLOCK_REALTIME);
  if (t1 < t0)
    t1 = t0;
  if (!keep)
    g_win_start_ns = t1;
  pthread_mutex_unlock(&g_mu);

  heap_stats hs;
  heap_get_stats(&hs);
  char c0[256], c1[384];
  const char *cp[2] = {c0, c1};
  snprintf(c0, sizeof c0,
           "pushprof: heap sampled every %" PRId64 " bytes on average; %zu sampled blocks live "
           "(%" PRId64 " bytes estimated), %" PRId64 " bytes allocated in this window (estimated)",
           rate, nlive, isum, asum);
  snprintf(c1, sizeof c1,
           "pushprof: since the start %" PRIu64 " samples (%" PRIu64
           " walked from a stack copy, %" PRIu64 " cut short where no unwind table was built "
           "yet), %" PRIu64 " sampled frees, %" PRIu64
           " allocations made inside the profiler not sampled, %" PRIu64
           " frees made inside it not checked, %" PRIu64 " samples lost to memory",
           hs.samples, hs.deferred, hs.cut_short, hs.frees_sampled, hs.skipped_busy, hs.parked_full,
           hs.table_oom);
  profbuild_meta meta = {.time_nanos = t0,
                         .duration_nanos = t1 - t0,
                         .comments = cp,
                         .ncomments = 2,
                         .types = heap_types,
                         .ntypes = 4,
                         .period_type = {"space", "bytes"},
                         .period = rate,
                         .default_type = "inuse_space"};
  rc = collector_build(st, ns, &meta, out, len);
  if (rc == 0) {
    *start_ns = t0;
    *end_ns = t1;
  }
done:
  if (!was_busy)
    leave_busy(t);
  pthread_mutex_unlock(&g_cut_mu);
  for (size_t i = 0; i < ng; i++)
    free(garbage[i]);
  free(garbage);
  free(g1);
  free(st);
  free(vals);
  return rc;
}

int heap_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  return cut(0, out, len, start_ns, end_ns);
}

int heap_snapshot(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  return cut(1, out, len, start_ns, end_ns);
}

void heap_get_stats(heap_stats *st) {
  memset(st, 0, sizeof *st);
  st->samples = atomic_load(&S.samples);
  st->frees_sampled = atomic_load(&S.frees_sampled);
  st->filter_misses = atomic_load(&S.filter_misses);
  st->parked = atomic_load(&S.parked);
  st->parked_full = atomic_load(&S.parked_full);
  st->deferred = atomic_load(&S.deferred);
  st->skipped_busy = atomic_load(&S.skipped_busy);
  st->table_oom = atomic_load(&S.table_oom);
  st->cut_short = atomic_load(&S.cut_short);
  pthread_mutex_lock(&g_mu);
  st->live = g_nlive;
  pthread_mutex_unlock(&g_mu);
}

/* ---- fork ---- */

void heap_atfork_prepare(void) {
  pthread_mutex_lock(&g_mu);
}

void heap_atfork_parent(void) {
  pthread_mutex_unlock(&g_mu);
}

void heap_atfork_child(void) {
  /* The live blocks are the child's too; its allocations start now. Stack
   * copies are the child's too, walked by its collector. */
  pthread_mutex_init(&g_mu, NULL);
  pthread_mutex_init(&g_cut_mu, NULL);
  pthread_mutex_init(&g_resolve_mu, NULL);
  for (size_t i = 0; i < g_nst; i++) {
    hstack *s = &g_st[i];
    if (!s->used)
      continue;
    s->alloc_obj = s->alloc_bytes = 0;
  }
  g_win_start_ns = now_ns(CLOCK_REALTIME);
  heap_tls *t = self();
  t->busy = 0;
  t->nparked = 0;
}
