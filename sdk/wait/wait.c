/* Off-CPU and lock profiles: the recorder, the window tables and the cut
 * (wait.h). */
#include "wait.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "labels.h"
#include "profbuild.h"
#include "pushprof.h"
#include "ring.h"
#include "stack_copy.h"
#include "threads_linux.h"
#include "unwind.h"
#include "walk_here.h"

#define MAX_DEPTH RING_MAX_DEPTH
/* Distinct (stack, labels) per kind and window; beyond, waits are counted
 * as lost to a full table. */
#define WAIT_ENTRIES_MAX 16384

typedef struct wentry {
  struct wentry *next;
  uint64_t hash;
  int64_t contentions; /* in 1/WAIT_ONE */
  int64_t delay_ns;
  uint16_t depth, nlabels, labels_len, truncated;
  uintptr_t *pcs; /* depth return addresses, the waiter's caller first */
  char labels[];  /* labels_len bytes, "key\0value\0" pairs */
} wentry;

#define NBUCKETS 4096

typedef struct wtable {
  wentry *b[NBUCKETS];
  size_t n;
  int64_t start_ns;
} wtable;

/* A wait whose stack is a copy not walked yet (stack_copy.h), with what it
 * adds: walked on the collector thread after each drain, and by each cut
 * of its kind before the window is read, then added to its kind's table as
 * if it had been walked when it ended. */
typedef struct wpending {
  struct wpending *next;
  stack_copy *copy;
  int kind;
  int64_t contentions, delay_ns;
  uint16_t nlabels, labels_len;
  char labels[]; /* labels_len bytes, as wentry's */
} wpending;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static wtable g_tab[WAIT_KINDS];      /* under g_mu */
static wpending *g_pending;           /* under g_mu, newest first */
static size_t g_npending[WAIT_KINDS]; /* under g_mu */
static stack_copy_budget g_copies;
/* One resolver at a time (the collector after a drain, a cut, the stop):
 * each takes pending waits out of the list under g_mu and walks them
 * outside it, and the cut and the stop must see no walk still in flight.
 * Taken before g_mu, never inside it, never by a waiting thread. */
static pthread_mutex_t g_resolve_mu = PTHREAD_MUTEX_INITIALIZER;
static wait_hooks *_Atomic g_h;
static wait_hooks *g_test_hooks;
static uintptr_t g_own_lo, g_own_hi; /* the interposer library's code */
static __thread struct {
  int busy;
  uintptr_t lo, hi; /* this thread's stack, once known */
} w_self;

static struct {
  _Atomic uint64_t recorded[WAIT_KINDS], deferred, cut_short, table_full, skipped_busy;
} S;

static const char *const kind_names[WAIT_KINDS] = {"off-CPU", "lock"};

void wait_use_hooks(wait_hooks *h) {
  g_test_hooks = h;
}

static int64_t now_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int wait_running(int kind) {
  wait_hooks *h = atomic_load(&g_h);
  return h && kind >= 0 && kind < WAIT_KINDS && atomic_load(&h->on[kind]);
}

/* ---- the stack ---- */

/* Walks the caller's stack into pcs, the waiting function's caller first
 * (walk_here_strip cuts the SDK's and the interposer's frames), or takes a
 * copy (*copy) when the walk must wait for tables. */
__attribute__((noinline)) static uint32_t capture(uintptr_t *pcs, stack_copy **copy,
                                                  int *truncated) {
  unwind_regs r = {0};
#ifdef WALK_HERE_REGS
  WALK_HERE_REGS(r);
#else
  return 0;
#endif
  *copy = NULL;
  *truncated = 0;
  if (!w_self.hi && walk_here_bounds(&w_self.lo, &w_self.hi) != 0)
    return 0;
  if (r.sp < w_self.lo || r.sp >= w_self.hi)
    return 0; /* another stack (a coroutine's): no walk */
  uintptr_t raw[MAX_DEPTH];
  unsigned fl;
  uint32_t n;
  int how = stack_copy_capture(&r, w_self.lo, w_self.hi, &g_copies, raw, MAX_DEPTH, &n, &fl, copy);
  if (how == STACK_COPIED) {
    atomic_fetch_add_explicit(&S.deferred, 1, memory_order_relaxed);
    return 0;
  }
  if (how == STACK_CUT_SHORT)
    atomic_fetch_add_explicit(&S.cut_short, 1, memory_order_relaxed);
  *truncated = (fl & UNWIND_F_TRUNCATED) != 0;
  return walk_here_strip(raw, n, g_own_lo, g_own_hi, pcs);
}

