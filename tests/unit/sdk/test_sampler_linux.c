/* The sampler end to end in one process: two threads burn CPU in known
 * functions (one found by the /proc scan, one registered by itself); the
 * profile must attribute roughly CPU time x hz samples to each, with the
 * callers unwound, and consecutive cuts must cover consecutive windows. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pp_parse_ref.h"
#include "pp_test.h"
#include "pushprof.h"
#include "sampler.h"
#include "sampler_internal.h"
#include "threads_linux.h"

#define HZ 100
#define BURN_S 1.0

static atomic_int go;
static atomic_int foreign_signals;
static double cpu_alpha, cpu_beta;

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double spin_cpu(double secs) {
  volatile uint64_t sink = 0;
  double t0 = thread_cpu_s(), t;
  do {
    for (int i = 0; i < 20000; i++)
      sink += (uint64_t)i * 2654435761u;
    t = thread_cpu_s();
  } while (t - t0 < secs);
  return t - t0;
}

__attribute__((noinline)) double burn_alpha(double secs);
__attribute__((noinline)) double burn_alpha(double secs) {
  double r = spin_cpu(secs);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) double burn_beta(double secs);
__attribute__((noinline)) double burn_beta(double secs) {
  double r = spin_cpu(secs);
  __asm__ volatile("" ::: "memory");
  return r;
}

static void *alpha_thread(void *arg) {
  (void)arg;
  while (!atomic_load(&go))
    usleep(1000);
  cpu_alpha = burn_alpha(BURN_S);
  return NULL;
}

static void *beta_thread(void *arg) {
  (void)arg;
  if (sampler_thread_register() != 0)
    fprintf(stderr, "sampler_thread_register failed\n");
  cpu_beta = burn_beta(BURN_S);
  return NULL;
}

static void foreign_handler(int sig) {
  (void)sig;
  atomic_fetch_add(&foreign_signals, 1);
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

static const Perftools__Profiles__Location *loc(const Perftools__Profiles__Profile *p,
                                                uint64_t id) {
  return id >= 1 && id <= p->n_location && p->location[id - 1]->id == id ? p->location[id - 1]
                                                                         : NULL;
}

static const char *fname(const Perftools__Profiles__Profile *p, uint64_t fid) {
  return fid >= 1 && fid <= p->n_function ? str(p, p->function[fid - 1]->name) : "";
}

/* Samples whose stack has a frame named `name`; of those, how many also
 * have a frame named `caller`. */
static int64_t count_with(const Perftools__Profiles__Profile *p, const char *name,
                          const char *caller, int64_t *with_caller) {
  int64_t n = 0;
  *with_caller = 0;
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    int has = 0, has_caller = 0;
    for (size_t j = 0; j < s->n_location_id; j++) {
      const Perftools__Profiles__Location *l = loc(p, s->location_id[j]);
      for (size_t k = 0; l && k < l->n_line; k++) {
        const char *f = fname(p, l->line[k]->function_id);
        has |= strcmp(f, name) == 0;
        has_caller |= strcmp(f, caller) == 0;
      }
    }
    if (has) {
      n += s->value[0];
      if (has_caller)
        *with_caller += s->value[0];
    }
  }
  return n;
}

static int64_t total_samples(const Perftools__Profiles__Profile *p) {
  int64_t n = 0;
  for (size_t i = 0; i < p->n_sample; i++)
    n += p->sample[i]->value[0];
  return n;
}

static int has_comment(const Perftools__Profiles__Profile *p, const char *needle) {
  for (size_t i = 0; i < p->n_comment; i++)
    if (strstr(str(p, p->comment[i]), needle))
      return 1;
  return 0;
}

static Perftools__Profiles__Profile *cut(int64_t *t0, int64_t *t1) {
  uint8_t *buf = NULL;
  size_t len = 0;
  char why[200] = "";
  int rc = sampler_cut(&buf, &len, t0, t1);
  PP_CHECK_INT(rc, ==, 0);
  if (rc != 0)
    return NULL;
  Perftools__Profiles__Profile *p = pp_ref_parse(buf, len, 64 << 20, why, sizeof why);
  if (!p)
    fprintf(stderr, "pp_pprof_parse: %s\n", why);
  PP_CHECK(p != NULL);
  free(buf);
  return p;
}

