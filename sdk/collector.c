/* Collector: drains the ring into a hash table of identical samples (same
 * pcs, flags and label bytes) -> count, rescans threads, publishes stack
 * bounds of threads found by a scan, and cuts windows into pprof. g_mu
 * guards the table and ring consumption; g_cut_mu serialises cuts (and the
 * profbuild cache); g_ctl guards the thread's stop flag. Lock order: g_cut_mu,
 * then g_mu, then the thread table's lock. */
#include "collector.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "labels.h"
#include "procmaps.h"
#include "profbuild.h"
#include "pushprof.h"
#include "deferred.h"
#include "otel_ctx.h"
#include "otel_foreign.h"
#include "otel_read.h"
#include "threads_linux.h"
#include "unwind.h"
#include "unwind_tables.h"

ring collector_ring;
static ring_cell g_cells[COLLECTOR_RING_CELLS];

typedef struct agg_entry {
  uint64_t hash;
  int64_t count;
  uint16_t depth, flags, nlabels, labels_len;
  char *labels; /* points behind pcs */
  uintptr_t pcs[];
} agg_entry;

typedef struct agg {
  agg_entry **tab;
  size_t cap, n;
  size_t bytes;                     /* held by entries: bounded by g_agg_limit */
  int64_t labels_dropped, overflow; /* samples over the soft / hard limit */
  int64_t signals, samples;         /* handled signals; periods they stand for */
  int64_t truncated, leaf_only, oom;
  int64_t no_table; /* samples with a frame-pointer step where no CFI table was */
  int64_t deferred; /* samples walked later from a copy of their stack */
  int64_t at_exit;  /* samples recorded as their thread ended (RING_F_AT_EXIT) */
} agg;

typedef struct pending_bounds {
  uint32_t slot, gen;
  uintptr_t sp;
} pending_bounds;
#define PENDING_MAX 32

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_cut_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER;
/* Under g_mu: */
static agg g_agg;
static int g_inited;
static int64_t g_win_start_ns, g_win_cpu_ns;
static int64_t g_win_own_ns; /* the SDK's own threads' CPU at the window's start */
static uint64_t g_drops_seen;
static int g_hz, g_signo, g_mode;
/* On-demand session (collector_session_begin): its own table of the
 * samples taken while it runs, at its own period. Each sample's CPU time
 * (weight x the interval its timer had) is credited to the continuous table
 * and to the session's, each taking one sample per its own period of
 * credit, per thread: the continuous profile keeps its rate and weight
 * whatever rate a session asked for. Under g_mu. */
static struct {
  int on;
  uint64_t id;
  int hz;
  int64_t period_ns;
  int64_t t0, cpu0, own0;
  agg a;
} g_sess;
static int64_t g_timer_period_ns; /* the threads' timer interval now */
/* Credit in ns per thread slot (the last one: samples of no slot). */
static int64_t g_credit_cont[THREADS_MAX + 1], g_credit_sess[THREADS_MAX + 1];
/* Under g_ctl: */
static pthread_t g_thread;
static int g_thread_running, g_stop;
/* Under g_cut_mu: */
static profbuild *g_pb;
/* Set by collector_stop: a table build in progress gives up. */
static _Atomic int g_utab_cancel;
/* Between collector_start and collector_stop: dlclose keeps symbols. */
static atomic_int g_sampling;
/* Bytes of distinct samples per window. Beyond the soft limit a new labelled
 * sample is kept without its labels (label pushprof_labels=dropped); beyond
 * the hard limit (soft + 1/4) a new distinct sample is only counted, as
 * "[pushprof] too many distinct samples". High-cardinality labels (a trace
 * id per request) thus never grow memory past the limit. */
static _Atomic size_t g_agg_limit = COLLECTOR_AGG_BYTES;
static uint64_t g_labels_skipped_seen;                            /* under g_mu */
static const char g_dropped_label[] = "pushprof_labels\0dropped"; /* with its final NUL */

