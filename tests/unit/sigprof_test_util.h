/* Test-only: the siginfo of a SIGPROF the SDK's own per-thread timer would
 * deliver to the calling thread, for tests and benches that run the
 * handler (sampler_handle_signal) or queue the signal themselves. */
#ifndef SIGPROF_TEST_UTIL_H
#define SIGPROF_TEST_UTIL_H
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "threads_linux.h"

/* si as the timer of the calling thread's slot (registered with the SDK)
 * fills it: SIGPROF, SI_TIMER, the slot's cookie. */
static inline void sigprof_forge_self(siginfo_t *si) {
  threads_slot *s = threads_self;
  memset(si, 0, sizeof *si);
  si->si_signo = SIGPROF;
  si->si_code = SI_TIMER;
  si->si_value.sival_ptr = threads_cookie((uint32_t)(s - threads_table), atomic_load(&s->gen));
}
#endif
