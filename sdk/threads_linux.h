/* Thread table of the sampler: one preallocated slot per sampled thread, its
 * per-thread CPU-time timer (timer_create + SIGEV_THREAD_ID) and its stack
 * bounds. Registration, scans and timer changes take the table lock; the
 * signal handler only reads slots through atomics (threads_from_cookie).
 * Slots are static (never freed), so a late signal never reads freed memory.
 * Functions are thread-safe and not async-signal-safe unless marked. */
#ifndef PUSHPROF_THREADS_LINUX_H
#define PUSHPROF_THREADS_LINUX_H
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define THREADS_MAX 4096 /* pushprof.h documents it (pushprof_thread_register) */

typedef struct threads_slot {
  _Atomic uint32_t gen;                 /* bumped at each allocation and free */
  _Atomic uintptr_t stack_lo, stack_hi; /* 0: unknown (hi published last) */
  /* Set by the handler's first sample with unknown bounds, which then wakes
   * the collector to resolve them (once per allocation of the slot). */
  _Atomic uint32_t bounds_asked;
  /* The interval of the slot's timer, ns: the handler stamps it on each
   * sample (its CPU time), as threads_set_period may change it. */
  _Atomic int64_t period_ns;
  /* The address of the thread's own otel_thread_ctx_v1 when another
   * library's definition of it is the one in force (threads_set_tls_probe),
   * else 0: the handler reads that tracer's record through it. */
  _Atomic uintptr_t otel_slot;
  /* Below: only under the table lock. */
  int state; /* THREADS_FREE, THREADS_LIVE */
  pid_t tid;
  int armed;
  timer_t timer;
} threads_slot;

enum { THREADS_FREE = 0, THREADS_LIVE };

extern threads_slot threads_table[THREADS_MAX];

/* The calling thread's slot when it registered itself, else NULL.
 * Async-signal-safe to read (initial-exec TLS). */
extern __thread threads_slot *threads_self __attribute__((tls_model("initial-exec")));

/* The cookie our timers carry in sigev_value, and its inverse for the
 * handler: *ours = 1 if the cookie has our magic; returns the slot if its
 * generation still matches (else NULL: a stale signal). Async-signal-safe. */
void *threads_cookie(uint32_t idx, uint32_t gen);
threads_slot *threads_from_cookie(const void *cookie, int *ours, uint32_t *idx, uint32_t *gen);

/* Arms a timer on every live thread (the caller registers with exact stack
 * bounds; others are found in /proc/self/task). Returns 0, or -1 with err
 * set if not even the caller's timer could be made (use setitimer then). */
int threads_arm_all(int signo, int64_t period_ns, char *err, size_t errlen);
/* Re-arms every armed timer (and those armed later) with a new interval,
 * the first expiry within one interval. 0, or -1 if not armed (setitimer
 * mode or stopped): nothing changed. */
int threads_set_period(int64_t period_ns);
/* Deletes every timer; slots stay so a restart can re-arm. */
void threads_disarm_all(void);

/* Registers the calling thread (idempotent), arming it if sampling is on.
 * Deregisters itself at thread exit. 0 or a negative PUSHPROF_E* code. */
int threads_register_self(void);
/* The calling thread's start routine (set by the pthread_create interposer
 * before it registers the thread), 0 if unknown. */
extern __thread uintptr_t threads_entry __attribute__((tls_model("initial-exec")));
/* Called in a registered thread as it ends, after its timer is deleted, when
 * that timer had expired without a signal yet (see RING_F_AT_EXIT), with
 * threads_entry. Set once by the sampler before it arms timers. */
void threads_set_exit_owed_hook(void (*hook)(uintptr_t entry));
/* Called on each thread as it registers itself (before the table lock):
 * its value becomes the slot's otel_slot. Set once by the sampler. */
void threads_set_tls_probe(uintptr_t (*probe)(void));
/* The main thread's stack bounds from AT_EXECFN and the stack rlimit, with
 * no file read (see threads_linux.c); -1 if the caller is not on it. */
int threads_main_stack_bounds(uintptr_t *lo, uintptr_t *hi);

/* The SDK's own threads (collector, pusher, exit flush) call this first:
 * never sampled, not even when a rescan finds them; and
 * threads_exclude_end() last, so a host thread that later gets the same tid
 * is sampled. At most 4 at once (the oldest is forgotten beyond that). */
void threads_exclude_self(void);
void threads_exclude_end(void);
/* 1 on the SDK's own threads (set by threads_exclude_self): the heap
 * profiler does not sample their allocations. */
extern __thread int threads_is_own __attribute__((tls_model("initial-exec")));
/* The calling thread's stack bounds (the main thread's from
 * threads_main_stack_bounds, others' from pthread_getattr_np); 0, 0 if
 * unknown. Allocates while holding the thread's lock (pthread_getattr_np):
 * never from an allocation hook. */
void threads_self_bounds(uintptr_t *lo, uintptr_t *hi);
/* CPU time the SDK's own threads have used since the process started: those
 * that ended (each adds its own at threads_exclude_end) and those running.
 * Not async-signal-safe (takes the table lock). */
int64_t threads_own_cpu_ns(void);

/* libc's pthread_create, past the pthread_create interposer of the .so
 * files (interpose.c hands it over through sampler_use_libc before main);
 * without it (the static library, which interposes nothing) the SDK's
 * threads use the first definition, libc's. */
typedef int (*threads_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
void threads_set_real_create(threads_create_fn fn);

/* Starts one of the SDK's own threads with every signal blocked (the host's
 * process-directed signals are for its threads), past our pthread_create
 * interposer: no trampoline, so nothing is malloc'ed in the new thread (a
 * first malloc there costs a whole malloc arena) and it is not registered.
 * 0 or an errno value, as pthread_create. */
int threads_spawn_internal(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg);

/* Collector: adds threads not yet known, drops slots of threads gone. */
int threads_rescan(void);
/* Collector: publishes stack bounds found for a slot from /proc/self/maps. */
void threads_publish_bounds(uint32_t idx, uint32_t gen, uintptr_t lo, uintptr_t hi);

typedef struct threads_stats {
  int live;            /* slots in use */
  int armed;           /* timers running */
  uint64_t arm_failed; /* timer_create failures since start (thread unsampled) */
  uint64_t table_full; /* threads not sampled because THREADS_MAX was reached */
} threads_stats;
void threads_get_stats(threads_stats *st);

/* fork(): prepare takes the table lock, parent releases it, child resets
 * the table (its timers were not inherited). */
void threads_atfork_prepare(void);
void threads_atfork_parent(void);
void threads_atfork_child(void);
#endif
