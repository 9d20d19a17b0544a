/* libpushprof_wait.so, the blocking-call interposers of the off-CPU and
 * lock profiles (wait_hooks.h). Each calls the next definition (libc's)
 * and, while a profile is on, times the call and hands a kept wait to the
 * SDK. With both profiles off a call costs a load and a branch more; with
 * them on, a call that is not kept costs two clock reads and a draw.
 *
 * What is seen: calls that reach this library through the dynamic linker
 * (the program's and its libraries'). Calls libc makes to itself are not
 * (stdio's reads and writes, system()'s waitpid, sleep()'s nanosleep is
 * seen as sleep), nor raw syscall() or inline system calls.
 *
 * off-CPU: sleep, usleep, nanosleep, clock_nanosleep; read, write, readv,
 * writev, pread, pwrite (and their 64 names); recv, recvfrom, recvmsg,
 * send, sendto, sendmsg, accept, accept4, connect; poll, ppoll, select,
 * pselect, epoll_wait, epoll_pwait; wait, waitpid, waitid; fsync,
 * fdatasync; pthread_join, pthread_cond_wait, pthread_cond_timedwait,
 * sem_wait, sem_timedwait; and the contended locks below.
 * lock: pthread_mutex_lock, pthread_rwlock_rdlock and pthread_rwlock_wrlock
 * when the lock is held by another thread (a try first: an uncontended
 * lock is a trylock instead of a lock). */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "wait_hooks.h"

static int is_ours(void);

static wait_hooks H = {
    .rate = {1000000, 1000000},
    .is_ours = is_ours,
    .own_code = (const void *)(uintptr_t)is_ours,
};

__attribute__((visibility("default"))) wait_hooks *pushprof_wait_hooks_v1(void);
wait_hooks *pushprof_wait_hooks_v1(void) {
  return &H;
}

static inline int on(int kind) {
  return atomic_load_explicit(&H.on[kind], memory_order_relaxed);
}

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static __thread uint64_t g_rng __attribute__((tls_model("initial-exec")));