static void test_sampler_profiles_two_threads(void) {
  char err[200] = "";
  pthread_t a, b;
  /* A program's own SIGPROF handler, installed first, keeps its signals. */
  struct sigaction sa = {0};
  sa.sa_handler = foreign_handler;
  sigemptyset(&sa.sa_mask);
  PP_CHECK_INT(sigaction(SIGPROF, &sa, NULL), ==, 0);

  PP_CHECK_INT(pthread_create(&a, NULL, alpha_thread, NULL), ==, 0); /* before start: scanned */
  sampler_config cfg = {.hz = HZ, .signo = SIGPROF};
  int rc = sampler_start(&cfg, err, sizeof err);
  PP_CHECK_INT(rc, ==, 0);
  if (rc != 0) {
    fprintf(stderr, "sampler_start: %s\n", err);
    return;
  }
  PP_CHECK_INT(sampler_start(&cfg, err, sizeof err), ==, PUSHPROF_EALREADY);
  PP_CHECK(sampler_running());
  raise(SIGPROF); /* not from our timers: forwarded */
  PP_CHECK_INT(atomic_load(&foreign_signals), ==, 1);

  PP_CHECK_INT(pthread_create(&b, NULL, beta_thread, NULL), ==, 0);
  atomic_store(&go, 1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);

  int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
  Perftools__Profiles__Profile *p = cut(&t0, &t1);
  sampler_stop();
  sampler_stop(); /* idempotent */
  PP_CHECK(!sampler_running());
  Perftools__Profiles__Profile *q = cut(&t2, &t3); /* the remainder after stop */
  if (!p || !q)
    goto done;

  int64_t alpha_caller, beta_caller;
  int64_t na = count_with(p, "burn_alpha", "alpha_thread", &alpha_caller);
  int64_t nb = count_with(p, "burn_beta", "beta_thread", &beta_caller);
  double expect_a = cpu_alpha * HZ, expect_b = cpu_beta * HZ;
  fprintf(stderr,
          "  alpha %lld samples (expected ~%.0f, %lld with caller), beta %lld (~%.0f, %lld)\n",
          (long long)na, expect_a, (long long)alpha_caller, (long long)nb, expect_b,
          (long long)beta_caller);
  for (size_t i = 0; i < p->n_comment; i++)
    fprintf(stderr, "  comment: %s\n", str(p, p->comment[i]));
  PP_CHECK_INT(na, >=, (int64_t)(expect_a * 0.75));
  PP_CHECK_INT(na, <=, (int64_t)(expect_a * 1.25) + 2);
  PP_CHECK_INT(nb, >=, (int64_t)(expect_b * 0.75));
  PP_CHECK_INT(nb, <=, (int64_t)(expect_b * 1.25) + 2);
  /* Unwound beyond the leaf: the self-registered thread from its first
   * sample, the scanned one once the collector has found its stack. */
  PP_CHECK_INT(beta_caller, >=, nb * 9 / 10);
  PP_CHECK_INT(alpha_caller, >=, na / 2);
  PP_CHECK_INT(total_samples(p), <=, (int64_t)((cpu_alpha + cpu_beta) * HZ * 1.25) + 10);
  PP_CHECK(has_comment(p, "requested 100 Hz"));
  PP_CHECK(has_comment(p, "samples per CPU second"));
  PP_CHECK_INT(p->period, ==, 1000000000 / HZ);
  PP_CHECK_INT(p->time_nanos, ==, t0);
  PP_CHECK_INT(p->duration_nanos, ==, t1 - t0);
  /* Consecutive windows; nothing counted twice. */
  PP_CHECK_INT(t2, ==, t1);
  PP_CHECK_INT(t3, >=, t2);
  int64_t dummy;
  PP_CHECK_INT(count_with(q, "burn_alpha", "", &dummy) + count_with(q, "burn_beta", "", &dummy), <=,
               2);
  /* Our timer signals never reached the program's handler. */
  PP_CHECK_INT(atomic_load(&foreign_signals), ==, 1);
done:
  if (p)
    perftools__profiles__profile__free_unpacked(p, NULL);
  if (q)
    perftools__profiles__profile__free_unpacked(q, NULL);
}

