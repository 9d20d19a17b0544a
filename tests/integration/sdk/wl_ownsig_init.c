/* libwl_ownsig_init.so: the "application" side of the own-SIGPROF test. Its
 * constructor installs the program's own SIGPROF handler and an ITIMER_PROF
 * at 100 Hz before profiling starts (a DT_NEEDED library is initialised
 * before an LD_PRELOAD one, and before main in the linked variant); with
 * WL_OWNSIG_LATE=1 in the environment main does it after profiling started
 * (ownsig_install_late), as GNU sort installs its cleanup handlers. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "wl_ownsig.h"

static atomic_long own_signals, foreign_signals;

static void on_prof(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  /* setitimer's signals come from the kernel; anything else (a POSIX timer's
   * SI_TIMER) is not the program's and should never reach it. */
  if (si->si_code == SI_KERNEL)
    atomic_fetch_add(&own_signals, 1);
  else
    atomic_fetch_add(&foreign_signals, 1);
}

static void ownsig_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct itimerval it = {{0, 10000}, {0, 10000}};
  if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &it, NULL) != 0)
    atomic_store(&foreign_signals, -1000000);
}

__attribute__((constructor)) static void ownsig_init(void) {
  const char *late = getenv("WL_OWNSIG_LATE");
  if (!late || strcmp(late, "1") != 0)
    ownsig_install();
}

static void other_handler(int sig) {
  (void)sig;
}

/* What a program sees of SIGPROF's action around its own install; prints
 * view_before (the action it finds: "default" as before any profiler),
 * signal_returned ("own": signal() hands back the handler it set) and
 * view_after ("own"). */
int ownsig_install_late(void) {
  struct sigaction old;
  if (sigaction(SIGPROF, NULL, &old) != 0)
    return -1;
  printf("view_before=%s\n",
         !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL ? "default" : "other");
  ownsig_install();
  /* signal() replaces and returns it; sigaction puts it back. */
  void (*prev)(int) = signal(SIGPROF, other_handler);
  printf("signal_returned=%s\n", (void *)prev == (void *)on_prof ? "own" : "other");
  struct sigaction again;
  if (sigaction(SIGPROF, NULL, &again) != 0 || again.sa_handler != other_handler)
    return -1;
  ownsig_install();
  if (sigaction(SIGPROF, NULL, &again) != 0)
    return -1;
  printf("view_after=%s\n",
         (again.sa_flags & SA_SIGINFO) && again.sa_sigaction == on_prof ? "own" : "other");
  return 0;
}

long ownsig_own(void) {
  return atomic_load(&own_signals);
}
long ownsig_foreign(void) {
  return atomic_load(&foreign_signals);
}
void ownsig_disarm(void) {
  struct itimerval it = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &it, NULL);
}
