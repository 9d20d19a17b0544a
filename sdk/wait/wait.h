/* Off-CPU and lock profiles: where threads waited, and for how long, by
 * stack and by the thread's labels, in Go's block and mutex profile layout
 * (contentions/count, delay/nanoseconds; period type contentions/count).
 *
 * The interposers (libpushprof_wait.so, wait_interpose.c) time the calls
 * that block and keep waits by time waited (wait_hooks.h). A kept wait is
 * recorded here on the thread that waited, after the wait: its stack walked
 * with the DWARF unwinder, its labels copied, both added to the window's
 * table under one mutex. While a table the walk needs is not built yet, the
 * stack is copied instead (stack_copy.h) and the wait kept pending, walked
 * on the collector thread after a drain or by the next cut of its kind. The SDK's own threads are
 * never recorded. Each window is cut into one profile per kind, as the CPU profile is: the values
 * of the waits that ended in it. */
#ifndef PUSHPROF_WAIT_H
#define PUSHPROF_WAIT_H
#include <stddef.h>
#include <stdint.h>

#include "wait_hooks.h"

#define WAIT_RATE_DEFAULT 1000000 /* ns: waits of 1 ms or more are all kept */
#define WAIT_RATE_MAX (1000000000LL * 3600)

/* Starts the kinds in mask (1 << WAIT_OFFCPU, 1 << WAIT_LOCK) at rates in
 * ns (1..WAIT_RATE_MAX). 0, or -1 with a reason in err (libpushprof_wait.so
 * is not loaded, or a sanitizer's interceptors come first). */
int wait_start(unsigned mask, int64_t offcpu_rate, int64_t lock_rate, char *err, size_t errlen);
/* Stops every kind: nothing is recorded after it; the tables are emptied. */
void wait_stop(void);
int wait_running(int kind);

/* Cuts kind's window: an uncompressed pprof of the waits recorded since
 * the previous cut. 0, or a negative PUSHPROF_E* code. */
int wait_cut(int kind, uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
/* 1 if nothing was recorded for kind since its last cut. */
int wait_window_empty(int kind);

/* The hooks wait_start uses: NULL (the default) looks up the interposer
 * library's; the tests hand over their own. */
void wait_use_hooks(wait_hooks *h);
/* The recorder the interposers call (wait_record_fn). */
void wait_record(int kind, int64_t contentions, int64_t delay_ns);

/* Collector thread, after each drain: walks the stack copies of pending
 * waits and adds them to their windows. Not on a waiting thread. */
void wait_resolve_pending(void);

/* Statistics (tests, profile comments). deferred: waits kept with a stack
 * copy; cut_short: copies refused (budget, memory), walked at once with
 * frame-pointer steps where no table was built. */
typedef struct wait_stats {
  uint64_t recorded[WAIT_KINDS], deferred, cut_short, table_full, skipped_busy;
} wait_stats;
void wait_get_stats(wait_stats *st);

void wait_atfork_prepare(void);
void wait_atfork_parent(void);
void wait_atfork_child(void);
#endif