static int64_t clock_ns(clockid_t clk) {
  struct timespec ts;
  if (clock_gettime(clk, &ts) != 0)
    return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void init_once(void) {
  ring_init(&collector_ring, g_cells, COLLECTOR_RING_CELLS);
}

/* ---- aggregation ---- */

static uint64_t mix64(uint64_t h, uint64_t v) {
  h ^= v * 0x9E3779B97F4A7C15ULL;
  h = (h << 27 | h >> 37) * 0xBF58476D1CE4E5B9ULL;
  return h;
}

/* A sample's identity: its stack, flags and label bytes (the record's own
 * or, over the soft limit, the "dropped" marker). RING_F_NO_TABLE is only
 * counted and RING_F_ALTSTACK only steers the bounds lookup: neither makes
 * a stack different. */
#define KEY_FLAGS(f) ((uint16_t)((f) & ~(RING_F_NO_TABLE | RING_F_ALTSTACK)))
typedef struct agg_key {
  const ring_record *r;
  const char *labels;
  uint16_t nlabels, labels_len;
} agg_key;

static uint64_t record_hash(const agg_key *k) {
  const ring_record *r = k->r;
  uint64_t h = mix64(0x243F6A8885A308D3ULL, (uint64_t)r->depth << 32 | KEY_FLAGS(r->flags));
  for (uint32_t i = 0; i < r->depth; i++)
    h = mix64(h, r->pcs[i]);
  for (uint32_t i = 0; i < k->labels_len; i++)
    h = mix64(h, (unsigned char)k->labels[i]);
  h ^= h >> 31;
  return h;
}

static int entry_matches(const agg_entry *e, uint64_t h, const agg_key *k) {
  const ring_record *r = k->r;
  return e->hash == h && e->depth == r->depth && e->flags == KEY_FLAGS(r->flags) &&
         e->nlabels == k->nlabels && e->labels_len == k->labels_len &&
         memcmp(e->pcs, r->pcs, r->depth * sizeof(uintptr_t)) == 0 &&
         memcmp(e->labels, k->labels, k->labels_len) == 0;
}

/* The entry for k, or the empty table cell where it belongs (*slot). */
static agg_entry *agg_find(const agg *a, const agg_key *k, uint64_t h, size_t *slot) {
  size_t i = h & (a->cap - 1);
  for (agg_entry *e; (e = a->tab[i]) != NULL; i = (i + 1) & (a->cap - 1))
    if (entry_matches(e, h, k))
      return e;
  *slot = i;
  return NULL;
}

static int agg_grow(agg *a) {
  size_t ncap = a->cap ? a->cap * 2 : 256;
  agg_entry **nt = calloc(ncap, sizeof *nt);
  if (!nt)
    return -1;
  for (size_t i = 0; i < a->cap; i++) {
    agg_entry *e = a->tab[i];
    if (!e)
      continue;
    size_t j = e->hash & (ncap - 1);
    while (nt[j])
      j = (j + 1) & (ncap - 1);
    nt[j] = e;
  }
  free(a->tab);
  a->tab = nt;
  a->cap = ncap;
  return 0;
}

static int64_t record_weight(const ring_record *r) {
  return r->weight >= 1 && r->weight <= 1001 ? r->weight : 1;
}

/* Adds r standing for w periods of its table. */
static void agg_add_w(agg *a, const ring_record *r, int64_t w) {
  if (r->flags & RING_F_AT_EXIT)
    a->at_exit += w;
  else
    a->signals++;
  a->samples += w;
  a->truncated += (r->flags & RING_F_TRUNCATED) ? w : 0;
  a->leaf_only += (r->flags & RING_F_LEAF_ONLY) ? w : 0;
  a->no_table += (r->flags & RING_F_NO_TABLE) ? w : 0;
  uint32_t depth = r->depth <= RING_MAX_DEPTH ? r->depth : RING_MAX_DEPTH;
  if (depth != r->depth || r->labels_len > RING_LABEL_BYTES) {
    a->oom += w; /* cannot happen with our handler; never trust it blindly */
    return;
  }
  if ((a->n + 1) * 2 > a->cap && agg_grow(a) != 0 && a->n + 1 >= a->cap) {
    a->oom += w;
    return;
  }
  agg_key k = {.r = r, .labels = r->labels, .nlabels = r->nlabels, .labels_len = r->labels_len};
  uint64_t h = record_hash(&k);
  size_t i;
  agg_entry *e = agg_find(a, &k, h, &i);
  if (e) {
    e->count += w;
    return;
  }
  size_t limit = atomic_load_explicit(&g_agg_limit, memory_order_relaxed);
  size_t size = sizeof *e + depth * sizeof(uintptr_t) + k.labels_len;
  if (a->bytes + size > limit && k.nlabels) {
    a->labels_dropped += w;
    k.labels = g_dropped_label;
    k.nlabels = 1;
    k.labels_len = sizeof g_dropped_label;
    h = record_hash(&k);
    if ((e = agg_find(a, &k, h, &i)) != NULL) {
      e->count += w;
      return;
    }
    size = sizeof *e + depth * sizeof(uintptr_t) + k.labels_len;
  }
  if (a->bytes + size > limit + limit / 4) {
    a->overflow += w;
    return;
  }
  e = malloc(size);
  if (!e) {
    a->oom += w;
    return;
  }
  e->hash = h;
  e->count = w;
  e->depth = r->depth;
  e->flags = KEY_FLAGS(r->flags);
  e->nlabels = k.nlabels;
  e->labels_len = k.labels_len;
  memcpy(e->pcs, r->pcs, depth * sizeof(uintptr_t));
  e->labels = (char *)(e->pcs + depth);
  memcpy(e->labels, k.labels, k.labels_len);
  a->tab[i] = e;
  a->n++;
  a->bytes += size;
}

/* The continuous rate's period: what one continuous sample stands for. */
static int64_t cont_period_ns(int hz) {
  return 1000000000LL / (hz > 0 ? hz : 100);
}

/* Takes n whole periods out of *credit after adding ns to it. */
static int64_t take_credit(int64_t *credit, int64_t ns, int64_t period) {
  *credit += ns;
  int64_t n = *credit / period;
  *credit -= n * period;
  return n;
}

/* r into the continuous table and, while a session runs, the session's
 * (see g_sess). Under g_mu. */
static void agg_add(const ring_record *r) {
  int64_t w = record_weight(r);
  int64_t p = r->period_ns > 0 ? r->period_ns : g_timer_period_ns;
  int64_t cont = cont_period_ns(g_hz);
  if (!g_sess.on && (p == cont || p <= 0)) {
    agg_add_w(&g_agg, r, w);
    return;
  }
  size_t i = r->slot < THREADS_MAX ? r->slot : THREADS_MAX;
  int64_t n = take_credit(&g_credit_cont[i], w * p, cont);
  if (n > 0)
    agg_add_w(&g_agg, r, n);
  if (g_sess.on && (n = take_credit(&g_credit_sess[i], w * p, g_sess.period_ns)) > 0)
    agg_add_w(&g_sess.a, r, n);
}

void collector_set_agg_limit_for_tests(size_t bytes) {
  atomic_store(&g_agg_limit, bytes ? bytes : COLLECTOR_AGG_BYTES);
}

static void agg_free(agg *a) {
  for (size_t i = 0; i < a->cap; i++)
    free(a->tab[i]);
  free(a->tab);
  memset(a, 0, sizeof *a);
}

/* ---- draining ---- */

/* A sample taken before the tables: its stack copy walked now (building
 * the tables it needs, on this thread), then aggregated like any other. */
static void add_deferred(const ring_record *r) {
  static ring_record tmp; /* under g_mu */
  memcpy(&tmp, r, sizeof tmp);
  unsigned uf;
  tmp.depth = (uint16_t)defer_unwind(r->defer, tmp.pcs, RING_MAX_DEPTH, &uf);
  if (tmp.depth == 0) {
    tmp.pcs[0] = r->pcs[0];
    tmp.depth = 1;
  }
  tmp.flags = (uint16_t)((r->flags & ~RING_F_DEFERRED) |
                         ((uf & UNWIND_F_TRUNCATED) ? RING_F_TRUNCATED : 0) |
                         ((uf & UNWIND_F_NO_TABLE) ? RING_F_NO_TABLE : 0));
  g_agg.deferred += record_weight(r);
  agg_add(&tmp);
}

static void drain_locked(pending_bounds *pend, size_t *npend) {
  const ring_record *r;
  for (size_t k = 0; k < COLLECTOR_RING_CELLS && (r = ring_peek(&collector_ring)) != NULL; k++) {
    if (r->flags & RING_F_DEFERRED)
      add_deferred(r);
    else
      agg_add(r);
    if ((r->flags & (RING_F_LEAF_ONLY | RING_F_ALTSTACK)) == RING_F_LEAF_ONLY &&
        r->slot < THREADS_MAX && *npend < PENDING_MAX &&
        atomic_load_explicit(&threads_table[r->slot].stack_hi, memory_order_relaxed) == 0) {
      size_t j = 0;
      while (j < *npend && pend[j].slot != r->slot)
        j++;
      if (j == *npend)
        pend[(*npend)++] = (pending_bounds){r->slot, r->gen, r->sp};
    }
    ring_release(&collector_ring);
  }
}

/* A thread found by a scan has unknown stack bounds: take the mapping that
 * holds its sampled sp. Its later samples are then walked in full. */
static void resolve_bounds(const pending_bounds *pend, size_t n) {
  if (n == 0)
    return;
  procmaps m = {0};
  if (procmaps_read_self(&m) != 0)
    return;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < m.n; j++) {
      const procmaps_entry *e = &m.v[j];
      if (e->start <= pend[i].sp && pend[i].sp < e->end && e->readable && e->writable) {
        threads_publish_bounds(pend[i].slot, pend[i].gen, (uintptr_t)e->start, (uintptr_t)e->end);
        break;
      }
    }
  }
  procmaps_free(&m);
}

