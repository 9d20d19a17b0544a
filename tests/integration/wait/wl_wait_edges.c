/* The awkward cases of the off-CPU profile, each checked by what the
 * program itself sees:
 *   - a thread cancelled (pthread_cancel) while blocked in read, a
 *     cancellation point: it unwinds through the interposer and is joined
 *     as PTHREAD_CANCELED; waits after it are still recorded (after_cancel);
 *   - fork while another thread is blocked in read: the child sleeps 50 ms
 *     in child_sleep and exits 7; the parent's waitpid (site_waitpid) sees
 *     exit status 7;
 *   - a thread still blocked in read when main returns: the process exits
 *     at once with status 0 (the wait has not ended, so no profile has it).
 * Prints "edges ok" when every check passed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wl_common.h"

static int g_never[2];

static void *blocked_reader(void *arg) {
  (void)arg;
  char c;
  while (read(g_never[0], &c, 1) < 0 && errno == EINTR) {
  }
  return NULL;
}

__attribute__((noipa)) void after_cancel(void);
__attribute__((noipa)) void after_cancel(void) {
  struct timespec d = {0, 30000000};
  nanosleep(&d, NULL);
}

__attribute__((noipa)) void child_sleep(void);
__attribute__((noipa)) void child_sleep(void) {
  struct timespec d = {0, 50000000};
  nanosleep(&d, NULL);
}

__attribute__((noipa)) int site_waitpid(pid_t pid);
__attribute__((noipa)) int site_waitpid(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int fail(const char *what) {
  printf("FAIL %s\n", what);
  return 1;
}

int main(void) {
  wl_start();
  if (pipe(g_never) != 0)
    return fail("pipe");
  /* Cancellation inside a blocking call. */
  pthread_t t;
  if (pthread_create(&t, NULL, blocked_reader, NULL) != 0)
    return fail("pthread_create");
  struct timespec d = {0, 20000000};
  nanosleep(&d, NULL);
  if (pthread_cancel(t) != 0)
    return fail("pthread_cancel");
  void *res = NULL;
  if (pthread_join(t, &res) != 0 || res != PTHREAD_CANCELED)
    return fail("the cancelled reader was not joined as cancelled");
  after_cancel();
  /* fork while a thread is blocked. */
  pthread_t t2;
  if (pthread_create(&t2, NULL, blocked_reader, NULL) != 0)
    return fail("pthread_create");
  nanosleep(&d, NULL);
  pid_t pid = fork();
  if (pid < 0)
    return fail("fork");
  if (pid == 0) {
    child_sleep();
    _exit(7);
  }
  if (site_waitpid(pid) != 7)
    return fail("the child's exit status");
  /* t2 stays blocked: main returns with it blocked. */
  printf("edges ok\n");
  fflush(stdout);
  return 0;
}
