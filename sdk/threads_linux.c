/* Per-thread CPU-time timers on Linux: timer_create on the clock id the
 * kernel derives from a tid (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)),
 * delivered with SIGEV_THREAD_ID to that very thread. */
#include "threads_linux.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "pushprof.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

_Static_assert(sizeof(void *) == 8, "the timer cookie needs 64-bit pointers");
_Static_assert(THREADS_MAX < (1 << 24), "slot index must fit the cookie");

#define COOKIE_MAGIC 0x7070ULL /* "pp" in the top 16 bits of sival_ptr */
#define GEN_MASK 0xffffffu

threads_slot threads_table[THREADS_MAX];
/* Slots at or past this index were never allocated (so are free): scans stop
 * here and never fault in the table's untouched pages (4096 slots, 256 KiB).
 * Under g_lock. */
static uint32_t g_used;
__thread threads_slot *threads_self __attribute__((tls_model("initial-exec")));
__thread uintptr_t threads_entry __attribute__((tls_model("initial-exec")));
static void (*_Atomic g_exit_owed_hook)(uintptr_t entry);

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_ok;
/* Under g_lock: */
static int g_armed;
static int g_signo;
static int64_t g_period_ns;
/* The SDK's own threads (collector, pusher, exit flush): never sampled. */
#define EXCLUDED_MAX 4
static pid_t g_excluded[EXCLUDED_MAX];
static int64_t g_excluded_ended_cpu_ns; /* CPU of the own threads that ended */

static int excluded_locked(pid_t tid) {
  for (int i = 0; i < EXCLUDED_MAX; i++)
    if (g_excluded[i] == tid)
      return 1;
  return 0;
}
static uint32_t g_hint;
static uint64_t g_arm_failed, g_table_full, g_rng;

void *threads_cookie(uint32_t idx, uint32_t gen) {
  return (void *)(uintptr_t)((COOKIE_MAGIC << 48) | ((uint64_t)(gen & GEN_MASK) << 24) | idx);
}

threads_slot *threads_from_cookie(const void *cookie, int *ours, uint32_t *idx, uint32_t *gen) {
  uint64_t v = (uintptr_t)cookie;
  *ours = (v >> 48) == COOKIE_MAGIC;
  if (!*ours)
    return NULL;
  uint32_t i = (uint32_t)(v & GEN_MASK);
  if (i >= THREADS_MAX)
    return NULL;
  uint32_t cur = atomic_load_explicit(&threads_table[i].gen, memory_order_acquire);
  if ((cur & GEN_MASK) != (uint32_t)((v >> 24) & GEN_MASK))
    return NULL; /* the slot was freed (and maybe reused) since the timer was made */
  *idx = i;
  *gen = cur;
  return &threads_table[i];
}

static uint32_t slot_index(const threads_slot *s) {
  return (uint32_t)(s - threads_table);
}

