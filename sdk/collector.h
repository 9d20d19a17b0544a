/* The collector: owns the ring the signal handler writes into, a thread
 * that drains it (every COLLECTOR_DRAIN_MS) into a table of identical
 * stacks -> counts and rescans threads (every second), and the cut that
 * turns one window of that table into a pprof via profbuild. Not
 * async-signal-safe except collector_ring, which the handler writes to. */
#ifndef PUSHPROF_COLLECTOR_H
#define PUSHPROF_COLLECTOR_H
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

#define COLLECTOR_DRAIN_MS 50
#define COLLECTOR_RESCAN_MS 1000
#define COLLECTOR_RING_CELLS 512
/* Memory for one window's distinct samples (stack + labels); see collector.c. */
#define COLLECTOR_AGG_BYTES (32u << 20)

extern ring collector_ring;

enum { COLLECTOR_MODE_TIMERS = 1, COLLECTOR_MODE_ITIMER = 2 };

/* Initialises the ring (once); before any handler can write to it. */
void collector_init(void);
/* Starts the collector thread (first call also opens the first window).
 * 0 or a negative PUSHPROF_E* code with err set. */
int collector_start(int hz, int signo, int mode, char *err, size_t errlen);
/* Stops and joins the thread after a last drain. Idempotent. */
void collector_stop(void);
/* At exit with nothing left to cut: tells the thread to stop at its next
 * wake-up without waking or joining it (a join waits for the scheduler:
 * milliseconds on a loaded machine). collector_stop or collector_start
 * later join it. */
void collector_leave(void);
/* See sampler_cut(). PUSHPROF_ENOTSTARTED before the first start. */
int collector_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
/* See sampler_discard(). */
int collector_discard(void);
/* On-demand sessions: from collector_session_begin to collector_session_cut
 * every sample also goes to the session's own table at hz (1 ..
 * COLLECTOR_SESSION_HZ_MAX; the threads' timers run at the faster of hz and
 * the continuous rate meanwhile), while the continuous table keeps taking
 * one sample per continuous period of CPU time. One session at a time: a
 * new one discards the one running. 0, PUSHPROF_EINVAL or
 * PUSHPROF_ENOTSTARTED. */
#define COLLECTOR_SESSION_HZ_MAX 1000
int collector_session_begin(uint64_t id, int hz);
/* The running session's id, 0 if none. */
uint64_t collector_session_id(void);
/* Ends session id and cuts its table (period 1/hz). PUSHPROF_ENOTSTARTED if
 * id is not the one running. */
int collector_session_cut(uint64_t id, uint8_t **out, size_t *len, int64_t *start_ns,
                          int64_t *end_ns);
/* 1 if the current window holds nothing (no signal handled, none dropped,
 * no record still being written):
 * its cut would be an empty profile. Drains the ring first. */
int collector_window_empty(void);
/* Wakes the collector thread now (the first sample of a process, which
 * needs unwind tables). Async-signal-safe. */
void collector_wake_from_signal(void);
/* fn runs on the collector thread after each drain (every
 * COLLECTOR_DRAIN_MS, and at once after collector_wake_from_signal): the
 * push path starts its thread from there when first needed. NULL: none. */
void collector_set_tick(void (*fn)(void));
/* Adds fn to the functions that run on the collector thread after each
 * drain, in the order added, before the tick: the heap, off-CPU and lock
 * profilers walk their stack copies there (stack_copy.h). Adding fn again
 * changes nothing; a function stays for the life of the process. 0, or -1
 * if COLLECTOR_AFTER_DRAIN_MAX functions are there already. Thread-safe. */
#define COLLECTOR_AFTER_DRAIN_MAX 4
int collector_add_after_drain(void (*fn)(void));
/* Builds every loaded object's unwind table at the next wake-up (now),
 * not the executable's and libc's first: for the heap profiler, whose
 * stacks start with the process. */
void collector_want_all_tables(void);
/* Walks a stack copy the caller owns (defer_unwind_copy) as the drain
 * walks the handler's, one walk at a time with the drain's. Any thread but
 * a signal handler. */
struct unwind_regs;
uint32_t collector_unwind_copy(const struct unwind_regs *regs, const uintptr_t *words, size_t len,
                               int partial, uintptr_t *pcs, uint32_t max, unsigned *flags);
/* Builds a pprof of stacks with the collector's mappings and symbol caches
 * (profbuild_build after a refresh of the maps). 0 or a negative
 * PUSHPROF_E* code. */
struct profbuild_stack;
struct profbuild_meta;
int collector_build(const struct profbuild_stack *st, size_t n, const struct profbuild_meta *meta,
                    uint8_t **out, size_t *len);
/* Splits a label snapshot ("k\0v\0k\0v\0", labels_copy) into at most
 * RING_MAX_LABELS pp_labels pointing into it; returns how many were well
 * formed. */
struct pp_label;
size_t collector_decode_labels(const char *labels, uint16_t nlabels, uint16_t len,
                               struct pp_label *out);
/* Drains the ring now (also done by the thread). */
void collector_drain(void);
/* Called (through sampler_before_dlclose) before the real dlclose, on the caller's
 * thread: while sampling, the library's mappings and symbols are kept for
 * the next builds (profbuild_retain_library). Takes no lock. */
void collector_before_dlclose(void *handle);
/* Called (through sampler_after_dlclose) after the real dlclose: wakes the
 * collector so the unwind tables drop the library now. Takes no lock. */
void collector_after_dlclose(void);

/* Tests only: the per-window byte limit (0: back to COLLECTOR_AGG_BYTES). */
void collector_set_agg_limit_for_tests(size_t bytes);

void collector_atfork_prepare(void);
void collector_atfork_parent(void);
void collector_atfork_child(void);
#endif