void collector_drain(void) {
  pending_bounds pend[PENDING_MAX];
  size_t npend = 0;
  pthread_mutex_lock(&g_mu);
  if (g_inited)
    drain_locked(pend, &npend);
  pthread_mutex_unlock(&g_mu);
  resolve_bounds(pend, npend);
}

int collector_window_empty(void) {
  pending_bounds pend[PENDING_MAX];
  size_t npend = 0;
  int empty = 1;
  pthread_mutex_lock(&g_mu);
  if (g_inited) {
    drain_locked(pend, &npend);
    empty = g_agg.signals == 0 && g_agg.n == 0 && ring_drops(&collector_ring) == g_drops_seen &&
            labels_skipped() == g_labels_skipped_seen && !ring_busy(&collector_ring);
  }
  pthread_mutex_unlock(&g_mu);
  resolve_bounds(pend, npend);
  return empty;
}

/* The thread sleeps on this futex word between drains; wake_thread bumps
 * it, so a wake that races the sleep is never lost (FUTEX_WAIT returns
 * at once when the word has changed). */
static _Atomic uint32_t g_wake;

static void wake_thread(void) {
  atomic_fetch_add_explicit(&g_wake, 1, memory_order_release);
  syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void collector_after_dlclose(void) {
  if (atomic_load(&g_sampling) && utab_wanted())
    wake_thread();
}

void collector_wake_from_signal(void) {
  wake_thread(); /* an atomic add and a raw system call: async-signal-safe */
}

static void (*_Atomic g_tick)(void);                                   /* collector_set_tick */
static void (*_Atomic g_after_drain[COLLECTOR_AFTER_DRAIN_MAX])(void); /* never removed */
static _Atomic int g_all_tables; /* collector_want_all_tables */

void collector_want_all_tables(void) {
  atomic_store(&g_all_tables, 1);
  if (utab_want())
    collector_wake_from_signal();
}

int collector_add_after_drain(void (*fn)(void)) {
  for (int i = 0; i < COLLECTOR_AFTER_DRAIN_MAX; i++) {
    void (*want)(void) = NULL;
    if (atomic_compare_exchange_strong(&g_after_drain[i], &want, fn) || want == fn)
      return 0;
  }
  return -1;
}

uint32_t collector_unwind_copy(const unwind_regs *regs, const uintptr_t *words, size_t len,
                               int partial, uintptr_t *pcs, uint32_t max, unsigned *flags) {
  pthread_mutex_lock(&g_mu);
  uint32_t d = defer_unwind_copy(regs, words, len, partial, pcs, max, flags);
  pthread_mutex_unlock(&g_mu);
  return d;
}

void collector_set_tick(void (*fn)(void)) {
  atomic_store(&g_tick, fn);
}

static int stop_requested(void) {
  pthread_mutex_lock(&g_ctl);
  int stop = g_stop;
  pthread_mutex_unlock(&g_ctl);
  return stop;
}

static void *collector_main(void *arg) {
  (void)arg;
  threads_exclude_self();
  int64_t last_scan = clock_ns(CLOCK_MONOTONIC), wanted_ns = 0;
  for (int first = 1;; first = 0) {
    uint32_t w = atomic_load_explicit(&g_wake, memory_order_acquire);
    if (stop_requested())
      break;
    /* Tables asked for before this thread first waited (the heap and wait
     * profilers ask at start, whose wake-up may come before this thread
     * runs): built now, not a drain period later. */
    struct timespec rel = {0, COLLECTOR_DRAIN_MS * 1000000L};
    if (!(first && utab_wanted()))
      syscall(SYS_futex, &g_wake, FUTEX_WAIT_PRIVATE, w, &rel, NULL, 0);
    if (stop_requested())
      break;
    /* Tables are built once the process has been sampled (the handler asks
     * and wakes us): a process that never is pays nothing for them. A drain
     * first walks the samples deferred until now (with the rows of just the
     * FDEs their stacks need, which frees their slots soon), then a refresh
     * builds tables, then a drain takes what arrived meanwhile. Until a
     * drain period has passed since the first sample only the executable's
     * and libc's are built (the handler's readiness, cancelled if the
     * process exits meanwhile): samples in the other objects are deferred
     * and walked the same way, so a short process compiles no whole table
     * its samples do not need. */
    collector_drain();
    for (int i = 0; i < COLLECTOR_AFTER_DRAIN_MAX; i++) {
      void (*after)(void) = atomic_load(&g_after_drain[i]);
      if (!after)
        break;
      after();
    }
    void (*tick)(void) = atomic_load(&g_tick);
    if (tick)
      tick();
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (utab_wanted()) {
      if (wanted_ns == 0)
        wanted_ns = now;
      int full = atomic_load(&g_all_tables) || now - wanted_ns >= COLLECTOR_DRAIN_MS * 1000000LL;
      int built = full ? utab_refresh(&g_utab_cancel) : utab_refresh_first(&g_utab_cancel);
      if (built > 0)
        collector_drain();
      if (built > 0 && full) {
        pthread_mutex_lock(&g_mu); /* no deferred walk meanwhile: they hold g_mu */
        utab_on_demand_trim();     /* whole tables now: the per-FDE rows go */
        pthread_mutex_unlock(&g_mu);
      }
    }
    if (now - last_scan >= COLLECTOR_RESCAN_MS * 1000000LL) {
      threads_rescan(); /* on failure the next round tries again */
      last_scan = now;
    }
  }
  threads_exclude_end();
  return NULL;
}

void collector_init(void) {
  pthread_once(&g_once, init_once);
}

int collector_start(int hz, int signo, int mode, char *err, size_t errlen) {
  pthread_once(&g_once, init_once);
  pthread_mutex_lock(&g_mu);
  if (!g_inited) {
    g_win_start_ns = clock_ns(CLOCK_REALTIME);
    g_win_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    g_win_own_ns = threads_own_cpu_ns();
    g_drops_seen = ring_drops(&collector_ring);
    g_labels_skipped_seen = labels_skipped();
    g_inited = 1;
  }
  g_hz = hz;
  g_signo = signo;
  g_mode = mode;
  g_timer_period_ns = cont_period_ns(hz);
  pthread_mutex_unlock(&g_mu);
  atomic_store(&g_sampling, 1);

  int rc = 0;
  pthread_mutex_lock(&g_ctl);
  if (g_thread_running && g_stop) {
    /* Left by collector_leave (an exec that failed restarts us): that
     * thread is on its way out; wait for it, then start afresh. */
    pthread_mutex_unlock(&g_ctl);
    wake_thread();
    pthread_join(g_thread, NULL);
    pthread_mutex_lock(&g_ctl);
    g_thread_running = 0;
  }
  if (!g_thread_running) {
    g_stop = 0;
    atomic_store(&g_utab_cancel, 0);
    /* The host's process-directed signals are for its own threads (one may
     * wait for them with sigwait or a signalfd): the collector takes none. */
    int e = threads_spawn_internal(&g_thread, NULL, collector_main, NULL);
    if (e != 0) {
      snprintf(err, errlen, "cannot start the collector thread: %s", strerror(e));
      rc = PUSHPROF_ESYS;
    } else {
      g_thread_running = 1;
    }
  }
  pthread_mutex_unlock(&g_ctl);
  return rc;
}

void collector_leave(void) {
  atomic_store(&g_sampling, 0);
  pthread_mutex_lock(&g_ctl);
  g_stop = 1; /* seen at its next wake-up; not woken, not waited for */
  atomic_store(&g_utab_cancel, 1);
  pthread_mutex_unlock(&g_ctl);
}

void collector_stop(void) {
  atomic_store(&g_sampling, 0);
  pthread_mutex_lock(&g_ctl);
  int running = g_thread_running;
  g_stop = 1;
  atomic_store(&g_utab_cancel, 1);
  pthread_mutex_unlock(&g_ctl);
  wake_thread();
  if (running) {
    pthread_join(g_thread, NULL);
    pthread_mutex_lock(&g_ctl);
    g_thread_running = 0;
    pthread_mutex_unlock(&g_ctl);
  }
  collector_drain();
}

void collector_before_dlclose(void *handle) {
  if (atomic_load(&g_sampling))
    profbuild_retain_library(handle);
}

/* ---- cut ---- */

size_t collector_decode_labels(const char *labels, uint16_t nlabels, uint16_t len, pp_label *out) {
  size_t n = 0, off = 0;
  while (n < nlabels && n < RING_MAX_LABELS && off < len) {
    const char *k = labels + off;
    const char *kend = memchr(k, '\0', len - off);
    if (!kend)
      break;
    size_t voff = (size_t)(kend - labels) + 1;
    if (voff >= len)
      break;
    const char *v = labels + voff;
    const char *vend = memchr(v, '\0', len - voff);
    if (!vend)
      break;
    out[n++] = (pp_label){.key = k, .str = v};
    off = (size_t)(vend - labels) + 1;
  }
  return n;
}

static size_t decode_labels(const agg_entry *e, pp_label *out) {
  return collector_decode_labels(e->labels, e->nlabels, e->labels_len, out);
}

#define NCOMMENTS 18
#define COMMENT_LEN 200

/* Names of another tracer's record attributes (otel_read.h) for one cut:
 * state 0 not looked up, 1 named, 2 not in its key map. Under g_cut_mu. */
static char g_attr_names[OTEL_KEYS_MAX][128];
static uint8_t g_attr_state[OTEL_KEYS_MAX];
static int g_attr_loaded;

/* Gives the record attributes among l[0..n) their names from the tracer's
 * key map and drops those it does not name, or whose name a pushprof label
 * of the sample already has (the program's own labels win). Returns the
 * new count. Caller holds g_cut_mu. */
static size_t name_record_attrs(pp_label *l, size_t n) {
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    if (l[i].key[0] != OTEL_ATTR_KEY) {
      l[out++] = l[i];
      continue;
    }
    unsigned idx = 0;
    for (const char *d = l[i].key + 1; *d >= '0' && *d <= '9'; d++)
      idx = idx * 10 + (unsigned)(*d - '0');
    if (idx >= OTEL_KEYS_MAX)
      continue;
    if (!g_attr_loaded) {
      (void)otel_foreign_load(); /* else the last map read stays */
      g_attr_loaded = 1;
    }
    if (g_attr_state[idx] == 0)
      g_attr_state[idx] =
          otel_foreign_key(idx, g_attr_names[idx], sizeof g_attr_names[idx]) == 0 ? 1 : 2;
    if (g_attr_state[idx] != 1)
      continue;
    int shadowed = 0;
    for (size_t j = 0; j < n && !shadowed; j++)
      shadowed = l[j].key[0] != OTEL_ATTR_KEY && strcmp(l[j].key, g_attr_names[idx]) == 0;
    if (!shadowed) {
      l[out] = l[i];
      l[out++].key = g_attr_names[idx];
    }
  }
  return out;
}

