/* Sampler internals shared with tests and benchmarks (not the public API). */
#ifndef PUSHPROF_SAMPLER_INTERNAL_H
#define PUSHPROF_SAMPLER_INTERNAL_H
#include <signal.h>

#include "sampler.h"

/* The signal handler (see the protocol comment in sampler_linux.c).
 * Async-signal-safe. Exposed so bench_handler can call it with a forged
 * siginfo (si_code SI_TIMER, sival_ptr = threads_cookie(...)). */
void sampler_handle_signal(int signo, siginfo_t *si, void *uc);

/* Tests only: 1 makes sampler_start behave as if per-thread timers could
 * not be made, so the setitimer(ITIMER_PROF) fallback is exercised. */
void sampler_force_itimer_for_tests(int on);
#endif
