/* Interface between the SDK's public API (api.c, preload.c) and the sampler
 * (timers, signal handler, rings, unwinder, collector thread). The sampler
 * knows nothing of environment variables, files or sockets: it samples and
 * turns what it sampled into pprof bytes on request.
 * None of these functions is async-signal-safe; all are thread-safe. */
#ifndef PUSHPROF_SAMPLER_H
#define PUSHPROF_SAMPLER_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct sigaction;

typedef struct sampler_config {
  int hz;     /* 1..1000, already validated */
  int signo;  /* SIGPROF or another signal, already validated */
  int no_cpu; /* 1: no CPU sampling (no handler, no timers); the collector
               * thread still runs for the other profile types */
} sampler_config;

/* Installs the handler, arms a per-thread CPU timer for every live thread
 * (falling back to setitimer(ITIMER_PROF) with one logged line) and starts
 * the collector thread. 0, or a negative PUSHPROF_E* code with a one-line
 * reason in err. */
int sampler_start(const sampler_config *cfg, char *err, size_t errlen);

/* Cuts a window: everything sampled since the previous cut (or the start)
 * becomes one uncompressed pprof (*out malloc'ed, caller frees); the next
 * cut starts where this one ended, so no sample is counted twice or lost.
 * Window bounds are returned in ns since the epoch. Works after
 * sampler_stop() too (returns what was left). 0 or a negative code. */
int sampler_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns);
/* Ends the window as a cut would, dropping its samples without building a
 * profile (a forked child's share of its parent's window). 0 or a negative
 * code. */
int sampler_discard(void);

/* 1 if a cut now would hold no sample (nothing handled or dropped since the
 * last cut): the exit path skips building and pushing such a profile. */
int sampler_window_empty(void);

/* fn runs on the collector thread after each drain: every 50 ms, and at
 * once after sampler_wake_from_signal (see collector_set_tick). */
void sampler_set_tick(void (*fn)(void));
/* Wakes the collector thread now. Async-signal-safe. */
void sampler_wake_from_signal(void);

/* At exit: no sample is taken after it (timers disarmed); the collector
 * thread still runs. sampler_stop or sampler_leave follows. */
void sampler_quiesce(void);

/* At exit once sampler_window_empty() held after sampler_quiesce(): stops
 * without waiting for the collector thread (see collector_leave). */
void sampler_leave(void);

/* Stops all timers and the collector thread. The handler stays installed
 * (forwarding to the previous one) so a late signal never hits SIG_DFL.
 * Idempotent. */
void sampler_stop(void);

/* Registers the calling thread (idempotent); called by the pthread_create
 * interposer in new threads and by pushprof_thread_register(). */
int sampler_thread_register(void);
/* The same from the pthread_create interposer, with the thread's start
 * routine (a thread that ends with a sample due gets it there). */
int sampler_thread_started(uintptr_t entry);

/* The interposers (interpose.c, .so files only) are the sampler's only
 * callers besides the API, and reach it through these. Before main they
 * hand over libc's pthread_create and sigaction (or a sanitizer's, the next
 * definitions), which the SDK's own threads and signal actions then use,
 * bypassing the interposers. Thread-safe. */
typedef int (*sampler_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
void sampler_use_libc(int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *),
                      sampler_sigaction_fn sigaction_fn);
/* Around the real dlclose: the library's mappings and symbols are kept for
 * the next profiles, and its unwind table goes at once. */
void sampler_before_dlclose(void *handle);
void sampler_after_dlclose(void);
/* The interposed sigaction (interpose.c, .so files only) calls this with
 * libc's. For a signal whose handler is ours it records the program's action
 * as the one our handler forwards other senders' signals to, and answers
 * oldact with the program's previous action, so a program that installs its
 * own SIGPROF handler after we start neither replaces ours nor sees it;
 * other signals (and the SDK's own calls) go to real. Async-signal-safe. */
int sampler_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact,
                      int (*real)(int, const struct sigaction *, struct sigaction *));
/* sigaction for the SDK's own changes (handler install, SIG_DFL before a
 * re-raise): never captured by the interposer. Async-signal-safe. */
int sampler_own_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact);
/* The same, setting signo's action to SIG_DFL (before a re-raise). */
int sampler_own_default(int signo);

/* 1 while started and not stopped. */
int sampler_running(void);
#endif