/* Also on another signal, as PUSHPROF_SIGNAL allows. */
static void test_sampler_restarts_after_stop(void) {
  char err[200] = "";
  sampler_config cfg = {.hz = 250, .signo = SIGRTMIN + 2};
  int rc = sampler_start(&cfg, err, sizeof err);
  PP_CHECK_INT(rc, ==, 0);
  if (rc != 0)
    return;
  double cpu = burn_alpha(0.3);
  sampler_stop();
  int64_t t0, t1, dummy;
  Perftools__Profiles__Profile *p = cut(&t0, &t1);
  if (!p)
    return;
  int64_t n = count_with(p, "burn_alpha", "", &dummy);
  fprintf(stderr, "  %lld samples for %.3f CPU s at 250 Hz\n", (long long)n, cpu);
  PP_CHECK_INT(n, >=, (int64_t)(cpu * 250 * 0.6));
  PP_CHECK(has_comment(p, "requested 250 Hz"));
  char sig[64];
  snprintf(sig, sizeof sig, "timers on signal %d", SIGRTMIN + 2);
  PP_CHECK(has_comment(p, sig));
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_sampler_forked_child_survives(void) {
  char err[200] = "";
  sampler_config cfg = {.hz = 1000, .signo = SIGPROF};
  PP_CHECK_INT(sampler_start(&cfg, err, sizeof err), ==, 0);
  burn_alpha(0.05);
  pid_t pid = fork();
  if (pid == 0) {
    /* No timers and no collector here; burning CPU and cutting must be
     * safe, and sampling can start afresh (as the SDK's fork handler does). */
    burn_beta(0.1);
    uint8_t *buf = NULL;
    size_t len;
    int64_t a, b;
    if (sampler_cut(&buf, &len, &a, &b) != PUSHPROF_ENOTSTARTED || sampler_running())
      _exit(3);
    if (sampler_start(&cfg, err, sizeof err) != 0)
      _exit(4);
    double cpu = burn_beta(0.2);
    sampler_stop();
    if (sampler_cut(&buf, &len, &a, &b) != 0)
      _exit(5);
    char why[200];
    Perftools__Profiles__Profile *p = pp_ref_parse(buf, len, 64 << 20, why, sizeof why);
    free(buf);
    if (!p)
      _exit(6);
    int64_t with_caller, n = count_with(p, "burn_beta", "", &with_caller);
    int64_t alpha = count_with(p, "burn_alpha", "", &with_caller); /* the parent's */
    perftools__profiles__profile__free_unpacked(p, NULL);
    _exit(n >= (int64_t)(cpu * 250 * 0.5) && alpha == 0 ? 0 : 7);
  }
  PP_CHECK_INT(pid, >, 0);
  int status = -1;
  PP_CHECK_INT(waitpid(pid, &status, 0), ==, pid);
  PP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  PP_CHECK(sampler_running()); /* the parent keeps sampling */
  sampler_stop();
}

static void *short_registered(void *arg) {
  (void)arg;
  sampler_thread_register();
  spin_cpu(0.002);
  return NULL;
}

static void *short_unregistered(void *arg) {
  (void)arg;
  spin_cpu(0.002);
  return NULL;
}

static int live_slots(void) {
  threads_stats st;
  threads_get_stats(&st);
  return st.live;
}

static void test_sampler_frees_slots_of_exited_threads(void) {
  char err[200] = "";
  sampler_config cfg = {.hz = 100, .signo = SIGPROF};
  PP_CHECK_INT(sampler_start(&cfg, err, sizeof err), ==, 0);
  int base = live_slots();
  PP_CHECK_INT(base, >=, 1); /* at least the caller */
  for (int round = 0; round < 50; round++) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
      PP_CHECK_INT(pthread_create(&t[i], NULL, short_registered, NULL), ==, 0);
    for (int i = 0; i < 4; i++)
      pthread_join(t[i], NULL);
  }
  /* Self-registered threads free their slot (and timer) as they exit; a
   * rescan racing with an exit may briefly re-add one, never 200. */
  PP_CHECK_INT(live_slots(), <=, base + 2);
  /* Threads the sampler only finds by scanning are dropped by a later scan. */
  pthread_t u;
  PP_CHECK_INT(pthread_create(&u, NULL, short_unregistered, NULL), ==, 0);
  pthread_join(u, NULL);
  usleep(1500 * 1000); /* > one rescan period */
  int after = live_slots();
  for (int i = 0; i < 20 && after != base; i++) {
    usleep(100 * 1000);
    after = live_slots();
  }
  PP_CHECK_INT(after, ==, base);
  sampler_stop();
  uint8_t *buf;
  size_t len;
  int64_t a, b;
  if (sampler_cut(&buf, &len, &a, &b) == 0)
    free(buf);
}

/* Last: the fallback leaves SIGPROF in setitimer mode for the process. */
static void test_sampler_falls_back_to_setitimer(void) {
  char err[200] = "";
  sampler_force_itimer_for_tests(1);
  sampler_config cfg = {.hz = 100, .signo = SIGPROF};
  int rc = sampler_start(&cfg, err, sizeof err);
  sampler_force_itimer_for_tests(0);
  PP_CHECK_INT(rc, ==, 0);
  if (rc != 0)
    return;
  double cpu = burn_alpha(0.5);
  sampler_stop();
  int64_t t0, t1, with_caller;
  Perftools__Profiles__Profile *p = cut(&t0, &t1);
  if (!p)
    return;
  int64_t n = count_with(p, "burn_alpha", "main", &with_caller);
  fprintf(stderr, "  %lld samples (%lld with caller) for %.3f CPU s\n", (long long)n,
          (long long)with_caller, cpu);
  /* Merged expiries are weighted from the process CPU clock: 46-50 of 50
   * with both cores busy besides (31-37 unweighted), so a loss shows. */
  PP_CHECK_INT(n, >=, (int64_t)(cpu * 100 * 0.8));
  PP_CHECK_INT(with_caller, >=, n * 9 / 10);
  PP_CHECK(has_comment(p, "setitimer(ITIMER_PROF)"));
  perftools__profiles__profile__free_unpacked(p, NULL);
}

int main(void) {
  PP_RUN(test_sampler_profiles_two_threads);
  PP_RUN(test_sampler_restarts_after_stop);
  PP_RUN(test_sampler_forked_child_survives);
  PP_RUN(test_sampler_frees_slots_of_exited_threads);
  PP_RUN(test_sampler_falls_back_to_setitimer);
  PP_DONE();
}