/* What a cut's comments and meta say besides its table. */
typedef struct cut_info {
  int64_t t0, t1, cpu0, cpu1, own0, own1;
  uint64_t drops, lskipped;
  int hz, signo, mode;
  int64_t period_ns; /* what one sample of the table stands for */
  const char *note;  /* a first comment, or NULL */
} cut_info;

/* The pprof of table a. Caller holds g_cut_mu (comments, g_pb). */
static int build_cut(const agg *ap, const cut_info *ci, uint8_t **out, size_t *len) {
  const agg a = *ap;
  int64_t t0 = ci->t0, t1 = ci->t1, cpu0 = ci->cpu0, cpu1 = ci->cpu1, own0 = ci->own0,
          own1 = ci->own1;
  uint64_t drops = ci->drops, lskipped = ci->lskipped;
  int hz = ci->hz, signo = ci->signo, mode = ci->mode;
  profbuild_stack *st = NULL;
  pp_label *labs = NULL;
  int rc = 0;
  g_attr_loaded = 0; /* the tracer's key map may have grown since */
  memset(g_attr_state, 0, sizeof g_attr_state);

  st = calloc(a.n + 3, sizeof *st);
  labs = calloc(a.n ? a.n : 1, (RING_MAX_LABELS + 1) * sizeof *labs);
  if (!st || !labs) {
    rc = PUSHPROF_ENOMEM;
    goto fail;
  }
  size_t ns = 0;
  for (size_t i = 0; i < a.cap; i++) {
    const agg_entry *e = a.tab[i];
    if (!e)
      continue;
    pp_label *l = labs + ns * (RING_MAX_LABELS + 1);
    size_t nl = name_record_attrs(l, decode_labels(e, l));
    /* Partial stacks stay in the profile, marked, rather than vanish. */
    if (e->flags & RING_F_TRUNCATED)
      l[nl++] = (pp_label){.key = "pushprof_stack", .str = "truncated"};
    else if (e->flags & RING_F_LEAF_ONLY)
      l[nl++] = (pp_label){.key = "pushprof_stack", .str = "leaf only"};
    else if (e->flags & RING_F_AT_EXIT)
      l[nl++] = (pp_label){.key = "pushprof_stack", .str = "thread end"};
    st[ns++] = (profbuild_stack){
        .pcs = e->pcs,
        .depth = e->depth,
        .labels = l,
        .nlabels = nl,
        .count = e->count,
        /* Under the start routine, not in it: its code did not run then. */
        .special =
            (e->flags & RING_F_AT_EXIT) ? "[pushprof] thread ended before its sample" : NULL};
  }
  if (drops)
    st[ns++] = (profbuild_stack){.special = "[pushprof] ring full", .count = (int64_t)drops};
  if (a.oom)
    st[ns++] = (profbuild_stack){.special = "[pushprof] out of memory", .count = a.oom};
  if (a.overflow)
    st[ns++] =
        (profbuild_stack){.special = "[pushprof] too many distinct samples", .count = a.overflow};

  threads_stats ts;
  threads_get_stats(&ts);
  static char comments[NCOMMENTS][COMMENT_LEN]; /* only under g_cut_mu */
  const char *cp[NCOMMENTS];
  size_t nc = 0;
  if (ci->note)
    snprintf(comments[nc++], COMMENT_LEN, "%s", ci->note);
  /* The sampled CPU: the process's, less the SDK's own threads' (never
   * sampled), so the effective rate compares like with like. */
  double own_s = own1 > own0 ? (double)(own1 - own0) / 1e9 : 0;
  double cpu_s = (double)(cpu1 - cpu0) / 1e9 - own_s;
  if (cpu_s < 0)
    cpu_s = 0;
  double eff = cpu_s > 0 ? (double)(a.signals + a.at_exit + (int64_t)drops) / cpu_s : 0;
  snprintf(comments[nc++], COMMENT_LEN,
           "pushprof: requested %d Hz; effective %.1f samples per CPU second (%" PRId64
           " signals in %.3f CPU s, %" PRId64 " at thread exit; the kernel tick caps the rate)",
           hz, eff, a.signals + (int64_t)drops, cpu_s, a.at_exit);
  snprintf(comments[nc++], COMMENT_LEN,
           "pushprof: the SDK's own threads used %.3f CPU s in this window (not sampled)", own_s);
  if (a.samples > a.signals + a.at_exit)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRId64 " timer overruns (expiries merged by the kernel) counted "
             "as samples of the stack that got the signal",
             a.samples - a.signals - a.at_exit);
  snprintf(comments[nc++], COMMENT_LEN, "pushprof: sampling with %s on signal %d",
           mode == COLLECTOR_MODE_ITIMER ? "setitimer(ITIMER_PROF), process-wide"
                                         : "per-thread CPU-time timers",
           mode == COLLECTOR_MODE_ITIMER ? SIGPROF : signo);
  if (drops)
    snprintf(comments[nc++], COMMENT_LEN, "pushprof: %" PRIu64 " samples dropped (ring full)",
             drops);
  if (a.truncated)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRId64 " samples truncated at depth %d (label pushprof_stack=truncated)",
             a.truncated, RING_MAX_DEPTH);
  if (a.no_table)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRId64 " samples unwound by frame pointers through code with no "
             "unwind table (sampled before its table was built, or code without CFI)",
             a.no_table);
  if (a.deferred)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRId64 " samples taken before the unwind tables they needed were "
             "built, unwound afterwards from a copy of their stack",
             a.deferred);
  if (a.at_exit)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRId64 " samples due as their thread ended, not yet signalled (the "
             "kernel checks CPU timers at its ticks): given to the thread's start routine "
             "(label pushprof_stack=thread end)",
             a.at_exit);
  if (a.leaf_only)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRId64 " samples with the leaf frame only: stack bounds not yet known "
             "or another stack in use (label pushprof_stack=leaf only)",
             a.leaf_only);
  if (a.labels_dropped || a.overflow)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: distinct samples over %zu bytes this window: %" PRId64
             " kept without labels (pushprof_labels=dropped), %" PRId64 " counted as one stack",
             (size_t)atomic_load(&g_agg_limit), a.labels_dropped, a.overflow);
  if (lskipped)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRIu64 " samples without labels (a label write kept racing the copy)",
             lskipped);
  if (ts.arm_failed || ts.table_full)
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: %" PRIu64 " timer_create failures, %" PRIu64
             " threads over the %d-thread table (not sampled)",
             ts.arm_failed, ts.table_full, THREADS_MAX);
  utab_stats us;
  utab_get_stats(&us);
  if (us.tables) /* what the unwind tables cost, once a sample asked for them */
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: unwind tables for %u of %u objects, %" PRIu64 " rows, %" PRIu64
             " KiB, built in %.1f ms",
             us.tables, us.objects, us.rows, us.bytes >> 10, (double)us.build_ns / 1e6);
  if (us.on_demand_fdes) /* rows for copies walked before (or instead of) whole tables */
    snprintf(comments[nc++], COMMENT_LEN,
             "pushprof: unwind rows of %u FDEs compiled one by one since the start, for stack "
             "copies in objects whose whole table was not built yet",
             us.on_demand_fdes);
  for (size_t i = 0; i < nc; i++)
    cp[i] = comments[i];

  profbuild_meta meta = {.period_ns = ci->period_ns,
                         .time_nanos = t0,
                         .duration_nanos = t1 - t0,
                         .comments = cp,
                         .ncomments = nc};
  if (!g_pb && !(g_pb = profbuild_new())) {
    rc = PUSHPROF_ENOMEM;
    goto fail;
  }
  if (profbuild_refresh_maps(g_pb) != 0 || profbuild_build(g_pb, st, ns, &meta, out, len) != 0) {
    rc = PUSHPROF_ENOMEM; /* both fail only when memory or /proc/self/maps is short */
    goto fail;
  }
