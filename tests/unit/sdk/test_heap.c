/* The heap profiler (sdk/heap/heap.c) driven directly, as the interposers
 * drive it through the hooks of heap_hooks.h (this test's own, handed over
 * with heap_use_hooks): each allocation here is followed by
 * heap_fast_after_alloc and each free preceded by heap_fast_before_free.
 * The profiles are read back with protobuf-c (an independent parser). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap.h"
#include "profile_test_util.h"
#include "pushprof.h"
#include "sampler.h"

static int always_ours(void) {
  return 1;
}

static _Atomic int g_real_frees;
static void counting_free(void *p) {
  atomic_fetch_add(&g_real_frees, 1);
  free(p);
}

static __thread heap_tls heap_self;
static heap_tls *test_self(void) {
  return &heap_self;
}
static int never_ours(void) {
  return 0;
}
static heap_hooks TH = {.self = test_self, .is_ours = always_ours, .real_free = counting_free};

static void heap_after_alloc(void *p, size_t n) {
  heap_fast_after_alloc(&TH, &heap_self, p, n);
}

static int heap_before_free(void *p) {
  return heap_fast_before_free(&TH, p);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  heap_after_alloc(p, n);
  return p;
}

static void xfree(void *p) {
  if (!heap_before_free(p))
    free(p);
}

/* Two allocation sites the profile must tell apart. */
void *heap_site_a(size_t n);
void *heap_site_b(size_t n);

__attribute__((noinline)) void *heap_site_a(size_t n) {
  void *p = xmalloc(n);
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame is in the stack */
  return p;
}

