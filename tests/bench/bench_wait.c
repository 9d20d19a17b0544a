/* Benchmark programs for the off-CPU and lock profiles' cost
 * (wait_bench.py runs them with and without the profiler):
 *   bench_wait pingpong [ROUNDS]
 *     a server-like loop: two threads pass a token through two pipes
 *     (each read blocks until the other writes), and each hop takes and
 *     releases an uncontended mutex four times (a request's bookkeeping);
 *     ROUNDS round trips (default 200000). Prints rounds=N.
 *   bench_wait calls [BATCHES] [CALLS_PER_BATCH]
 *     on one thread: an uncontended pthread_mutex_lock+unlock pair, and a
 *     read of an empty non-blocking pipe (a system call that returns at
 *     once, EAGAIN); prints lock_ns=X and read_ns=Y, the median over
 *     batches of the thread's CPU time per call (defaults 15 x 1000000
 *     and 15 x 200000). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_rows.h"

static int ping[2], pong[2];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static long g_rounds = 200000;
static volatile uint64_t g_book;

static void bookkeeping(void) {
  for (int i = 0; i < 4; i++) {
    pthread_mutex_lock(&g_mu);
    g_book++;
    pthread_mutex_unlock(&g_mu);
  }
}

static void *echo(void *arg) {
  (void)arg;
  char c;
  for (long i = 0; i < g_rounds; i++) {
    if (read(ping[0], &c, 1) != 1)
      break;
    bookkeeping();
    if (write(pong[1], &c, 1) != 1)
      break;
  }
  return NULL;
}

static int pingpong(void) {
  if (pipe(ping) != 0 || pipe(pong) != 0) {
    perror("bench_wait: pipe");
    return 1;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, echo, NULL) != 0)
    return 1;
  char c = 'x';
  long done = 0;
  for (; done < g_rounds; done++) {
    bookkeeping();
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
      break;
  }
  pthread_join(t, NULL);
  printf("rounds=%ld\n", done);
  return done == g_rounds ? 0 : 1;
}

static double thread_cpu_ns(void) {
  return (double)bench_ns(CLOCK_THREAD_CPUTIME_ID);
}

static double median_per_call(long batches, long per, int what, int fd) {
  double *ns = calloc((size_t)batches, sizeof *ns);
  if (!ns)
    return -1;
  char c;
  for (long b = 0; b < batches; b++) {
    double t0 = thread_cpu_ns();
    for (long i = 0; i < per; i++) {
      if (what == 0) {
        pthread_mutex_lock(&g_mu);
        pthread_mutex_unlock(&g_mu);
      } else if (read(fd, &c, 1) != -1 || errno != EAGAIN) {
        fprintf(stderr, "bench_wait: the empty pipe was readable\n");
        exit(1);
      }
    }
    ns[b] = (thread_cpu_ns() - t0) / (double)per;
  }
  qsort(ns, (size_t)batches, sizeof *ns, bench_rows_cmp);
  double m = ns[batches / 2];
  free(ns);
  return m;
}

static int calls(long batches, long per) {
  int p[2];
  if (pipe(p) != 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) {
    perror("bench_wait: pipe");
    return 1;
  }
  printf("lock_ns=%.3f\n", median_per_call(batches, per, 0, -1));
  printf("read_ns=%.3f\n", median_per_call(batches, per / 5 ? per / 5 : 1, 1, p[0]));
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "pingpong") == 0) {
    if (argc > 2)
      g_rounds = atol(argv[2]);
    if (g_rounds < 1) {
      fprintf(stderr, "bench_wait pingpong [ROUNDS >= 1]\n");
      return 2;
    }
    return pingpong();
  }
  if (argc > 1 && strcmp(argv[1], "calls") == 0) {
    long batches = argc > 2 ? atol(argv[2]) : 15, per = argc > 3 ? atol(argv[3]) : 1000000;
    if (batches < 1 || per < 1) {
      fprintf(stderr, "bench_wait calls [BATCHES >= 1] [CALLS >= 1]\n");
      return 2;
    }
    return calls(batches, per);
  }
  fprintf(stderr, "usage: bench_wait pingpong [ROUNDS] | calls [BATCHES] [CALLS]\n");
  return 2;
}