fail:
  free(st);
  free(labs);
  return rc;
}

/* Closes a window and builds its pprof: the continuous one (the next starts
 * where it ends) or, when session, on-demand session id's (the session ends
 * and the timers return to the continuous period). Takes g_cut_mu, then g_mu;
 * PUSHPROF_ENOTSTARTED when there is no such window. */
/* discard: the window ends and its samples go without a profile being
 * built (*out stays NULL). */
static int cut_window(int session, int discard, uint64_t id, uint8_t **out, size_t *len,
                      int64_t *start_ns, int64_t *end_ns) {
  pending_bounds pend[PENDING_MAX];
  size_t npend = 0;
  agg a;
  cut_info ci = {0};
  char note[COMMENT_LEN];
  int64_t cont = 0;
  int timers = 0;

  *out = NULL;
  *len = 0;
  pthread_mutex_lock(&g_cut_mu);
  ci.own1 = threads_own_cpu_ns(); /* its lock is never taken inside g_mu */
  pthread_mutex_lock(&g_mu);
  if (!g_inited || (session && (!g_sess.on || g_sess.id != id))) {
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_cut_mu);
    return PUSHPROF_ENOTSTARTED;
  }
  drain_locked(pend, &npend);
  if (session) {
    a = g_sess.a;
    memset(&g_sess.a, 0, sizeof g_sess.a);
    g_sess.on = 0;
    ci.t0 = g_sess.t0;
    ci.cpu0 = g_sess.cpu0;
    ci.own0 = g_sess.own0;
    ci.hz = g_sess.hz;
    ci.period_ns = g_sess.period_ns;
  } else {
    a = g_agg;
    memset(&g_agg, 0, sizeof g_agg);
    uint64_t d = ring_drops(&collector_ring);
    ci.drops = d - g_drops_seen;
    g_drops_seen = d;
    uint64_t ls = labels_skipped();
    ci.lskipped = ls - g_labels_skipped_seen;
    g_labels_skipped_seen = ls;
    ci.t0 = g_win_start_ns;
    ci.cpu0 = g_win_cpu_ns;
    ci.own0 = g_win_own_ns;
    ci.hz = g_hz;
    ci.period_ns = cont_period_ns(g_hz);
  }
  ci.t1 = clock_ns(CLOCK_REALTIME);
  if (ci.t1 < ci.t0)
    ci.t1 = ci.t0;
  ci.cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  ci.signo = g_signo;
  ci.mode = g_mode;
  if (session) {
    int cont_hz = g_hz > 0 ? g_hz : 100;
    cont = cont_period_ns(cont_hz);
    timers = g_mode == COLLECTOR_MODE_TIMERS;
    snprintf(note, sizeof note,
             "pushprof: on-demand session %" PRIu64 " at %d Hz%s; its samples also count once "
             "in the continuous profile, at its %d Hz",
             id, ci.hz, timers ? "" : " (setitimer mode: sampled at the continuous rate)", cont_hz);
    ci.note = note;
  } else {
    g_win_start_ns = ci.t1;
    g_win_cpu_ns = ci.cpu1;
    g_win_own_ns = ci.own1;
  }
  pthread_mutex_unlock(&g_mu);
  resolve_bounds(pend, npend);
  if (timers && threads_set_period(cont) == 0) {
    pthread_mutex_lock(&g_mu);
    g_timer_period_ns = cont;
    pthread_mutex_unlock(&g_mu);
  }
  int rc = discard ? 0 : build_cut(&a, &ci, out, len);
  if (rc == 0) {
    *start_ns = ci.t0;
    *end_ns = ci.t1;
  }
  pthread_mutex_unlock(&g_cut_mu);
  agg_free(&a);
  return rc;
}