/* ---- the recorder ---- */

static uint64_t entry_hash(const uintptr_t *pcs, uint32_t n, const char *labels, uint16_t len) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (uint32_t i = 0; i < n; i++) {
    h ^= (uint64_t)pcs[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (uint16_t i = 0; i < len; i++) {
    h ^= (unsigned char)labels[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* Adds one wait to t, merged into the entry of its (stack, labels) or in a
 * new one (made outside mu). mu: t is g_tab[kind], under g_mu, and the
 * wait counts only while kind runs; NULL: t is a cut's own. Counted as
 * recorded, or as lost to a full table (or to memory). */
static void table_add(wtable *t, pthread_mutex_t *mu, int kind, const uintptr_t *pcs, uint32_t n,
                      int truncated, const char *labels, uint16_t nlabels, uint16_t len,
                      int64_t contentions, int64_t delay_ns) {
  uint64_t h = entry_hash(pcs, n, labels, len);
  wentry *fresh = NULL;
  for (int pass = 0; pass < 2; pass++) {
    if (mu) {
      pthread_mutex_lock(mu);
      if (!wait_running(kind)) {
        pthread_mutex_unlock(mu);
        break;
      }
    }
    wentry **slot = &t->b[h % NBUCKETS], *e = *slot;
    while (e && !(e->hash == h && e->depth == n && e->labels_len == len &&
                  memcmp(e->pcs, pcs, n * sizeof *pcs) == 0 && memcmp(e->labels, labels, len) == 0))
      e = e->next;
    if (!e && fresh && t->n < WAIT_ENTRIES_MAX) {
      e = fresh;
      fresh = NULL;
      e->next = *slot;
      *slot = e;
      t->n++;
    }
    if (e) {
      e->contentions += contentions;
      e->delay_ns += delay_ns;
      atomic_fetch_add_explicit(&S.recorded[kind], 1, memory_order_relaxed);
    } else if (pass == 1 || t->n >= WAIT_ENTRIES_MAX) {
      atomic_fetch_add_explicit(&S.table_full, 1, memory_order_relaxed);
      if (mu)
        pthread_mutex_unlock(mu);
      break;
    }
    if (mu)
      pthread_mutex_unlock(mu);
    if (e)
      break;
    /* A new (stack, labels): made outside the lock, then added. */
    fresh = malloc(sizeof *fresh + len + n * sizeof *pcs + sizeof(uintptr_t));
    if (!fresh) {
      atomic_fetch_add_explicit(&S.table_full, 1, memory_order_relaxed);
      break;
    }
    fresh->hash = h;
    fresh->contentions = fresh->delay_ns = 0;
    fresh->depth = (uint16_t)n;
    fresh->nlabels = nlabels;
    fresh->labels_len = len;
    fresh->truncated = (uint16_t)truncated;
    memcpy(fresh->labels, labels, len);
    uintptr_t at = ((uintptr_t)(fresh->labels + len) + sizeof(uintptr_t) - 1) &
                   ~(uintptr_t)(sizeof(uintptr_t) - 1);
    fresh->pcs = (uintptr_t *)at;
    memcpy(fresh->pcs, pcs, n * sizeof *pcs);
  }
  free(fresh);
}

/* Keeps a wait whose stack is copy until a resolver walks it; the copy is
 * freed if kind no longer runs. Made outside g_mu, added under it. */
static void pending_add(int kind, stack_copy *copy, const char *labels, uint16_t nlabels,
                        uint16_t len, int64_t contentions, int64_t delay_ns) {
  wpending *p = malloc(sizeof *p + len);
  if (!p) {
    stack_copy_free(copy);
    atomic_fetch_add_explicit(&S.table_full, 1, memory_order_relaxed);
    return;
  }
  p->copy = copy;
  p->kind = kind;
  p->contentions = contentions;
  p->delay_ns = delay_ns;
  p->nlabels = nlabels;
  p->labels_len = len;
  memcpy(p->labels, labels, len);
  pthread_mutex_lock(&g_mu);
  int on = wait_running(kind);
  if (on) {
    p->next = g_pending;
    g_pending = p;
    g_npending[kind]++;
  }
  pthread_mutex_unlock(&g_mu);
  if (!on) {
    stack_copy_free(copy);
    free(p);
  }
}

/* Takes the pending waits of kind (-1: every kind) out of the list, oldest
 * first. Under g_mu. */
static wpending *pending_take_locked(int kind) {
  wpending *out = NULL, **pp = &g_pending;
  while (*pp) {
    wpending *p = *pp;
    if (kind < 0 || p->kind == kind) {
      *pp = p->next;
      p->next = out;
      out = p;
      g_npending[p->kind]--;
    } else {
      pp = &p->next;
    }
  }
  return out;
}

static void pending_free(wpending *p) {
  while (p) {
    wpending *next = p->next;
    stack_copy_free(p->copy);
    free(p);
    p = next;
  }
}

/* Walks each wait of the list p (taken out of g_pending) and adds it to
 * tab, a cut's own table, or (NULL) to its kind's g_tab; frees them. Under
 * g_resolve_mu, not g_mu, with the thread's busy flag set. */
static void pending_resolve(wpending *p, wtable *tab) {
  while (p) {
    wpending *next = p->next;
    uintptr_t raw[MAX_DEPTH], pcs[MAX_DEPTH];
    unsigned fl = 0;
    uint32_t n = stack_copy_walk(p->copy, raw, MAX_DEPTH, &fl);
    n = walk_here_strip(raw, n, g_own_lo, g_own_hi, pcs);
    table_add(tab ? tab : &g_tab[p->kind], tab ? NULL : &g_mu, p->kind, pcs, n,
              (fl & UNWIND_F_TRUNCATED) != 0, p->labels, p->nlabels, p->labels_len, p->contentions,
              p->delay_ns);
    stack_copy_free(p->copy);
    free(p);
    p = next;
  }
}

void wait_resolve_pending(void) {
  int was_busy = w_self.busy;
  w_self.busy = 1;
  pthread_mutex_lock(&g_resolve_mu);
  pthread_mutex_lock(&g_mu);
  wpending *p = pending_take_locked(-1);
  pthread_mutex_unlock(&g_mu);
  pending_resolve(p, NULL);
  pthread_mutex_unlock(&g_resolve_mu);
  w_self.busy = was_busy;
}

void wait_record(int kind, int64_t contentions, int64_t delay_ns) {
  if (kind < 0 || kind >= WAIT_KINDS || threads_is_own)
    return;
  if (w_self.busy) { /* our own lock, or a wait inside the recorder */
    atomic_fetch_add_explicit(&S.skipped_busy, 1, memory_order_relaxed);
    return;
  }
  w_self.busy = 1;
  uintptr_t pcs[MAX_DEPTH];
  stack_copy *copy;
  int truncated;
  uint32_t n = capture(pcs, &copy, &truncated);
  char labels[RING_LABEL_BYTES];
  uint16_t nlabels = 0, len = 0;
  labels_block *lb = labels_self_block();
  if (lb && labels_copy(lb, labels, &nlabels, &len) != 0)
    nlabels = len = 0;
  if (copy)
    pending_add(kind, copy, labels, nlabels, len, contentions, delay_ns);
  else
    table_add(&g_tab[kind], &g_mu, kind, pcs, n, truncated, labels, nlabels, len, contentions,
              delay_ns);
  w_self.busy = 0;
}

/* ---- start, stop ---- */

int wait_start(unsigned mask, int64_t offcpu_rate, int64_t lock_rate, char *err, size_t errlen) {
  int64_t rates[WAIT_KINDS] = {offcpu_rate, lock_rate};
  for (int k = 0; k < WAIT_KINDS; k++)
    if ((mask & (1u << k)) && (rates[k] < 1 || rates[k] > WAIT_RATE_MAX)) {
      snprintf(err, errlen, "%s rate %" PRId64 " is out of range (1..%lld ns)", kind_names[k],
               rates[k], (long long)WAIT_RATE_MAX);
      return -1;
    }
  wait_hooks *h = g_test_hooks;
  if (!h) {
    wait_hooks_fn get = (wait_hooks_fn)dlsym(RTLD_DEFAULT, WAIT_HOOKS_SYMBOL);
    h = get ? get() : NULL;
  }
  if (!h || !h->is_ours) {
    snprintf(err, errlen,
             "off-CPU and lock profiling need libpushprof_wait.so, the blocking-call "
             "interposers: add it to LD_PRELOAD (LD_PRELOAD=\"libpushprof_preload.so "
             "libpushprof_wait.so\") or link the program with -lpushprof_wait");
    return -1;
  }
  if (!h->is_ours()) {
    snprintf(err, errlen,
             "libpushprof_wait.so is loaded but the program's calls do not reach it: a sanitizer "
             "runtime or another library that defines the same functions comes first");
    return -1;
  }
  if (!g_own_hi)
    walk_here_code_range(h->own_code, &g_own_lo, &g_own_hi);
  if (collector_add_after_drain(wait_resolve_pending) != 0) {
    snprintf(err, errlen, "the collector has no room for the wait profiler's stack copies");
    return -1;
  }
  pthread_mutex_lock(&g_mu);
  int64_t now = now_ns(CLOCK_REALTIME);
  atomic_store(&h->record, wait_record);
  atomic_store(&g_h, h);
  for (int k = 0; k < WAIT_KINDS; k++)
    if (mask & (1u << k)) {
      g_tab[k].start_ns = now;
      atomic_store(&h->rate[k], rates[k]);
      atomic_store(&h->on[k], 1);
    }
  pthread_mutex_unlock(&g_mu);
  collector_want_all_tables(); /* waits from the start need every table */
  return 0;
}

static void table_free(wtable *t) {
  if (!t->n) /* nothing to free: not a page of the buckets touched (a forked child's are COW) */
    return;
  for (size_t i = 0; i < NBUCKETS; i++)
    while (t->b[i]) {
      wentry *e = t->b[i];
      t->b[i] = e->next;
      free(e);
    }
  t->n = 0;
}

void wait_stop(void) {
  w_self.busy = 1;
  pthread_mutex_lock(&g_resolve_mu); /* no walk in flight adds to a table after this */
  pthread_mutex_lock(&g_mu);
  wait_hooks *h = atomic_load(&g_h);
  for (int k = 0; k < WAIT_KINDS; k++) {
    if (h)
      atomic_store(&h->on[k], 0);
    table_free(&g_tab[k]);
  }
  wpending *p = pending_take_locked(-1);
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_resolve_mu);
  pending_free(p);
  w_self.busy = 0;
}

/* ---- the cut ---- */

int wait_window_empty(int kind) {
  if (kind < 0 || kind >= WAIT_KINDS)
    return 1;
  pthread_mutex_lock(&g_mu);
  int empty = g_tab[kind].n == 0 && g_npending[kind] == 0;
  pthread_mutex_unlock(&g_mu);
  return empty;
}

static const profbuild_type wait_types[2] = {{"contentions", "count"}, {"delay", "nanoseconds"}};

int wait_cut(int kind, uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  if (!out || !len || !start_ns || !end_ns || kind < 0 || kind >= WAIT_KINDS)
    return PUSHPROF_EINVAL;
  *out = NULL;
  *len = 0;
  wtable *tp = malloc(sizeof *tp); /* the window taken out: recording goes on meanwhile */
  if (!tp)
    return PUSHPROF_ENOMEM;
  int was_busy = w_self.busy;
  w_self.busy = 1;
  pthread_mutex_lock(&g_resolve_mu);
  pthread_mutex_lock(&g_mu);
  *tp = g_tab[kind];
  memset(g_tab[kind].b, 0, sizeof g_tab[kind].b);
  g_tab[kind].n = 0;
  wpending *pend = pending_take_locked(kind); /* waits that ended in this window */
  int64_t t1 = now_ns(CLOCK_REALTIME), t0 = tp->start_ns ? tp->start_ns : t1;
  g_tab[kind].start_ns = t1;
  wait_hooks *h = atomic_load(&g_h);
  int64_t rate = h ? atomic_load(&h->rate[kind]) : WAIT_RATE_DEFAULT;
  pthread_mutex_unlock(&g_mu);
  pending_resolve(pend, tp);
  pthread_mutex_unlock(&g_resolve_mu);

  int rc = 0;
  size_t n = tp->n;
  profbuild_stack *st = calloc(n ? n : 1, sizeof *st);
  int64_t *vals = calloc(n ? n * 2 : 1, sizeof *vals);
  pp_label *labs = calloc(n ? n * (RING_MAX_LABELS + 1) : 1, sizeof *labs);
  if (!st || !vals || !labs) {
    rc = PUSHPROF_ENOMEM;
    goto done;
  }
  size_t ns = 0;
  int64_t total_c = 0, total_d = 0;
  for (size_t i = 0; i < NBUCKETS; i++)
    for (wentry *e = tp->b[i]; e; e = e->next) {
      pp_label *l = labs + ns * (RING_MAX_LABELS + 1);
      size_t nl = collector_decode_labels(e->labels, e->nlabels, e->labels_len, l);
      if (e->truncated)
        l[nl++] = (pp_label){.key = "pushprof_stack", .str = "truncated"};
      vals[2 * ns] = (e->contentions + WAIT_ONE / 2) / WAIT_ONE;
      vals[2 * ns + 1] = e->delay_ns;
      total_c += vals[2 * ns];
      total_d += e->delay_ns;
      st[ns] = (profbuild_stack){.pcs = e->pcs,
                                 .depth = e->depth,
                                 .labels = l,
                                 .nlabels = nl,
                                 .values = vals + 2 * ns,
                                 .leaf_is_return = 1};
      ns++;
    }
  wait_stats ws;
  wait_get_stats(&ws);
  char c0[256], c1[448];
  const char *cp[2] = {c0, c1};
  snprintf(c0, sizeof c0,
           "pushprof: %s waits kept by time waited, one per %" PRId64
           " ns waited on average (waits that long or longer all kept); %" PRId64 " ns and %" PRId64
           " waits estimated in this window",
           kind_names[kind], rate, total_d, total_c);
  snprintf(c1, sizeof c1,
           "pushprof: since the start %" PRIu64 " off-CPU and %" PRIu64
           " lock waits recorded (%" PRIu64 " stacks walked from a stack copy, %" PRIu64
           " cut short where no unwind table was built yet), %" PRIu64
           " waits lost to a full table, %" PRIu64 " waits inside the profiler not recorded",
           ws.recorded[WAIT_OFFCPU], ws.recorded[WAIT_LOCK], ws.deferred, ws.cut_short,
           ws.table_full, ws.skipped_busy);
  profbuild_meta meta = {.time_nanos = t0,
                         .duration_nanos = t1 - t0,
                         .comments = cp,
                         .ncomments = 2,
                         .types = wait_types,
                         .ntypes = 2,
                         .period_type = {"contentions", "count"},
                         .period = 1,
                         .default_type = "delay"};
  rc = collector_build(st, ns, &meta, out, len);
  if (rc == 0) {
    *start_ns = t0;
    *end_ns = t1;
  }
done:
  free(st);
  free(vals);
  free(labs);
  table_free(tp);
  free(tp);
  w_self.busy = was_busy;
  return rc;
}

void wait_get_stats(wait_stats *st) {
  for (int k = 0; k < WAIT_KINDS; k++)
    st->recorded[k] = atomic_load(&S.recorded[k]);
  st->deferred = atomic_load(&S.deferred);
  st->cut_short = atomic_load(&S.cut_short);
  st->table_full = atomic_load(&S.table_full);
  st->skipped_busy = atomic_load(&S.skipped_busy);
}

/* ---- fork ---- */

void wait_atfork_prepare(void) {
  w_self.busy = 1;
  pthread_mutex_lock(&g_mu);
}

void wait_atfork_parent(void) {
  pthread_mutex_unlock(&g_mu);
  w_self.busy = 0;
}

void wait_atfork_child(void) {
  /* The parent's waits are not the child's: its windows start empty, its
   * pending waits go. */
  pthread_mutex_init(&g_mu, NULL);
  pthread_mutex_init(&g_resolve_mu, NULL);
  int64_t now = now_ns(CLOCK_REALTIME);
  for (int k = 0; k < WAIT_KINDS; k++) {
    table_free(&g_tab[k]);
    g_tab[k].start_ns = now;
  }
  pending_free(pending_take_locked(-1));
  w_self.busy = 0;
}