static uint64_t rng_next(void) {
  /* xorshift64*: only for spreading first expiries */
  if (g_rng == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g_rng = (((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid()) | 1;
  }
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 0x2545F4914F6CDD1DULL;
}

static struct timespec ns_to_ts(int64_t ns) {
  struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
  return ts;
}

/* A random first expiry within one period: short threads are sampled fairly. */
static int settime_locked(threads_slot *s) {
  struct itimerspec its = {.it_interval = ns_to_ts(g_period_ns),
                           .it_value = ns_to_ts(1 + (int64_t)(rng_next() % (uint64_t)g_period_ns))};
  atomic_store_explicit(&s->period_ns, g_period_ns, memory_order_relaxed);
  return timer_settime(s->timer, 0, &its, NULL);
}

static int arm_locked(threads_slot *s) {
  if (s->armed)
    return 0;
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = g_signo;
  sev.sigev_notify_thread_id = s->tid;
  sev.sigev_value.sival_ptr =
      threads_cookie(slot_index(s), atomic_load_explicit(&s->gen, memory_order_relaxed));
  clockid_t clk = (clockid_t)((~(uint32_t)s->tid << 3) | 6u); /* per-thread, SCHED */
  if (timer_create(clk, &sev, &s->timer) != 0) {
    g_arm_failed++;
    return -errno;
  }
  if (settime_locked(s) != 0) {
    int e = errno;
    timer_delete(s->timer);
    g_arm_failed++;
    return -e;
  }
  s->armed = 1;
  return 0;
}

static void disarm_locked(threads_slot *s) {
  if (s->armed) {
    timer_delete(s->timer); /* also discards a signal still pending from it */
    s->armed = 0;
  }
}

static threads_slot *alloc_locked(pid_t tid, uintptr_t lo, uintptr_t hi) {
  for (uint32_t n = 0; n < THREADS_MAX; n++) {
    uint32_t i = (g_hint + n) % THREADS_MAX;
    threads_slot *s = &threads_table[i];
    if (s->state != THREADS_FREE)
      continue;
    g_hint = i + 1;
    if (i >= g_used)
      g_used = i + 1;
    s->state = THREADS_LIVE;
    s->tid = tid;
    s->armed = 0;
    atomic_store_explicit(&s->stack_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&s->stack_hi, hi, memory_order_relaxed);
    atomic_store_explicit(&s->bounds_asked, 0, memory_order_relaxed);
    atomic_store_explicit(&s->otel_slot, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
    return s;
  }
  g_table_full++;
  return NULL;
}

static void free_locked(threads_slot *s) {
  disarm_locked(s);
  atomic_fetch_add_explicit(&s->gen, 1, memory_order_release); /* stale cookies miss */
  atomic_store_explicit(&s->stack_hi, 0, memory_order_relaxed);
  atomic_store_explicit(&s->stack_lo, 0, memory_order_relaxed);
  s->state = THREADS_FREE;
  s->tid = 0;
}

static threads_slot *find_locked(pid_t tid) {
  for (uint32_t i = 0; i < g_used; i++)
    if (threads_table[i].state == THREADS_LIVE && threads_table[i].tid == tid)
      return &threads_table[i];
  return NULL;
}

void threads_set_exit_owed_hook(void (*hook)(uintptr_t entry)) {
  atomic_store(&g_exit_owed_hook, hook);
}

/* The kernel checks a CPU-time timer only at a tick that finds its thread
 * running, and reports one that expired since as 1 ns from expiry. A thread
 * that ends first never gets that signal: with the first expiry random in
 * the period that is most of a short thread's chance of a sample (a
 * thread-per-request program lost about half of its CPU time). */
static int timer_overdue(timer_t t) {
  struct itimerspec cur;
  return timer_gettime(t, &cur) == 0 && cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 1;
}

static void on_thread_exit(void *p) {
  threads_slot *s = p;
  int owed = 0;
  pthread_mutex_lock(&g_lock);
  if (s->state == THREADS_LIVE && s->tid == gettid()) {
    owed = s->armed && timer_overdue(s->timer);
    free_locked(s);
  }
  pthread_mutex_unlock(&g_lock);
  threads_self = NULL;
  void (*hook)(uintptr_t) = atomic_load(&g_exit_owed_hook);
  if (owed && hook)
    hook(threads_entry); /* the timer is gone: no signal can double it */
}

static void init_once(void) {
  g_key_ok = pthread_key_create(&g_key, on_thread_exit) == 0;
}

static uintptr_t (*_Atomic g_tls_probe)(void);

void threads_set_tls_probe(uintptr_t (*probe)(void)) {
  atomic_store(&g_tls_probe, probe);
}

/* The calling thread's otel_slot value, computed outside the table lock
 * (the probe may take the loader's lock). */
static uintptr_t tls_probe(void) {
  uintptr_t (*probe)(void) = atomic_load(&g_tls_probe);
  return probe ? probe() : 0;
}

static int register_self_locked(uintptr_t lo, uintptr_t hi, uintptr_t otel_slot) {
  pid_t tid = gettid();
  if (excluded_locked(tid))
    return 0;
  threads_slot *s = threads_self;
  if (!s || s->state != THREADS_LIVE || s->tid != tid)
    s = find_locked(tid); /* found by a scan before it registered */
  if (s) {
    if (lo && hi && atomic_load_explicit(&s->stack_hi, memory_order_relaxed) == 0) {
      atomic_store_explicit(&s->stack_lo, lo, memory_order_relaxed);
      atomic_store_explicit(&s->stack_hi, hi, memory_order_release);
    }
  } else {
    s = alloc_locked(tid, lo, hi);
    if (!s)
      return PUSHPROF_ELIMIT;
  }
  atomic_store_explicit(&s->otel_slot, otel_slot, memory_order_release);
  threads_self = s;
  if (g_key_ok)
    pthread_setspecific(g_key, s);
  if (g_armed) {
    int rc = arm_locked(s);
    if (rc < 0)
      return PUSHPROF_ESYS;
  }
  return 0;
}

/* The main thread's stack without reading /proc/self/maps (which is what
 * pthread_getattr_np does for it: ~0.2 ms of a short process's start). The
 * kernel puts the executable's name (AT_EXECFN) at the very top of the
 * initial stack, a pointer's width below the end of its mapping, so the
 * next page boundary above the name is at or below that end and above
 * every frame, argv and environ. The bottom only has to be below any sp of
 * this stack: the stack rlimit below the top (1 GiB when unlimited). The
 * unwinder reads only between an interrupted sp and the top. */
int threads_main_stack_bounds(uintptr_t *lo, uintptr_t *hi) {
  const char *fn = (const char *)getauxval(AT_EXECFN);
  long page = sysconf(_SC_PAGESIZE);
  volatile char here = 0;
  if (!fn || page <= 0)
    return -1;
  uintptr_t top = ((uintptr_t)fn + strlen(fn) + 1 + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
  struct rlimit rl;
  uintptr_t size = (uintptr_t)1 << 30;
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < size)
    size = (uintptr_t)rl.rlim_cur;
  if ((uintptr_t)&here >= top || top - (uintptr_t)&here >= size || top < size)
    return -1; /* not on the initial stack (a coroutine, a custom stack) */
  *lo = top - size;
  *hi = top;
  return 0;
}

__thread int threads_is_own __attribute__((tls_model("initial-exec")));

void threads_self_bounds(uintptr_t *lo, uintptr_t *hi) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  *lo = *hi = 0;
  if (gettid() == getpid() && threads_main_stack_bounds(lo, hi) == 0)
    return;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return; /* the collector finds them in /proc/self/maps instead */
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
    *lo = (uintptr_t)addr;
    *hi = (uintptr_t)addr + size;
  }
  pthread_attr_destroy(&attr);
}

int threads_register_self(void) {
  uintptr_t lo, hi;
  pthread_once(&g_once, init_once);
  threads_self_bounds(&lo, &hi);
  uintptr_t otel_slot = tls_probe();
  pthread_mutex_lock(&g_lock);
  int rc = register_self_locked(lo, hi, otel_slot);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/* The SDK's own threads start past the sanitizer's pthread_create (see
 * threads_spawn_internal), so AddressSanitizer does not clear their
 * stack's shadow: a stack glibc reuses (a fork child restarting the
 * collector takes a dead thread's) would keep the old frames' redzones. */
static void own_stack_fresh(void) {
#if defined(__SANITIZE_ADDRESS__)
  uintptr_t lo, hi;
  threads_self_bounds(&lo, &hi);
  if (lo && hi > lo)
    __asan_unpoison_memory_region((void *)lo, hi - lo);
#endif
}

void threads_exclude_self(void) {
  own_stack_fresh();
  pid_t tid = gettid();
  threads_is_own = 1;
  pthread_mutex_lock(&g_lock);
  if (!excluded_locked(tid)) {
    int i = 0;
    while (i < EXCLUDED_MAX - 1 && g_excluded[i] != 0)
      i++; /* threads_exclude_end frees slots; the last one is always taken */
    g_excluded[i] = tid;
  }
  threads_slot *s = find_locked(tid);
  if (s)
    free_locked(s);
  pthread_mutex_unlock(&g_lock);
}

static _Atomic(threads_create_fn) g_real_create;

void threads_set_real_create(threads_create_fn fn) {
  atomic_store_explicit(&g_real_create, fn, memory_order_release);
}

int threads_spawn_internal(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  threads_create_fn create = atomic_load_explicit(&g_real_create, memory_order_acquire);
  if (!create) /* no interposer: the first definition is libc's */
    create = (threads_create_fn)dlsym(RTLD_DEFAULT, "pthread_create");
  int rc = create ? create(t, attr, fn, arg) : EAGAIN;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* The CPU clock of another thread of this process, as glibc's
 * pthread_getcpuclockid builds it from a tid (MAKE_THREAD_CPUCLOCK). */
static int64_t tid_cpu_ns(pid_t tid) {
  struct timespec ts;
  clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6u);
  if (clock_gettime(c, &ts) != 0)
    return 0; /* gone between the table read and now */
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t threads_own_cpu_ns(void) {
  pthread_mutex_lock(&g_lock);
  int64_t sum = g_excluded_ended_cpu_ns;
  for (int i = 0; i < EXCLUDED_MAX; i++)
    if (g_excluded[i] != 0)
      sum += tid_cpu_ns(g_excluded[i]);
  pthread_mutex_unlock(&g_lock);
  return sum;
}

void threads_exclude_end(void) {
  pid_t tid = gettid();
  struct timespec ts;
  int64_t mine = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0
                     ? (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec
                     : 0;
  pthread_mutex_lock(&g_lock);
  g_excluded_ended_cpu_ns += mine;
  for (int i = 0; i < EXCLUDED_MAX; i++)
    if (g_excluded[i] == tid)
      g_excluded[i] = 0;
  pthread_mutex_unlock(&g_lock);
}

static int cmp_tid(const void *a, const void *b) {
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return (x > y) - (x < y);
}

static int scan_locked(void) {
  pid_t *tids = NULL, *known = NULL;
  size_t n = 0, cap = 0, nknown = 0;
  int rc = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return PUSHPROF_ESYS;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long t = strtol(e->d_name, &end, 10);
    if (*end != '\0' || t <= 0)
      continue; /* "." and ".." */
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      pid_t *p = realloc(tids, ncap * sizeof *p);
      if (!p) {
        rc = PUSHPROF_ENOMEM;
        goto fail;
      }
      tids = p;
      cap = ncap;
    }
    tids[n++] = (pid_t)t;
  }
  qsort(tids, n, sizeof *tids, cmp_tid);
  known = malloc(THREADS_MAX * sizeof *known);
  if (!known) {
    rc = PUSHPROF_ENOMEM;
    goto fail;
  }
  for (uint32_t i = 0; i < g_used; i++) {
    threads_slot *s = &threads_table[i];
    if (s->state != THREADS_LIVE)
      continue;
    if (!bsearch(&s->tid, tids, n, sizeof *tids, cmp_tid))
      free_locked(s); /* gone without telling us (not made by pthread_create) */
    else
      known[nknown++] = s->tid;
  }
  qsort(known, nknown, sizeof *known, cmp_tid);
  for (size_t i = 0; i < n; i++) {
    if (excluded_locked(tids[i]) || bsearch(&tids[i], known, nknown, sizeof *known, cmp_tid))
      continue;
    if (!alloc_locked(tids[i], 0, 0))
      break;
  }
fail:
  closedir(d);
  free(tids);
  free(known);
  return rc;
}

/* Arms every live slot that has no timer yet (new, or registered while
 * sampling was off). A slot whose timer cannot be made is freed: its thread
 * most likely exited; if not, the next rescan tries again. */
static void arm_pending_locked(void) {
  if (!g_armed)
    return;
  for (uint32_t i = 0; i < g_used; i++) {
    threads_slot *s = &threads_table[i];
    if (s->state == THREADS_LIVE && !s->armed && arm_locked(s) < 0)
      free_locked(s);
  }
}

int threads_rescan(void) {
  pthread_mutex_lock(&g_lock);
  int rc = scan_locked();
  arm_pending_locked();
  pthread_mutex_unlock(&g_lock);
  return rc;
}

int threads_arm_all(int signo, int64_t period_ns, char *err, size_t errlen) {
  uintptr_t lo, hi;
  pthread_once(&g_once, init_once);
  threads_self_bounds(&lo, &hi);
  uintptr_t otel_slot = tls_probe();
  pthread_mutex_lock(&g_lock);
  g_signo = signo;
  g_period_ns = period_ns;
  int rc = register_self_locked(lo, hi, otel_slot);
  if (rc == 0 && !threads_self)
    rc = PUSHPROF_EINVAL; /* the collector thread cannot start sampling */
  if (rc < 0)
    goto fail;
  g_armed = 1;
  rc = arm_locked(threads_self);
  if (rc < 0) {
    snprintf(err, errlen, "timer_create on the thread CPU clock: %s", strerror(-rc));
    g_armed = 0;
    goto fail;
  }
  if (scan_locked() < 0)
    snprintf(err, errlen, "cannot list /proc/self/task: threads alive now are found later");
  arm_pending_locked();
  pthread_mutex_unlock(&g_lock);
  return 0;
fail:
  pthread_mutex_unlock(&g_lock);
  if (rc == PUSHPROF_ELIMIT)
    snprintf(err, errlen, "thread table full (%d threads)", THREADS_MAX);
  return -1;
}

int threads_set_period(int64_t period_ns) {
  if (period_ns <= 0)
    return -1;
  pthread_mutex_lock(&g_lock);
  int rc = g_armed ? 0 : -1;
  if (g_armed && period_ns != g_period_ns) {
    g_period_ns = period_ns;
    for (uint32_t i = 0; i < g_used; i++) {
      threads_slot *s = &threads_table[i];
      if (s->state == THREADS_LIVE && s->armed)
        (void)settime_locked(s); /* a timer deleted meanwhile keeps its thread unsampled */
    }
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

void threads_disarm_all(void) {
  pthread_mutex_lock(&g_lock);
  g_armed = 0;
  for (uint32_t i = 0; i < g_used; i++)
    if (threads_table[i].state == THREADS_LIVE)
      disarm_locked(&threads_table[i]);
  pthread_mutex_unlock(&g_lock);
}

void threads_publish_bounds(uint32_t idx, uint32_t gen, uintptr_t lo, uintptr_t hi) {
  if (idx >= THREADS_MAX || !lo || hi <= lo)
    return;
  threads_slot *s = &threads_table[idx];
  pthread_mutex_lock(&g_lock);
  if (s->state == THREADS_LIVE && atomic_load_explicit(&s->gen, memory_order_relaxed) == gen &&
      atomic_load_explicit(&s->stack_hi, memory_order_relaxed) == 0) {
    atomic_store_explicit(&s->stack_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&s->stack_hi, hi, memory_order_release);
  }
  pthread_mutex_unlock(&g_lock);
}

void threads_get_stats(threads_stats *st) {
  memset(st, 0, sizeof *st);
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < g_used; i++) {
    if (threads_table[i].state == THREADS_LIVE) {
      st->live++;
      st->armed += threads_table[i].armed;
    }
  }
  st->arm_failed = g_arm_failed;
  st->table_full = g_table_full;
  pthread_mutex_unlock(&g_lock);
}

void threads_atfork_prepare(void) {
  pthread_mutex_lock(&g_lock);
}

void threads_atfork_parent(void) {
  pthread_mutex_unlock(&g_lock);
}

void threads_atfork_child(void) {
  pthread_mutex_init(&g_lock, NULL);
  for (uint32_t i = 0; i < g_used; i++) {
    threads_slot *s = &threads_table[i];
    if (s->state == THREADS_FREE)
      continue;
    s->armed = 0; /* POSIX timers are not inherited across fork */
    free_locked(s);
  }
  g_armed = 0;
  memset(g_excluded, 0, sizeof g_excluded);
  g_excluded_ended_cpu_ns = 0; /* the child's CPU clocks start at zero */
  g_rng = 0;
  threads_self = NULL;
}