int collector_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  return cut_window(0, 0, 0, out, len, start_ns, end_ns);
}

int collector_discard(void) {
  uint8_t *out = NULL;
  size_t len = 0;
  int64_t a, b;
  return cut_window(0, 1, 0, &out, &len, &a, &b);
}

int collector_session_begin(uint64_t id, int hz) {
  if (id == 0 || hz < 1 || hz > COLLECTOR_SESSION_HZ_MAX)
    return PUSHPROF_EINVAL;
  int64_t own = threads_own_cpu_ns(); /* its lock is never taken inside g_mu */
  pthread_mutex_lock(&g_mu);
  if (!g_inited) {
    pthread_mutex_unlock(&g_mu);
    return PUSHPROF_ENOTSTARTED;
  }
  pending_bounds pend[PENDING_MAX];
  size_t npend = 0;
  drain_locked(pend, &npend); /* what came before belongs to no session */
  agg_free(&g_sess.a);
  g_sess.on = 1;
  g_sess.id = id;
  g_sess.hz = hz;
  g_sess.period_ns = 1000000000LL / hz;
  g_sess.t0 = clock_ns(CLOCK_REALTIME);
  g_sess.cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  g_sess.own0 = own;
  memset(g_credit_sess, 0, sizeof g_credit_sess);
  int64_t cont = cont_period_ns(g_hz);
  int64_t want = g_sess.period_ns < cont ? g_sess.period_ns : cont;
  int timers = g_mode == COLLECTOR_MODE_TIMERS;
  pthread_mutex_unlock(&g_mu);
  resolve_bounds(pend, npend);
  /* Faster timers while the session runs; setitimer mode keeps its rate
   * (the session's cut says so). */
  if (timers && threads_set_period(want) == 0) {
    pthread_mutex_lock(&g_mu);
    g_timer_period_ns = want;
    pthread_mutex_unlock(&g_mu);
  }
  return 0;
}

