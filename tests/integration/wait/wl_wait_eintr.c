/* Blocking calls with timeouts, while other threads burn CPU (so the CPU
 * profiler's signals fly): counts the calls that came back early, with
 * EINTR or before their timeout, or with a result or errno they should not
 * have. Under any profile pushprof must cause none.
 *   wl_wait_eintr [rounds, default 20]
 * Prints calls=N early=M, and one line per early call. Each round: sleep
 * (one round in five, 1 s), usleep, nanosleep, clock_nanosleep, poll,
 * ppoll, select, epoll_wait, a read and a recv that time out
 * (SO_RCVTIMEO), a condition variable wait and a semaphore wait that time
 * out, each for 5 ms. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wl_common.h"

#define WAIT_NS 5000000LL

static _Atomic int g_stop;
static long g_calls, g_early;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A call that should take want_ns and return rc with errno e (e 0: any). */
static void judge(const char *what, int64_t t0, int64_t want_ns, long rc, long want_rc, int e,
                  int want_e) {
  int64_t took = now_ns() - t0;
  g_calls++;
  if (took < want_ns - 500000 || rc != want_rc || (want_e && e != want_e)) {
    g_early++;
    printf("early %s: took %lld ns of %lld, returned %ld (want %ld), errno %d (want %d)\n", what,
           (long long)took, (long long)want_ns, rc, want_rc, e, want_e);
  }
}

static void *burner(void *arg) {
  volatile uint64_t x = (uintptr_t)arg;
  while (!atomic_load(&g_stop))
    x = x * 6364136223846793005ull + 1;
  return NULL;
}

static void abs_deadline(struct timespec *ts, clockid_t c, int64_t ns) {
  clock_gettime(c, ts);
  ts->tv_nsec += ns % 1000000000;
  ts->tv_sec += ns / 1000000000 + ts->tv_nsec / 1000000000;
  ts->tv_nsec %= 1000000000;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20;
  if (rounds < 1 || rounds > 100000) {
    fprintf(stderr, "usage: wl_wait_eintr [rounds]\n");
    return 2;
  }
  wl_start();
  pthread_t b[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&b[i], NULL, burner, (void *)(uintptr_t)(i + 1));
  int sv[2], ep = epoll_create1(0), pf[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || ep < 0 || pipe(pf) != 0) {
    perror("wl_wait_eintr: setup");
    return 1;
  }
  struct timeval tv = {0, WAIT_NS / 1000};
  setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = pf[0]};
  epoll_ctl(ep, EPOLL_CTL_ADD, pf[0], &ev);
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  sem_t sem;
  sem_init(&sem, 0, 0);
  char buf[8];
  for (int r = 0; r < rounds; r++) {
    int64_t t0;
    struct timespec d = {0, WAIT_NS}, ts;
    if (r % 5 == 0) {
      t0 = now_ns();
      unsigned left = sleep(1);
      judge("sleep", t0, 1000000000, left, 0, 0, 0);
    }
    t0 = now_ns();
    errno = 0;
    judge("usleep", t0, WAIT_NS, usleep(WAIT_NS / 1000), 0, 0, 0);
    t0 = now_ns();
    judge("nanosleep", t0, WAIT_NS, nanosleep(&d, NULL), 0, 0, 0);
    t0 = now_ns();
    judge("clock_nanosleep", t0, WAIT_NS, clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL), 0, 0, 0);
    struct pollfd p = {.fd = pf[0], .events = POLLIN};
    t0 = now_ns();
    judge("poll", t0, WAIT_NS, poll(&p, 1, WAIT_NS / 1000000), 0, 0, 0);
    t0 = now_ns();
    judge("ppoll", t0, WAIT_NS, ppoll(&p, 1, &d, NULL), 0, 0, 0);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(pf[0], &rs);
    struct timeval stv = {0, WAIT_NS / 1000};
    t0 = now_ns();
    judge("select", t0, WAIT_NS, select(pf[0] + 1, &rs, NULL, NULL, &stv), 0, 0, 0);
    struct epoll_event out;
    t0 = now_ns();
    judge("epoll_wait", t0, WAIT_NS, epoll_wait(ep, &out, 1, WAIT_NS / 1000000), 0, 0, 0);
    t0 = now_ns();
    errno = 0;
    long n = read(sv[0], buf, sizeof buf);
    judge("read", t0, WAIT_NS, n, -1, errno, EAGAIN);
    t0 = now_ns();
    errno = 0;
    n = recv(sv[0], buf, sizeof buf, 0);
    judge("recv", t0, WAIT_NS, n, -1, errno, EAGAIN);
    pthread_mutex_lock(&mu);
    abs_deadline(&ts, CLOCK_REALTIME, WAIT_NS);
    t0 = now_ns();
    int rc = pthread_cond_timedwait(&cv, &mu, &ts);
    judge("pthread_cond_timedwait", t0, WAIT_NS, rc, ETIMEDOUT, 0, 0);
    pthread_mutex_unlock(&mu);
    abs_deadline(&ts, CLOCK_REALTIME, WAIT_NS);
    t0 = now_ns();
    errno = 0;
    rc = sem_timedwait(&sem, &ts);
    judge("sem_timedwait", t0, WAIT_NS, rc, -1, errno, ETIMEDOUT);
  }
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 2; i++)
    pthread_join(b[i], NULL);
  printf("calls=%ld\nearly=%ld\n", g_calls, g_early);
  return 0;
}
