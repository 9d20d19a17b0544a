/* Threads that wait in known ways, each measuring its own waits (the
 * truth the profiles are checked against):
 *   sleeper      nanosleep of 2 ms, again and again (site_sleep)
 *   reader       read() from a pipe a feeder thread writes a byte into
 *                every 3 ms (site_pipe)
 *   two lockers  take one mutex in turns and hold it ~1 ms spinning, then
 *                spin 0.5 ms outside it, so each waits about 0.5 ms for
 *                the other every time (site_lock): a third of their time
 * It runs for the given seconds, then prints true_sleep_ns, true_pipe_ns,
 * true_lock_ns (time spent inside the calls) and their counts.
 *   wl_wait_sites [seconds, default 1.5]
 * Linked (WL_LINKED): starts pushprof itself and labels each thread's
 * waits with route=/sleep, /pipe, /lock. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "wl_common.h"

#ifdef WL_LINKED
#define LABEL(k, v) pushprof_label_set((k), (v))
#else
#define LABEL(k, v) ((void)0)
#endif

static double g_seconds = 1.5;
static _Atomic int g_stop;
static int g_pipe[2];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  int64_t ns, n;
} truth;
static truth t_sleep, t_pipe, t_lock;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* noipa: each site is one frame with its plain name. */
__attribute__((noipa)) void site_sleep(truth *t);
__attribute__((noipa)) void site_sleep(truth *t) {
  struct timespec d = {0, 2000000};
  int64_t a = now_ns();
  while (nanosleep(&d, &d) != 0 && errno == EINTR) {
  }
  t->ns += now_ns() - a;
  t->n++;
}

__attribute__((noipa)) int site_pipe(truth *t);
__attribute__((noipa)) int site_pipe(truth *t) {
  char c;
  int64_t a = now_ns();
  ssize_t r = read(g_pipe[0], &c, 1);
  t->ns += now_ns() - a;
  t->n++;
  return r == 1 && c == 'x';
}

__attribute__((noipa)) void site_lock(truth *t);
__attribute__((noipa)) void site_lock(truth *t) {
  int64_t a = now_ns();
  pthread_mutex_lock(&g_mu);
  t->ns += now_ns() - a;
  t->n++;
}

static void spin_for(int64_t ns) {
  int64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

static void *sleeper(void *arg) {
  (void)arg;
  LABEL("route", "/sleep");
  while (!atomic_load(&g_stop))
    site_sleep(&t_sleep);
  return NULL;
}

static void *feeder(void *arg) {
  (void)arg;
  struct timespec d = {0, 3000000};
  while (!atomic_load(&g_stop)) {
    nanosleep(&d, NULL);
    if (write(g_pipe[1], "x", 1) != 1)
      break;
  }
  close(g_pipe[1]);
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  LABEL("route", "/pipe");
  while (site_pipe(&t_pipe)) {
  }
  return NULL;
}

static void *locker(void *arg) {
  truth *mine = arg;
  LABEL("route", "/lock");
  while (!atomic_load(&g_stop)) {
    site_lock(mine);
    spin_for(1000000);
    pthread_mutex_unlock(&g_mu);
    /* Outside the lock for less than the other holds it: the other takes
     * it meanwhile, and this one then waits (an unlock followed at once by
     * a lock would mostly take it back uncontended). */
    spin_for(500000);
  }
  return NULL;
}

int main(int argc, char **argv) {
  g_seconds = wl_arg(argc, argv, g_seconds, 600, "wl_wait_sites [seconds, 0..600]");
  wl_start();
  if (pipe(g_pipe) != 0) {
    perror("wl_wait_sites: pipe");
    return 1;
  }
  static truth lock_a, lock_b;
  pthread_t th[5];
  void *(*fn[5])(void *) = {sleeper, feeder, reader, locker, locker};
  void *args[5] = {NULL, NULL, NULL, &lock_a, &lock_b};
  for (int i = 0; i < 5; i++)
    if (pthread_create(&th[i], NULL, fn[i], args[i]) != 0) {
      fprintf(stderr, "wl_wait_sites: pthread_create failed\n");
      return 1;
    }
  struct timespec d = {(time_t)g_seconds, (long)((g_seconds - (time_t)g_seconds) * 1e9)};
  nanosleep(&d, NULL);
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 5; i++)
    pthread_join(th[i], NULL);
  t_lock.ns = lock_a.ns + lock_b.ns;
  t_lock.n = lock_a.n + lock_b.n;
  printf("true_sleep_ns=%lld\ntrue_sleep_n=%lld\n", (long long)t_sleep.ns, (long long)t_sleep.n);
  printf("true_pipe_ns=%lld\ntrue_pipe_n=%lld\n", (long long)t_pipe.ns, (long long)t_pipe.n);
  printf("true_lock_ns=%lld\ntrue_lock_n=%lld\n", (long long)t_lock.ns, (long long)t_lock.n);
  return 0;
}
