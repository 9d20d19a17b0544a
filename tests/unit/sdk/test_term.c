/* Unit tests for sdk/term.c, each in a forked child (the signals kill it):
 * an armed SIGTERM, SIGINT or SIGQUIT runs the owner's stop once, on
 * another thread than the one it interrupted, then the child dies of that
 * very signal; disarmed, it dies at once without the stop; a signal the
 * program handles itself is left to the program. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pp_test.h"
#include "sampler.h"
#include "term.h"

static int g_fd = -1; /* the child writes 'S' here when the stop runs */
static pthread_t g_main;
static atomic_int g_handled;

static void on_term(void) {
  char c = pthread_equal(pthread_self(), g_main) ? 'M' : 'S';
  if (write(g_fd, &c, 1) != 1)
    _exit(9);
}

static void own_handler(int signo) {
  (void)signo;
  atomic_store(&g_handled, 1);
}

/* Forks a child that starts the collector, sets the program's own SIGTERM
 * handler if own, arms (and disarms if disarm), then raises sig. Returns
 * the child's wait status; *stops gets what on_term wrote. */
static int run_child(int sig, int own, int disarm, char *stops, size_t len) {
  int p[2];
  if (pipe(p) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    g_fd = p[1];
    g_main = pthread_self();
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    char err[256];
    sampler_config sc = {.hz = 100, .signo = SIGPROF, .no_cpu = 1};
    if (sampler_start(&sc, err, sizeof err) != 0)
      _exit(8);
    if (own)
      signal(sig, own_handler);
    term_arm(on_term);
    if (disarm)
      term_disarm();
    raise(sig);
    /* Armed, the signal comes back from another thread within a drain. */
    for (int i = 0; i < 200; i++)
      usleep(10000);
    _exit(atomic_load(&g_handled) ? 0 : 7);
  }
  close(p[1]);
  int st = 0;
  waitpid(pid, &st, 0);
  ssize_t n = read(p[0], stops, len - 1);
  stops[n > 0 ? n : 0] = '\0';
  close(p[0]);
  return st;
}

static void test_armed_signals_stop_once_then_kill(void) {
  static const int sigs[] = {SIGTERM, SIGINT, SIGQUIT, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    char stops[16];
    int st = run_child(sigs[i], 0, 0, stops, sizeof stops);
    PP_CHECK(WIFSIGNALED(st));
    PP_CHECK_INT(WIFSIGNALED(st) ? WTERMSIG(st) : -1, ==, sigs[i]);
    PP_CHECK_STR(stops, "S"); /* once, not on the interrupted thread */
  }
}

static void test_disarmed_signal_kills_at_once(void) {
  char stops[16];
  int st = run_child(SIGTERM, 0, 1, stops, sizeof stops);
  PP_CHECK_INT(WIFSIGNALED(st) ? WTERMSIG(st) : -1, ==, SIGTERM);
  PP_CHECK_STR(stops, "");
}

static void test_program_handler_is_left_alone(void) {
  char stops[16];
  int st = run_child(SIGTERM, 1, 0, stops, sizeof stops);
  PP_CHECK(WIFEXITED(st));
  PP_CHECK_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, ==, 0);
  PP_CHECK_STR(stops, "");
}

int main(void) {
  PP_RUN(test_armed_signals_stop_once_then_kill);
  PP_RUN(test_disarmed_signal_kills_at_once);
  PP_RUN(test_program_handler_is_left_alone);
  PP_DONE();
}
