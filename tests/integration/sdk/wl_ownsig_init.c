/* libwl_ownsig_init.so: the "application" side of the own-SIGPROF test. Its
 * constructor installs the program's own SIGPROF handler and an ITIMER_PROF
 * at 100 Hz before profiling starts (a DT_NEEDED library is initialised
 * before an LD_PRELOAD one, and before main in the linked variant). */
#include <signal.h>
#include <stdatomic.h>
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

__attribute__((constructor)) static void ownsig_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct itimerval it = {{0, 10000}, {0, 10000}};
  if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &it, NULL) != 0)
    atomic_store(&foreign_signals, -1000000);
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
