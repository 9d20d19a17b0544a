/* Threads that block the sampling signal (argv[1], a number) with
 * pthread_sigmask, one that blocks every signal, and one that unblocks after
 * spinning (its pending signal lands then), while two threads run normally. */
#include "st_common.h"
#include <pthread.h>
#include <signal.h>

WL_SPIN_FN(st_blocked_spin)
WL_SPIN_FN(st_running_spin)

static int g_sig;

static void *blocked(void *arg) {
  int mode = (int)(intptr_t)arg;
  sigset_t set, old;
  if (mode == 1)
    sigfillset(&set);
  else {
    sigemptyset(&set);
    sigaddset(&set, g_sig);
  }
  ST_CHECK(pthread_sigmask(SIG_BLOCK, &set, &old) == 0, "pthread_sigmask");
  st_blocked_spin(0.6);
  if (mode == 2)
    ST_CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0, "pthread_sigmask");
  return NULL;
}

static void *running(void *arg) {
  st_running_spin(0.6);
  return arg;
}

int main(int argc, char **argv) {
  ST_CHECK(argc == 2, "usage: st_blocked SIGNUM");
  g_sig = atoi(argv[1]);
  pthread_t th[5];
  ST_CHECK(pthread_create(&th[0], NULL, blocked, (void *)0) == 0, "pthread_create");
  ST_CHECK(pthread_create(&th[1], NULL, blocked, (void *)1) == 0, "pthread_create");
  ST_CHECK(pthread_create(&th[2], NULL, blocked, (void *)2) == 0, "pthread_create");
  ST_CHECK(pthread_create(&th[3], NULL, running, NULL) == 0, "pthread_create");
  ST_CHECK(pthread_create(&th[4], NULL, running, NULL) == 0, "pthread_create");
  for (int i = 0; i < 5; i++)
    ST_CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
  printf("threads=5 done\n");
  return 0;
}
