/* glibc leaves its dl_iterate_phdr lock held in a child forked while
 * another thread was inside dl_iterate_phdr: the child's next call hangs.
 * dlphdr's fork handlers keep the SDK's calls out of that window: a thread
 * calling dlphdr_iterate in a loop while the main thread forks 200 times,
 * each child calling dl_iterate_phdr, must never leave a child hung. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlphdr.h"
#include "pp_test.h"

static _Atomic int g_stop;

static int slow_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)info, (void)size, (void)data;
  for (volatile int k = 0; k < 20000; k++)
    ;
  return 0;
}

static void *iterate_forever(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop))
    dlphdr_iterate(slow_cb, NULL);
  return NULL;
}

/* Forks n children that each call dl_iterate_phdr; returns how many hung. */
static int fork_children(int n) {
  int hung = 0;
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p == 0) {
      dl_iterate_phdr(slow_cb, NULL);
      _exit(0);
    }
    if (p < 0)
      return -1;
    int st, done = 0;
    for (int w = 0; w < 2000 && !done; w++) { /* 2 s each at most */
      done = waitpid(p, &st, WNOHANG) == p;
      if (!done)
        usleep(1000);
    }
    if (!done) {
      hung++;
      kill(p, SIGKILL);
      waitpid(p, &st, 0);
    }
  }
  return hung;
}

static void test_dlphdr_fork_never_splits_a_call(void) {
  PP_CHECK_INT(pthread_atfork(dlphdr_atfork_prepare, dlphdr_atfork_parent, dlphdr_atfork_child), ==,
               0);
  pthread_t t;
  PP_CHECK_INT(pthread_create(&t, NULL, iterate_forever, NULL), ==, 0);
  PP_CHECK_INT(fork_children(200), ==, 0);
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
}

int main(void) {
  PP_RUN(test_dlphdr_fork_never_splits_a_call);
  PP_DONE();
}
