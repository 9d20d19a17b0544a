/* The contract between the blocking-call interposers (libpushprof_wait.so,
 * wait_interpose.c) and the off-CPU and lock profilers in the SDK (wait.c).
 *
 * As with the heap's (heap_hooks.h), the interposers are a library of their
 * own, so that a process that profiles neither has none in front of its
 * reads, sleeps and locks. The library exports pushprof_wait_hooks_v1,
 * returning its hooks (the _v1 names this layout). The SDK looks it up
 * with dlsym when off-CPU or lock profiling starts, sets `record`, the
 * rates, then `on`.
 *
 * Sampling is by time waited, as Go's block profile: a wait of d
 * nanoseconds is kept with probability min(1, d / rate), and a kept wait
 * stands for 1/p waits of d each (contentions rate/d, delay rate when
 * d < rate). So waits of at least the rate are all kept, exactly, and the
 * expected totals of both values are the true ones. A wait not kept costs
 * two reads of CLOCK_MONOTONIC and a draw. Nothing is interrupted: the
 * interposer calls the real function, times it, and returns its result
 * with errno as the function left it. */
#ifndef PUSHPROF_WAIT_HOOKS_H
#define PUSHPROF_WAIT_HOOKS_H
#include <stdatomic.h>
#include <stdint.h>

#define WAIT_HOOKS_SYMBOL "pushprof_wait_hooks_v1"

enum { WAIT_OFFCPU = 0, WAIT_LOCK = 1, WAIT_KINDS = 2 };

/* Fixed point of the contentions value: 1/WAIT_ONE of a contention. */
#define WAIT_ONE 1024

/* A kept wait: kind, its weighted contentions (in 1/WAIT_ONE) and delay
 * (ns). Runs on the waiting thread, after the wait, from the interposer. */
typedef void (*wait_record_fn)(int kind, int64_t contentions, int64_t delay_ns);

typedef struct wait_hooks {
  _Atomic int on[WAIT_KINDS];       /* 1 while that profile runs */
  _Atomic int64_t rate[WAIT_KINDS]; /* ns of waiting per kept wait, on average */
  _Atomic(wait_record_fn) record;   /* set by the SDK before on; never cleared */
  /* Set by the interposer library. */
  int (*is_ours)(void); /* 1 if the program's calls reach the interposers */
  const void *own_code; /* an address in the interposer library */
} wait_hooks;

typedef wait_hooks *(*wait_hooks_fn)(void);

/* The sampling decision for a wait of d ns at rate ns, u uniform in [0, 1):
 * 1 if kept, with its weighted contentions (1/WAIT_ONE) and delay. */
static inline int wait_weigh(int64_t d, int64_t rate, double u, int64_t *contentions,
                             int64_t *delay) {
  if (d <= 0)
    return 0;
  if (d >= rate) {
    *contentions = WAIT_ONE;
    *delay = d;
    return 1;
  }
  if (u * (double)rate >= (double)d)
    return 0;
  *contentions = (int64_t)((double)WAIT_ONE * (double)rate / (double)d + 0.5);
  *delay = rate;
  return 1;
}
#endif
