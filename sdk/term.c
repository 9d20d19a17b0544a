/* The handler only records the signal and wakes the collector thread; the
 * collector, after its drain, starts a thread of the SDK's own that runs the
 * owner's stop (which joins the collector, so it cannot run there) and
 * raises the signal again at its default action. A signal that comes while
 * disarmed, or when no thread can be started, takes its default action at
 * once: the host dies as it would have, only without its last window. */
#include "term.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "collector.h"
#include "sampler.h"
#include "sdk_log.h"
#include "threads_linux.h"

static void (*_Atomic g_on_term)(void);
static atomic_int g_signo;   /* the first term signal caught; 0: none */
static atomic_int g_armed;   /* the handler may defer to the collector */
static atomic_int g_started; /* the stopping thread was started */
static int g_hooked;         /* after_drain registered (once per process) */

void term_die_of(int signo) {
  sampler_own_default(signo);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  raise(signo);
}

static void term_handler(int signo) {
  int saved = errno;
  int none = 0;
  (void)atomic_compare_exchange_strong(&g_signo, &none, signo); /* the first one wins */
  if (atomic_load(&g_armed))
    sampler_wake_from_signal();
  else
    term_die_of(signo);
  errno = saved;
}

static void *term_main(void *arg) {
  int signo = (int)(intptr_t)arg;
  threads_exclude_self();
  void (*fn)(void) = atomic_load(&g_on_term);
  if (fn)
    fn();
  threads_exclude_end();
  term_die_of(signo);
  return NULL; /* only if the program ignored the signal meanwhile */
}

/* On the collector thread after each drain. */
static void term_after_drain(void) {
  int signo = atomic_load(&g_signo);
  if (!signo || !atomic_load(&g_armed) || atomic_exchange(&g_started, 1))
    return;
  pthread_t t;
  pthread_attr_t ta;
  int rc = pthread_attr_init(&ta);
  if (rc == 0) {
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    rc = threads_spawn_internal(&t, &ta, term_main, (void *)(intptr_t)signo);
    pthread_attr_destroy(&ta);
  }
  if (rc != 0) {
    sdk_log("pushprof: cannot start a thread to write the profile on signal %d: %s; the last "
            "window is lost",
            signo, strerror(rc));
    term_die_of(signo);
  }
}

void term_arm(void (*on_term)(void)) {
  atomic_store(&g_on_term, on_term);
  if (!g_hooked && collector_add_after_drain(term_after_drain) == 0)
    g_hooked = 1;
  if (!g_hooked)
    return; /* no way to run on_term: leave the default actions alone */
  term_install(term_handler);
  atomic_store(&g_armed, 1);
}

void term_install(void (*handler)(int)) {
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old;
    if (sampler_own_sigaction(sigs[i], NULL, &old) != 0)
      continue;
    if (old.sa_handler == handler && !(old.sa_flags & SA_SIGINFO))
      continue; /* ours already (installed before, or inherited over fork) */
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
      continue; /* the program handles (or ignores) it: not ours */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sampler_own_sigaction(sigs[i], &sa, NULL);
  }
}

void term_disarm(void) {
  atomic_store(&g_armed, 0);
}

void term_atfork_child(void) {
  atomic_store(&g_signo, 0);
  atomic_store(&g_started, 0);
}
