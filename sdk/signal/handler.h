/* The signal handler's side of the sampler (handler_linux.c), as the
 * sampler's control (sampler_linux.c: start, stop, fork) drives it. None
 * of these is async-signal-safe unless marked; all are thread-safe. */
#ifndef PUSHPROF_HANDLER_H
#define PUSHPROF_HANDLER_H
#include <stddef.h>
#include <stdint.h>

#include "sampler.h"

#define SIGNO_MAX 65 /* _NSIG on Linux */

/* Installs sampler_handle_signal for signo (once per signal): the action it
 * replaces becomes the one other senders' signals are forwarded to. 0, or
 * PUSHPROF_ESYS with a one-line reason in err. */
int handler_install(int signo, char *err, size_t errlen);
/* Samples are recorded only while running is set; the handler stays
 * installed either way, so a late timer signal is swallowed. */
void handler_set_running(int on);
int handler_running(void);
/* From now on SIGPROFs from the kernel (si_code SI_KERNEL) are the
 * process-wide ITIMER_PROF's, each weighted by the periods of process CPU
 * since the last one counted (from now, at period_ns). */
void handler_use_itimer(int64_t period_ns);
int handler_itimer(void);
/* libc's sigaction for the SDK's own actions (the interposers hand it over
 * before main); handler_resolve_libc_sigaction looks it up where nobody did
 * (the static library). Not from a signal handler. */
void handler_set_libc_sigaction(sampler_sigaction_fn fn);
void handler_resolve_libc_sigaction(void);
/* The thread-exit hook (threads_set_exit_owed_hook): the sample a thread
 * was owed when it ended, given to its start routine. */
void handler_record_at_exit(uintptr_t entry);
/* In a forked child: the lock of signal actions is free (its holder, if
 * any, is gone). */
void handler_atfork_child(void);
#endif
