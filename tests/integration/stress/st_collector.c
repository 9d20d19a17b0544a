/* Signals landing while the SDK's collector drains, aggregates, builds and
 * pushes big profiles. Four workers walk many distinct stacks (paths through
 * eight st_hop functions chosen by the request number) with a fixed amount
 * of work each; meanwhile
 *  - a flusher calls pushprof_flush every 0-175 ms when the SDK is preloaded
 *    (found with dlsym; without it the workload runs the same, unflushed),
 *  - a storm thread sends SIGUSR1 to the workers (the handler allocates:
 *    safe there, the workers never allocate while it is unblocked) and
 *    SIGUSR2 to the process (lands on any thread, the SDK's included),
 *  - a forker forks children that _exit at once (SIGCHLD, a counting
 *    handler). Handlers are installed without SA_RESTART.
 * stdout depends only on the work: identical with and without the SDK. */
#include "st_common.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NWORKERS = 4, REQUESTS = 1500, NFORKS = 100 };

static atomic_int g_workers_done;
static volatile sig_atomic_t g_usr1, g_usr2, g_chld;

__attribute__((noipa)) static uint64_t st_collector_leaf(uint64_t work, uint64_t seed) {
  volatile uint64_t acc = seed;
  for (uint64_t i = 0; i < work; i++)
    acc += i * 2654435761u;
  return acc;
}

typedef uint64_t (*hop_fn)(unsigned depth, uint64_t path, uint64_t work);
static const hop_fn g_hops[8];

#define ST_HOP(n)                                                                                  \
  __attribute__((noipa)) static uint64_t st_hop##n(unsigned depth, uint64_t path, uint64_t work) { \
    if (depth == 0)                                                                                \
      return st_collector_leaf(work, n);                                                           \
    return g_hops[path & 7](depth - 1, path >> 3, work) + n;                                       \
  }
ST_HOP(0)
ST_HOP(1)
ST_HOP(2)
ST_HOP(3)
ST_HOP(4)
ST_HOP(5)
ST_HOP(6)
ST_HOP(7)
static const hop_fn g_hops[8] = {st_hop0, st_hop1, st_hop2, st_hop3,
                                 st_hop4, st_hop5, st_hop6, st_hop7};

static void *st_collector_worker(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg, sum = 0;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ST_CHECK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL) == 0, "pthread_sigmask");
  for (uint64_t r = 0; r < REQUESTS; r++) {
    uint64_t path = (r * NWORKERS + id) * 0x9E3779B97F4A7C15u >> 20;
    sum += g_hops[path & 7](2 + (unsigned)(path >> 3) % 5, path >> 6, 2000000);
  }
  /* Exiting frees memory: no allocating handler from here on. */
  ST_CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "pthread_sigmask");
  atomic_fetch_add(&g_workers_done, 1);
  return (void *)(uintptr_t)sum;
}

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  size_t n = 16 + (size_t)g_usr1 % 4096;
  char *p = malloc(n);
  if (p) {
    memset(p, 0x5a, n);
    free(p);
  }
  g_usr1 = g_usr1 + 1;
  errno = saved;
}
static void on_usr2(int sig) {
  (void)sig;
  g_usr2 = g_usr2 + 1;
}
static void on_chld(int sig) {
  (void)sig;
  g_chld = g_chld + 1;
}

static void pause_us(long us) {
  struct timespec ts = {0, us * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static pthread_t g_workers[NWORKERS];

static void *storm(void *arg) {
  (void)arg;
  for (unsigned i = 0; atomic_load(&g_workers_done) < NWORKERS; i++) {
    pthread_kill(g_workers[i % NWORKERS], SIGUSR1); /* joinable until main joins */
    if (i % 2 == 0)
      kill(getpid(), SIGUSR2);
    pause_us(100);
  }
  return NULL;
}

static void *flusher(void *arg) {
  int (*flush)(int) = (int (*)(int))arg;
  /* Windows of 0 to 175 ms: tiny profiles back to back, and big ones. */
  for (unsigned i = 0; atomic_load(&g_workers_done) < NWORKERS; i++) {
    (void)flush(2000); /* busy or timed out under load: fine, the next one comes */
    pause_us((long)(i % 8) * 25000);
  }
  return NULL;
}

#ifdef __SANITIZE_ADDRESS__
/* gcc 12's ASan allocator has no fork handler: a child that allocates
 * deadlocks if another thread held an allocator lock at fork, and the SDK
 * restarts sampling (allocating) in its atfork child handler (seen here:
 * pp_builder_new from api_atfork_child). vfork runs no atfork handler; the
 * SIGCHLD storm is the same. The normal build forks. */
#define ST_FORK vfork
#else
#define ST_FORK fork
#endif

static void *forker(void *arg) {
  int *ok = arg;
  for (int i = 0; i < NFORKS; i++) {
    pid_t pid = ST_FORK();
    ST_CHECK(pid >= 0, "fork");
    if (pid == 0)
      _exit(0);
    int status;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
      ;
    ST_CHECK(w == pid, "waitpid");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      (*ok)++;
    pause_us(2000);
  }
  return NULL;
}

static void handle(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  ST_CHECK(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

int main(void) {
  handle(SIGUSR1, on_usr1);
  handle(SIGUSR2, on_usr2);
  handle(SIGCHLD, on_chld);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ST_CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "pthread_sigmask");
  for (int i = 0; i < NWORKERS; i++)
    ST_CHECK(pthread_create(&g_workers[i], NULL, st_collector_worker, (void *)(uintptr_t)i) == 0,
             "pthread_create");
  pthread_t st, fl, fk;
  int forks_ok = 0;
  void *flush = dlsym(RTLD_DEFAULT, "pushprof_flush");
  ST_CHECK(pthread_create(&st, NULL, storm, NULL) == 0, "pthread_create");
  ST_CHECK(pthread_create(&fk, NULL, forker, &forks_ok) == 0, "pthread_create");
  if (flush)
    ST_CHECK(pthread_create(&fl, NULL, flusher, flush) == 0, "pthread_create");
  ST_CHECK(pthread_join(st, NULL) == 0, "pthread_join");
  ST_CHECK(pthread_join(fk, NULL) == 0, "pthread_join");
  if (flush)
    ST_CHECK(pthread_join(fl, NULL) == 0, "pthread_join");
  uint64_t sum = 0;
  for (int i = 0; i < NWORKERS; i++) {
    void *ret;
    ST_CHECK(pthread_join(g_workers[i], &ret) == 0, "pthread_join");
    sum += (uint64_t)(uintptr_t)ret;
  }
  fprintf(stderr, "pid=%d flushes=%s usr1=%d usr2=%d chld=%d\n", (int)getpid(),
          flush ? "on" : "off", (int)g_usr1, (int)g_usr2, (int)g_chld);
  printf("workers=%d requests=%d checksum=%lu forks=%d ok=%d signals=%s\n", NWORKERS, REQUESTS,
         (unsigned long)sum, NFORKS, forks_ok,
         g_usr1 > 0 && g_usr2 > 0 && g_chld > 0 ? "yes" : "no");
  return forks_ok == NFORKS ? 0 : 1;
}
