/* The sampling handler's side for signals that are not its own
 * (sdk/signal/handler_linux.c): once installed for a signal, the kernel
 * runs sampler_handle_signal, and a signal from another sender (raise
 * here) goes to the action the program set, before or after, as the
 * kernel would have run it. The program sees and sets its actions through
 * sampler_sigaction (what the interposed sigaction calls). The timer
 * samples themselves are checked through the sampler (test_sampler_linux). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "handler.h"
#include "pp_test.h"
#include "pushprof.h"
#include "sampler.h"
#include "sampler_internal.h"

static atomic_int g_info_calls, g_plain_calls, g_last_code;

static void info_handler(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)uc;
  atomic_fetch_add(&g_info_calls, 1);
  atomic_store(&g_last_code, si ? si->si_code : 0);
}

static void plain_handler(int sig) {
  (void)sig;
  atomic_fetch_add(&g_plain_calls, 1);
}

/* The program's action through the view the handler keeps. */
static struct sigaction view_of(int signo) {
  struct sigaction old;
  memset(&old, 0, sizeof old);
  PP_CHECK_INT(sampler_sigaction(signo, NULL, &old, sigaction), ==, 0);
  return old;
}

static void set_view(int signo, void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  PP_CHECK_INT(sampler_sigaction(signo, &sa, NULL, sigaction), ==, 0);
}

/* The action the kernel runs for signo. */
static uintptr_t kernel_action(int signo) {
  struct sigaction k;
  PP_CHECK_INT(sigaction(signo, NULL, &k), ==, 0);
  return (k.sa_flags & SA_SIGINFO) ? (uintptr_t)k.sa_sigaction : (uintptr_t)k.sa_handler;
}

static void test_handler_forwards_others_signals_to_the_earlier_action(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = info_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  PP_CHECK_INT(sigaction(SIGUSR2, &sa, NULL), ==, 0);
  char err[200] = "";
  PP_CHECK_INT(handler_install(SIGUSR2, err, sizeof err), ==, 0);
  PP_CHECK(kernel_action(SIGUSR2) == (uintptr_t)sampler_handle_signal);
  PP_CHECK(view_of(SIGUSR2).sa_sigaction == info_handler); /* not ours */
  raise(SIGUSR2);
  PP_CHECK_INT(atomic_load(&g_info_calls), ==, 1);
  PP_CHECK_INT(atomic_load(&g_last_code), ==, SI_TKILL);          /* its siginfo passed on */
  PP_CHECK_INT(handler_install(SIGUSR2, err, sizeof err), ==, 0); /* once per signal */
  PP_CHECK(view_of(SIGUSR2).sa_sigaction == info_handler);
  raise(SIGUSR2);
  PP_CHECK_INT(atomic_load(&g_info_calls), ==, 2);
}

/* Actions set after the install: a plain handler, SA_RESETHAND (runs
 * once, then the view is SIG_DFL) and SIG_IGN; the kernel's action stays
 * the sampler's throughout. */
static void test_handler_forwards_to_actions_set_later(void) {
  set_view(SIGUSR2, plain_handler, 0);
  raise(SIGUSR2);
  PP_CHECK_INT(atomic_load(&g_plain_calls), ==, 1);
  PP_CHECK_INT(atomic_load(&g_info_calls), ==, 2);

  set_view(SIGUSR2, plain_handler, SA_RESETHAND);
  raise(SIGUSR2);
  PP_CHECK_INT(atomic_load(&g_plain_calls), ==, 2);
  PP_CHECK(view_of(SIGUSR2).sa_handler == SIG_DFL);

  set_view(SIGUSR2, SIG_IGN, 0);
  raise(SIGUSR2); /* ignored: the test goes on */
  PP_CHECK_INT(atomic_load(&g_plain_calls), ==, 2);
  PP_CHECK(kernel_action(SIGUSR2) == (uintptr_t)sampler_handle_signal);
}

static void test_handler_reports_a_signal_it_cannot_take(void) {
  char err[200] = "";
  PP_CHECK_INT(handler_install(SIGKILL, err, sizeof err), ==, PUSHPROF_ESYS);
  PP_CHECK(strstr(err, "signal 9") != NULL);
  PP_CHECK(strstr(err, strerror(EINVAL)) != NULL);
  handler_set_running(1);
  PP_CHECK_INT(handler_running(), ==, 1);
  handler_set_running(0);
  PP_CHECK_INT(handler_running(), ==, 0);
}

int main(void) {
  handler_set_libc_sigaction(sigaction);
  PP_RUN(test_handler_forwards_others_signals_to_the_earlier_action);
  PP_RUN(test_handler_forwards_to_actions_set_later);
  PP_RUN(test_handler_reports_a_signal_it_cannot_take);
  PP_DONE();
}