__attribute__((noinline)) void *heap_site_b(size_t n) {
  void *p = xmalloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

static Profile *cut(void) {
  pt_cut c = {0};
  return pt_parse_cut(heap_cut(&c.raw, &c.len, &c.t0, &c.t1), &c);
}

enum { ALLOC_OBJ, ALLOC_SPACE, INUSE_OBJ, INUSE_SPACE };

static void start(int64_t rate) {
  char err[256] = "";
  int rc = heap_start(rate, err, sizeof err);
  PP_CHECK_INT(rc, ==, 0);
  if (rc)
    fprintf(stderr, "heap_start: %s\n", err);
  heap_self.rng = 0; /* a fresh interval at this rate, as a new thread gets */
  heap_self.left = 0;
}

static void test_layout_and_exact_counts_at_rate_one(void) {
  start(1); /* every allocation of 40 bytes or more is sampled, weight 1 */
  void *b[500];
  for (int i = 0; i < 1000; i++)
    xfree(heap_site_a(64));
  for (int i = 0; i < 500; i++)
    b[i] = heap_site_b(128);
  Profile *p = cut();
  if (!p)
    return;
  PP_CHECK_INT(p->n_sample_type, ==, 4);
  const char *want[4][2] = {{"alloc_objects", "count"},
                            {"alloc_space", "bytes"},
                            {"inuse_objects", "count"},
                            {"inuse_space", "bytes"}};
  for (size_t i = 0; i < 4 && i < p->n_sample_type; i++) {
    PP_CHECK_STR(pt_str(p, p->sample_type[i]->type), want[i][0]);
    PP_CHECK_STR(pt_str(p, p->sample_type[i]->unit), want[i][1]);
  }
  PP_CHECK_STR(pt_str(p, p->period_type->type), "space");
  PP_CHECK_STR(pt_str(p, p->period_type->unit), "bytes");
  PP_CHECK_INT(p->period, ==, 1);
  PP_CHECK_STR(pt_str(p, p->default_sample_type), "inuse_space");
  PP_CHECK_INT(pt_sum(p, ALLOC_OBJ, "heap_site_a"), ==, 1000);
  PP_CHECK_INT(pt_sum(p, ALLOC_SPACE, "heap_site_a"), ==, 64000);
  PP_CHECK_INT(pt_sum(p, INUSE_SPACE, "heap_site_a"), ==, 0);
  PP_CHECK_INT(pt_sum(p, ALLOC_OBJ, "heap_site_b"), ==, 500);
  PP_CHECK_INT(pt_sum(p, INUSE_OBJ, "heap_site_b"), ==, 500);
  PP_CHECK_INT(pt_sum(p, INUSE_SPACE, "heap_site_b"), ==, 64000);
  perftools__profiles__profile__free_unpacked(p, NULL);

  /* The live heap is a gauge: a cut with no new allocation still shows it;
   * the allocations were this window's only. */
  p = cut();
  if (p) {
    PP_CHECK_INT(pt_sum(p, ALLOC_OBJ, NULL), ==, 0);
    PP_CHECK_INT(pt_sum(p, INUSE_SPACE, "heap_site_b"), ==, 64000);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  PP_CHECK_INT(heap_window_empty(), ==, 0);
  for (int i = 0; i < 500; i++)
    xfree(b[i]);
  p = cut();
  if (p) {
    PP_CHECK_INT(pt_sum(p, INUSE_OBJ, NULL), ==, 0);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  PP_CHECK_INT(heap_window_empty(), ==, 1);
  heap_stop();
}

static void test_one_sample_is_weighted_by_its_probability(void) {
  start(1024);
  heap_self.rng = 12345;
  heap_self.left = 1; /* the next allocation crosses the interval */
  void *p1 = heap_site_a(2048);
  Profile *p = cut();
  if (p) {
    /* p = 1 - exp(-2048/1024) = 0.864665: 1/p objects, 2048/p bytes. */
    PP_CHECK_INT(pt_sum(p, ALLOC_OBJ, "heap_site_a"), ==, 1);
    PP_CHECK_INT(pt_sum(p, ALLOC_SPACE, "heap_site_a"), >=, 2368);
    PP_CHECK_INT(pt_sum(p, ALLOC_SPACE, "heap_site_a"), <=, 2369);
    PP_CHECK_INT(pt_sum(p, INUSE_SPACE, "heap_site_a"), ==, pt_sum(p, ALLOC_SPACE, "heap_site_a"));
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  xfree(p1);
  heap_stop();
}

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static void test_estimates_are_unbiased(void) {
  start(4096);
  uint64_t seed = 42, truth_a = 0, truth_b = 0, n_a = 0;
  /* The sizes are seeded, the sampler's draws are not (heap.c seeds each
   * thread from the clock): a block of s bytes is kept with probability
   * q = 1 - exp(-s/R) and weighted 1/q, so its estimate's variance is
   * (1-q)/q <= R/s objects, s^2 (1-q)/q <= R s bytes. */
  double var_oa = 0;
  for (int i = 0; i < 300000; i++) {
    size_t n = 16 + lcg(&seed) % 1009;
    if (i % 4 == 0) {
      xfree(heap_site_b(n));
      truth_b += n;
    } else {
      xfree(heap_site_a(n));
      truth_a += n;
      n_a++;
      var_oa += 4096.0 / (double)n;
    }
  }
  Profile *p = cut();
  if (p) {
    double ea = (double)pt_sum(p, ALLOC_SPACE, "heap_site_a"),
           eb = (double)pt_sum(p, ALLOC_SPACE, "heap_site_b");
    double oa = (double)pt_sum(p, ALLOC_OBJ, "heap_site_a");
    fprintf(stderr, "  bytes a %.0f of %llu, b %.0f of %llu; objects a %.0f of %llu\n", ea,
            (unsigned long long)truth_a, eb, (unsigned long long)truth_b, oa,
            (unsigned long long)n_a);
    /* About 40,000 samples: within 5% or 4.5 sigma, whichever is wider
     * (tests/integration/pprof_check.py stat_bound's rule); 4.5 sigma is
     * near 2.7% on a's bytes, 4.6% on b's, 3.8% on a's objects. */
    double sa = sqrt(4096.0 * (double)truth_a), sb = sqrt(4096.0 * (double)truth_b),
           so = sqrt(var_oa);
    double ba = fmax(0.05 * (double)truth_a, 4.5 * sa), bb = fmax(0.05 * (double)truth_b, 4.5 * sb),
           bo = fmax(0.05 * (double)n_a, 4.5 * so);
    fprintf(stderr, "  sigma: bytes a %.0f, b %.0f, objects a %.0f; allowed +-%.0f, %.0f, %.0f\n",
            sa, sb, so, ba, bb, bo);
    PP_CHECK(ea >= (double)truth_a - ba && ea <= (double)truth_a + ba);
    PP_CHECK(eb >= (double)truth_b - bb && eb <= (double)truth_b + bb);
    PP_CHECK(oa >= (double)n_a - bo && oa <= (double)n_a + bo);
    PP_CHECK_INT(pt_sum(p, INUSE_SPACE, NULL), ==, 0);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  heap_stop();
}

static void *blocks[2000];
static void *alloc_thread(void *arg) {
  (void)arg;
  sampler_thread_register(); /* as the pthread_create interposer does */
  for (int i = 0; i < 2000; i++)
    blocks[i] = heap_site_a(100);
  return NULL;
}
static void *free_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++)
    xfree(blocks[i]);
  return NULL;
}

static void test_frees_from_other_threads_and_exited_threads(void) {
  start(1);
  pthread_t t;
  pthread_create(&t, NULL, alloc_thread, NULL);
  pthread_join(t, NULL); /* the allocating thread is gone; its blocks live */
  Profile *p = cut();
  if (p) {
    PP_CHECK_INT(pt_sum(p, INUSE_OBJ, "heap_site_a"), ==, 2000);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  pthread_create(&t, NULL, free_thread, NULL);
  pthread_join(t, NULL);
  p = cut();
  if (p) {
    PP_CHECK_INT(pt_sum(p, INUSE_OBJ, NULL), ==, 0);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  heap_stats st;
  heap_get_stats(&st);
  PP_CHECK_INT(st.live, ==, 0);
  heap_stop();
}

static void test_realloc_is_a_free_and_an_allocation(void) {
  start(1);
  void *a = heap_site_a(100);
  PP_CHECK_INT(heap_realloc_take(a), ==, 1);
  void *b = realloc(a, 5000);
  heap_after_alloc(b, 5000);
  /* A failed realloc leaves the block live: its entry goes back. */
  void *c = heap_site_b(300);
  PP_CHECK_INT(heap_realloc_take(c), ==, 1);
  heap_realloc_failed(c);
  Profile *p = cut();
  if (p) {
    PP_CHECK_INT(pt_sum(p, ALLOC_SPACE, "heap_site_a"), ==, 100);
    PP_CHECK_INT(pt_sum(p, INUSE_SPACE, "heap_site_a"), ==, 0);
    PP_CHECK_INT(pt_sum(p, INUSE_SPACE, "heap_site_b"), ==, 300);
    PP_CHECK_INT(pt_sum(p, INUSE_SPACE, NULL), ==, 5300);
    PP_CHECK_INT(pt_sum(p, ALLOC_SPACE, NULL), ==, 5400);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  xfree(b);
  xfree(c);
  heap_stop();
}

static void test_frees_while_busy_are_parked_then_done(void) {
  start(1);
  void *a = heap_site_a(64), *b = heap_site_b(64);
  heap_stats before, after;
  heap_get_stats(&before);
  int frees0 = atomic_load(&g_real_frees);
  heap_self.busy = 1; /* as if a signal handler of the host ran inside the profiler */
  void *c = xmalloc(64);
  PP_CHECK_INT(heap_before_free(a), ==, 1); /* parked: not freed yet */
  heap_self.busy = 0;
  heap_get_stats(&after);
  PP_CHECK_INT(after.skipped_busy, ==, before.skipped_busy + 1);
  PP_CHECK_INT(after.parked, ==, before.parked + 1);
  PP_CHECK_INT(after.live, ==, 2);
  PP_CHECK_INT(atomic_load(&g_real_frees), ==, frees0);
  xfree(b); /* leaving the profiler does the parked free first */
  heap_get_stats(&after);
  PP_CHECK_INT(after.live, ==, 0);
  PP_CHECK_INT(atomic_load(&g_real_frees), ==, frees0 + 1);
  free(c);
  heap_stop();
}

static void test_unsampled_and_older_blocks_free_cheaply(void) {
  void *old = malloc(64); /* before profiling started */
  start(1 << 30);
  heap_stats before, after;
  heap_get_stats(&before);
  for (int i = 0; i < 10000; i++)
    xfree(xmalloc(64));
  PP_CHECK_INT(heap_before_free(old), ==, 0);
  free(old);
  PP_CHECK_INT(heap_before_free(NULL), ==, 0);
  heap_get_stats(&after);
  PP_CHECK_INT(after.live, ==, 0);
  PP_CHECK_INT(after.frees_sampled, ==, before.frees_sampled);
  heap_stop();
}

static void test_fork_child_keeps_the_live_heap(void) {
  start(1);
  void *keep[100];
  for (int i = 0; i < 100; i++)
    keep[i] = heap_site_b(1000);
  for (int i = 0; i < 50; i++)
    xfree(heap_site_a(10));
  pid_t pid = fork();
  if (pid == 0) {
    /* The child's first window: no allocation yet, the inherited live heap;
     * a free of an inherited block is seen. */
    xfree(keep[0]);
    Profile *p = cut();
    int ok = p && pt_sum(p, ALLOC_OBJ, NULL) == 0 && pt_sum(p, INUSE_OBJ, "heap_site_b") == 99 &&
             pt_sum(p, INUSE_SPACE, "heap_site_b") == 99000;
    if (!ok && p)
      fprintf(stderr, "  child: alloc %lld, in use %lld objects %lld bytes\n",
              (long long)pt_sum(p, ALLOC_OBJ, NULL), (long long)pt_sum(p, INUSE_OBJ, "heap_site_b"),
              (long long)pt_sum(p, INUSE_SPACE, "heap_site_b"));
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  PP_CHECK_INT(waitpid(pid, &status, 0), ==, pid);
  PP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  Profile *p = cut();
  if (p) {
    PP_CHECK_INT(pt_sum(p, INUSE_OBJ, "heap_site_b"), ==, 100);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  for (int i = 0; i < 100; i++)
    xfree(keep[i]);
  heap_stop();
}

static void test_bad_rates_and_foreign_malloc_are_refused(void) {
  char err[256];
  PP_CHECK_INT(heap_start(0, err, sizeof err), ==, -1);
  PP_CHECK_INT(heap_start(HEAP_RATE_MAX + 1, err, sizeof err), ==, -1);
  heap_use_hooks(NULL); /* this program has no libpushprof_heap.so */
  PP_CHECK_INT(heap_start(1024, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "LD_PRELOAD") != NULL);
  PP_CHECK(strstr(err, "libpushprof_heap.so") != NULL);
  PP_CHECK_INT(heap_running(), ==, 0);
  TH.is_ours = never_ours; /* loaded, but a sanitizer's malloc comes first */
  heap_use_hooks(&TH);
  PP_CHECK_INT(heap_start(1024, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "comes first") != NULL);
  PP_CHECK_INT(heap_running(), ==, 0);
  TH.is_ours = always_ours;
}

int main(void) {
  heap_use_hooks(&TH);
  char err[256];
  sampler_config sc = {.hz = 100, .signo = SIGPROF, .no_cpu = 1};
  if (sampler_start(&sc, err, sizeof err) != 0) { /* the collector walks stack copies */
    fprintf(stderr, "sampler_start: %s\n", err);
    return 1;
  }
  PP_RUN(test_layout_and_exact_counts_at_rate_one);
  PP_RUN(test_one_sample_is_weighted_by_its_probability);
  PP_RUN(test_estimates_are_unbiased);
  PP_RUN(test_frees_from_other_threads_and_exited_threads);
  PP_RUN(test_realloc_is_a_free_and_an_allocation);
  PP_RUN(test_frees_while_busy_are_parked_then_done);
  PP_RUN(test_unsampled_and_older_blocks_free_cheaply);
  PP_RUN(test_fork_child_keeps_the_live_heap);
  PP_RUN(test_bad_rates_and_foreign_malloc_are_refused);
  sampler_stop();
  PP_DONE();
}