static uint64_t draw(void) {
  uint64_t x = g_rng;
  if (x == 0)
    x = (uint64_t)now_ns() ^ ((uint64_t)(uintptr_t)&g_rng << 16) ^ 0x9E3779B97F4A7C15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  g_rng = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* ---- timing ---- */

/* Where the CPU has a constant-rate counter (x86-64 with an invariant TSC,
 * aarch64's virtual counter), a call is timed with two reads of it (about
 * half the cost of two CLOCK_MONOTONIC reads), converted to ns with a rate
 * measured against CLOCK_MONOTONIC once the process's timed calls have
 * spanned CAL_NS; before that, and without such a counter, with
 * CLOCK_MONOTONIC. */
#define CAL_NS 20000000LL
static int g_counter_ok;
static int64_t g_cal_ns;
static uint64_t g_cal_ticks;
static _Atomic uint64_t g_ns_per_tick; /* a double's bits; 0: not calibrated */

static inline uint64_t ticks(void) {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

static int counter_ok(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d >> 8) & 1; /* invariant TSC */
#elif defined(__aarch64__)
  return 1;
#else
  return 0;
#endif
}

/* ns per tick, or 0 while CLOCK_MONOTONIC times calls. */
static inline double tick_ns(void) {
  uint64_t b = atomic_load_explicit(&g_ns_per_tick, memory_order_relaxed);
  double k;
  memcpy(&k, &b, sizeof k);
  return k;
}

/* A timed call's start: counter ticks if calibrated (*k > 0), else ns. */
static inline uint64_t time_begin(double *k) {
  *k = tick_ns();
  return *k > 0 ? ticks() : (uint64_t)now_ns();
}

/* The call's length in ns; calibrates the counter once CAL_NS have passed. */
static inline int64_t time_end(double k, uint64_t start) {
  if (k > 0)
    return (int64_t)((double)(ticks() - start) * k);
  int64_t now = now_ns();
  if (g_counter_ok && g_cal_ticks && now - g_cal_ns >= CAL_NS) {
    uint64_t t = ticks();
    double r = t > g_cal_ticks ? (double)(now - g_cal_ns) / (double)(t - g_cal_ticks) : 0;
    if (r > 0 && r < 1000) {
      uint64_t bits;
      memcpy(&bits, &r, sizeof bits);
      atomic_store_explicit(&g_ns_per_tick, bits, memory_order_relaxed);
    }
  }
  return now - (int64_t)start;
}

/* A wait of kind, d ns long, ended: kept with probability min(1, d / rate),
 * then recorded with its weight. errno is the caller's on return. */
static void wait_end(int kind, int64_t d) {
  int64_t rate = atomic_load_explicit(&H.rate[kind], memory_order_relaxed);
  if (d <= 0 || !on(kind))
    return;
  int64_t c, delay;
  double u = d < rate ? (double)(draw() >> 11) * (1.0 / 9007199254740992.0) : 0; /* [0, 1) */
  if (!wait_weigh(d, rate, u, &c, &delay))
    return;
  wait_record_fn f = atomic_load_explicit(&H.record, memory_order_relaxed);
  if (!f)
    return;
  int e = errno;
  f(kind, c, delay);
  errno = e;
}

/* ---- the next definitions ---- */

#define FN_LIST(X)                                                                                 \
  X(unsigned, sleep, (unsigned s), (s))                                                            \
  X(int, usleep, (useconds_t us), (us))                                                            \
  X(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem))                \
  X(int, clock_nanosleep, (clockid_t c, int fl, const struct timespec *req, struct timespec *rem), \
    (c, fl, req, rem))                                                                             \
  X(ssize_t, read, (int fd, void *b, size_t n), (fd, b, n))                                        \
  X(ssize_t, write, (int fd, const void *b, size_t n), (fd, b, n))                                 \
  X(ssize_t, readv, (int fd, const struct iovec *v, int n), (fd, v, n))                            \
  X(ssize_t, writev, (int fd, const struct iovec *v, int n), (fd, v, n))                           \
  X(ssize_t, pread, (int fd, void *b, size_t n, off_t o), (fd, b, n, o))                           \
  X(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o))                    \
  X(ssize_t, pread64, (int fd, void *b, size_t n, off_t o), (fd, b, n, o))                         \
  X(ssize_t, pwrite64, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o))                  \
  X(ssize_t, recv, (int fd, void *b, size_t n, int fl), (fd, b, n, fl))                            \
  X(ssize_t, recvfrom,                                                                             \
    (int fd, void *b, size_t n, int fl, struct sockaddr *restrict a, socklen_t *restrict al),      \
    (fd, b, n, fl, a, al))                                                                         \
  X(ssize_t, recvmsg, (int fd, struct msghdr *m, int fl), (fd, m, fl))                             \
  X(ssize_t, send, (int fd, const void *b, size_t n, int fl), (fd, b, n, fl))                      \
  X(ssize_t, sendto,                                                                               \
    (int fd, const void *b, size_t n, int fl, const struct sockaddr *a, socklen_t al),             \
    (fd, b, n, fl, a, al))                                                                         \
  X(ssize_t, sendmsg, (int fd, const struct msghdr *m, int fl), (fd, m, fl))                       \
  X(int, accept, (int fd, struct sockaddr *restrict a, socklen_t *restrict al), (fd, a, al))       \
  X(int, accept4, (int fd, struct sockaddr *restrict a, socklen_t *restrict al, int fl),           \
    (fd, a, al, fl))                                                                               \
  X(int, connect, (int fd, const struct sockaddr *a, socklen_t al), (fd, a, al))                   \
  X(int, poll, (struct pollfd * f, nfds_t n, int ms), (f, n, ms))                                  \
  X(int, ppoll, (struct pollfd * f, nfds_t n, const struct timespec *t, const sigset_t *m),        \
    (f, n, t, m))                                                                                  \
  X(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t), (n, r, w, e, t))     \
  X(int, pselect,                                                                                  \
    (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *m),         \
    (n, r, w, e, t, m))                                                                            \
  X(int, epoll_wait, (int fd, struct epoll_event *ev, int n, int ms), (fd, ev, n, ms))             \
  X(int, epoll_pwait, (int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m),          \
    (fd, ev, n, ms, m))                                                                            \
  X(pid_t, wait, (int *st), (st))                                                                  \
  X(pid_t, waitpid, (pid_t p, int *st, int o), (p, st, o))                                         \
  X(int, waitid, (idtype_t t, id_t id, siginfo_t * i, int o), (t, id, i, o))                       \
  X(int, fsync, (int fd), (fd))                                                                    \
  X(int, fdatasync, (int fd), (fd))                                                                \
  X(int, pthread_join, (pthread_t t, void **r), (t, r))                                            \
  X(int, sem_wait, (sem_t * s), (s))                                                               \
  X(int, sem_timedwait, (sem_t *restrict s, const struct timespec *restrict t), (s, t))

#define LOCK_LIST(X)                                                                               \
  X(int, pthread_mutex_lock, pthread_mutex_trylock, (pthread_mutex_t * m), (m))                    \
  X(int, pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l), (l))             \
  X(int, pthread_rwlock_wrlock, pthread_rwlock_trywrlock, (pthread_rwlock_t * l), (l))

/* Condition variables: libc has two versions; the current one is looked up
 * by its version (dlsym alone may give the oldest). */
#define COND_LIST(X)                                                                               \
  X(int, pthread_cond_wait, (pthread_cond_t *restrict c, pthread_mutex_t *restrict m), (c, m))     \
  X(int, pthread_cond_timedwait,                                                                   \
    (pthread_cond_t *restrict c, pthread_mutex_t *restrict m, const struct timespec *restrict t),  \
    (c, m, t))

#define DECLARE(ret, name, params, args) static _Atomic(ret(*) params) real_##name;
#define DECLARE_LOCK(ret, name, tryname, params, args)                                             \
  DECLARE(ret, name, params, args) DECLARE(ret, tryname, params, args)
FN_LIST(DECLARE)
LOCK_LIST(DECLARE_LOCK)
COND_LIST(DECLARE)

