/* Termination signals for standalone profiling: a SIGTERM, SIGINT, SIGHUP or
 * SIGQUIT that the program leaves at its default action first writes the
 * last window, then kills the process exactly as the default action would
 * (same signal, same exit status, a core for SIGQUIT where cores are on).
 * The push path has its own (push_install_term_handlers): this module is
 * for a process with no sidecar. */
#ifndef PUSHPROF_TERM_H
#define PUSHPROF_TERM_H

/* Installs handler on SIGTERM, SIGINT, SIGHUP and SIGQUIT where the
 * program left the default action (or handler is there already); the push
 * path's handlers and this module's own. Not async-signal-safe. */
void term_install(void (*handler)(int));

/* Dies of signo as if nobody had caught it: its default action restored,
 * unblocked on this thread, raised. Async-signal-safe. */
void term_die_of(int signo);

/* Installs this module's handlers (term_install) and arms them:
 * on_term runs once, on a thread of the SDK's own, then the signal is
 * raised again at its default action. Call with profiling started (the
 * collector thread, woken by the handler, starts that thread). Not
 * thread-safe against term_disarm; call under the API's lock. */
void term_arm(void (*on_term)(void));

/* After a stop: a term signal takes its default action at once (the
 * handlers stay installed, forwarding). Idempotent. */
void term_disarm(void);

/* In a forked child, before it arms again: forgets a signal its parent
 * caught. */
void term_atfork_child(void);

#endif