uint64_t collector_session_id(void) {
  pthread_mutex_lock(&g_mu);
  uint64_t id = g_sess.on ? g_sess.id : 0;
  pthread_mutex_unlock(&g_mu);
  return id;
}

int collector_session_cut(uint64_t id, uint8_t **out, size_t *len, int64_t *start_ns,
                          int64_t *end_ns) {
  return cut_window(1, 0, id, out, len, start_ns, end_ns);
}

int collector_build(const profbuild_stack *st, size_t n, const profbuild_meta *meta, uint8_t **out,
                    size_t *len) {
  int rc = 0;
  pthread_mutex_lock(&g_cut_mu);
  if (!g_pb && !(g_pb = profbuild_new()))
    rc = PUSHPROF_ENOMEM;
  else if (profbuild_refresh_maps(g_pb) != 0 || profbuild_build(g_pb, st, n, meta, out, len) != 0)
    rc = PUSHPROF_ENOMEM;
  pthread_mutex_unlock(&g_cut_mu);
  return rc;
}

/* ---- fork ---- */

void collector_atfork_prepare(void) {
  pthread_mutex_lock(&g_mu);
}

void collector_atfork_parent(void) {
  pthread_mutex_unlock(&g_mu);
}

void collector_atfork_child(void) {
  utab_atfork_child();
  defer_atfork_child();
  /* Only the forking thread survives: no collector thread, no producers
   * mid-write. The child starts with nothing inherited; the SDK's fork
   * handler restarts sampling there. */
  pthread_mutex_init(&g_mu, NULL);
  pthread_mutex_init(&g_cut_mu, NULL);
  pthread_mutex_init(&g_ctl, NULL);
  g_thread_running = 0;
  g_stop = 0;
  atomic_store(&g_sampling, 0);
  agg_free(&g_agg);
  agg_free(&g_sess.a);
  g_sess.on = 0;
  g_pb = NULL; /* may have been mid-build in another thread: abandoned */
  if (collector_ring.cells)
    ring_reset(&collector_ring);
  g_drops_seen = 0;
  g_inited = 0;
}