static void *next(const char *name, int versioned) {
  void *f = NULL;
  if (versioned) {
    f = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2"); /* x86-64 */
    if (!f)
      f = dlvsym(RTLD_NEXT, name, "GLIBC_2.17"); /* aarch64 */
  }
  return f ? f : dlsym(RTLD_NEXT, name);
}

/* Looks every next definition up, once (a constructor, or the first call
 * that comes before it). dlsym does not call any of these functions. */
static void resolve_all(void) {
#define RESOLVE(ret, name, params, args)                                                           \
  atomic_store_explicit(&real_##name, (ret(*) params)next(#name, 0), memory_order_relaxed);
#define RESOLVE_LOCK(ret, name, tryname, params, args)                                             \
  RESOLVE(ret, name, params, args) RESOLVE(ret, tryname, params, args)
#define RESOLVE_COND(ret, name, params, args)                                                      \
  atomic_store_explicit(&real_##name, (ret(*) params)next(#name, 1), memory_order_relaxed);
  FN_LIST(RESOLVE)
  LOCK_LIST(RESOLVE_LOCK)
  COND_LIST(RESOLVE_COND)
}

__attribute__((constructor(101))) static void wait_interpose_init(void) {
  resolve_all();
  g_counter_ok = counter_ok();
  g_cal_ns = now_ns();
  g_cal_ticks = ticks();
}

/* The next definition of name, NULL only if libc has none. */
#define LOAD(name) atomic_load_explicit(&real_##name, memory_order_relaxed)
#define REAL(name) (LOAD(name) ? LOAD(name) : (resolve_all(), LOAD(name)))

/* ---- the interposers ---- */

/* Each public function's fast path loads the next definition and the
 * profile's flag and jumps; the rest is out of line. A function libc
 * lacks fails as an unknown system call would. */
#define TIMED(ret, name, params, args)                                                             \
  __attribute__((noinline)) static ret slow_##name params {                                        \
    __typeof__(LOAD(name)) pp_fn = REAL(name);                                                     \
    if (!pp_fn) {                                                                                  \
      errno = ENOSYS;                                                                              \
      return (ret)-1;                                                                              \
    }                                                                                              \
    if (!on(WAIT_OFFCPU))                                                                          \
      return pp_fn args;                                                                           \
    double pp_k;                                                                                   \
    uint64_t pp_t0 = time_begin(&pp_k);                                                            \
    ret pp_r = pp_fn args;                                                                         \
    wait_end(WAIT_OFFCPU, time_end(pp_k, pp_t0));                                                  \
    return pp_r;                                                                                   \
  }                                                                                                \
  __attribute__((visibility("default"))) ret name params {                                         \
    __typeof__(LOAD(name)) pp_fn = LOAD(name);                                                     \
    if (__builtin_expect(!pp_fn || on(WAIT_OFFCPU), 0))                                            \
      return slow_##name args;                                                                     \
    return pp_fn args;                                                                             \
  }
FN_LIST(TIMED)
COND_LIST(TIMED)

/* A contended lock is a wait of both kinds. */
#define TIMED_LOCK(ret, name, tryname, params, args)                                               \
  __attribute__((noinline)) static ret slow_##name params {                                        \
    __typeof__(LOAD(name)) pp_fn = REAL(name), pp_try = REAL(tryname);                             \
    if (!pp_fn || !pp_try)                                                                         \
      return ENOSYS;                                                                               \
    if (!on(WAIT_LOCK) && !on(WAIT_OFFCPU))                                                        \
      return pp_fn args;                                                                           \
    ret pp_r = pp_try args;                                                                        \
    if (pp_r != EBUSY)                                                                             \
      return pp_r;                                                                                 \
    double pp_k;                                                                                   \
    uint64_t pp_t0 = time_begin(&pp_k);                                                            \
    pp_r = pp_fn args;                                                                             \
    int64_t pp_d = time_end(pp_k, pp_t0);                                                          \
    wait_end(WAIT_LOCK, pp_d);                                                                     \
    wait_end(WAIT_OFFCPU, pp_d);                                                                   \
    return pp_r;                                                                                   \
  }                                                                                                \
  __attribute__((visibility("default"))) ret name params {                                         \
    __typeof__(LOAD(name)) pp_fn = LOAD(name);                                                     \
    if (__builtin_expect(!pp_fn || (on(WAIT_LOCK) | on(WAIT_OFFCPU)), 0))                          \
      return slow_##name args;                                                                     \
    return pp_fn args;                                                                             \
  }
LOCK_LIST(TIMED_LOCK)

/* ---- for the SDK ---- */

/* 1 if the process's calls to a sleep and to a mutex come here (not to a
 * sanitizer's interceptors or another definition ahead of ours). */
static int is_ours(void) {
  return dlsym(RTLD_DEFAULT, "nanosleep") == (void *)(uintptr_t)nanosleep &&
         dlsym(RTLD_DEFAULT, "pthread_mutex_lock") == (void *)(uintptr_t)pthread_mutex_lock;
}
