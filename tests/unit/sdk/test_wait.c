/* The off-CPU and lock profiles (sdk/wait/wait.c) driven directly, as the
 * interposers drive them through the hooks of wait_hooks.h (this test's
 * own, handed over with wait_use_hooks); the sampling decision
 * (wait_weigh) checked for bias; waits recorded before any unwind table
 * exists walked from copies of their stacks. The profiles are read back
 * with protobuf-c (an independent parser). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "profile_test_util.h"
#include "pushprof.h"
#include "sampler.h"
#include "threads_linux.h"
#include "unwind_tables.h"
#include "wait.h"

static int always_ours(void) {
  return 1;
}
static int never_ours(void) {
  return 0;
}
static wait_hooks TH = {.is_ours = always_ours};

/* Two waiting sites the profile must tell apart. */
void wait_site_a(int kind, int64_t c, int64_t d);
void wait_site_b(int kind, int64_t c, int64_t d);
__attribute__((noinline)) void wait_site_a(int kind, int64_t c, int64_t d) {
  wait_record(kind, c, d);
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame is in the stack */
}
__attribute__((noinline)) void wait_site_b(int kind, int64_t c, int64_t d) {
  wait_record(kind, c, d);
  __asm__ volatile("" ::: "memory");
}

/* wait_nofp_sites.c, built without frame pointers. */
void wait_nofp_outer(int kind, int64_t c, int64_t d);

static Profile *cut(int kind) {
  pt_cut c = {0};
  return pt_parse_cut(wait_cut(kind, &c.raw, &c.len, &c.t0, &c.t1), &c);
}

static void start(unsigned mask) {
  char err[256] = "";
  int rc = wait_start(mask, 1000000, 1000000, err, sizeof err);
  PP_CHECK_INT(rc, ==, 0);
  if (rc)
    fprintf(stderr, "wait_start: %s\n", err);
}

/* Waits that end before the unwind tables exist (no collector has run in
 * this process yet) are kept with a copy of their stack, walked later by
 * the cut of their kind or by the collector after a drain
 * (wait_resolve_pending, called here as the collector calls it): each
 * wait, its values and its labels reach its window, with the callers a
 * frame-pointer walk would have lost. */
static void test_waits_before_the_tables_are_walked_from_stack_copies(void) {
  PP_CHECK(!utab_ready());
  start(1u << WAIT_OFFCPU | 1u << WAIT_LOCK);
  wait_stats before, after;
  wait_get_stats(&before);
  PP_CHECK_INT(pushprof_label_set("route", "/early"), ==, 0);
  for (int i = 0; i < 3; i++)
    wait_nofp_outer(WAIT_OFFCPU, WAIT_ONE, 2000000);
  pushprof_labels_clear();
  wait_nofp_outer(WAIT_LOCK, 4 * WAIT_ONE, 1000000);
  wait_get_stats(&after);
  PP_CHECK_INT(after.deferred - before.deferred, ==, 4);
  PP_CHECK_INT(after.cut_short, ==, before.cut_short);
  /* Pending until a resolver walks them: no collector runs yet. */
  PP_CHECK_INT(after.recorded[WAIT_OFFCPU], ==, before.recorded[WAIT_OFFCPU]);
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 0);
  PP_CHECK_INT(wait_window_empty(WAIT_LOCK), ==, 0);
  Profile *p = cut(WAIT_OFFCPU); /* walks the off-CPU waits, not the lock's */
  if (p) {
    PP_CHECK_INT(pt_sum(p, 0, "wait_nofp_outer"), ==, 3);
    PP_CHECK_INT(pt_sum(p, 1, "wait_nofp_outer"), ==, 6000000);
    PP_CHECK_INT(pt_sum(p, 1, "wait_nofp_mid"), ==, 6000000);
    PP_CHECK_INT(pt_sum(p, 1, NULL), ==, 6000000);
    for (size_t i = 0; i < p->n_sample; i++)
      PP_CHECK_STR(pt_label(p, p->sample[i], "route"), "/early");
    int said = 0;
    for (size_t i = 0; i < p->n_comment; i++)
      if (strstr(pt_str(p, p->comment[i]), "walked from a stack copy"))
        said = 1;
    PP_CHECK_INT(said, ==, 1);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 1);
  wait_get_stats(&after);
  PP_CHECK_INT(after.recorded[WAIT_OFFCPU] - before.recorded[WAIT_OFFCPU], ==, 3);
  PP_CHECK_INT(after.recorded[WAIT_LOCK], ==, before.recorded[WAIT_LOCK]);
  wait_resolve_pending();
  wait_get_stats(&after);
  PP_CHECK_INT(after.recorded[WAIT_LOCK] - before.recorded[WAIT_LOCK], ==, 1);
  PP_CHECK_INT(wait_window_empty(WAIT_LOCK), ==, 0);
  p = cut(WAIT_LOCK);
  if (p) {
    PP_CHECK_INT(pt_sum(p, 0, "wait_nofp_outer"), ==, 4);
    PP_CHECK_INT(pt_sum(p, 1, "wait_nofp_outer"), ==, 1000000);
    PP_CHECK_INT(pt_sum(p, 1, NULL), ==, 1000000);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  wait_stop();
}

/* A pending wait (no table yet) goes with the stop: nothing of it reaches
 * the next start. */
static void test_pending_waits_go_with_the_stop(void) {
  PP_CHECK(!utab_ready());
  wait_stats before, after;
  wait_get_stats(&before);
  start(1u << WAIT_OFFCPU);
  wait_nofp_outer(WAIT_OFFCPU, WAIT_ONE, 2000000);
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 0);
  wait_stop();
  start(1u << WAIT_OFFCPU);
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 1);
  wait_stop();
  wait_get_stats(&after);
  PP_CHECK_INT(after.deferred - before.deferred, ==, 1);
  PP_CHECK_INT(after.recorded[WAIT_OFFCPU], ==, before.recorded[WAIT_OFFCPU]);
}

static void test_layout_values_and_sites(void) {
  start(1u << WAIT_OFFCPU | 1u << WAIT_LOCK);
  for (int i = 0; i < 10; i++)
    wait_site_a(WAIT_OFFCPU, WAIT_ONE, 3000000); /* 10 waits of 3 ms */
  for (int i = 0; i < 4; i++)
    wait_site_b(WAIT_OFFCPU, 5 * WAIT_ONE, 1000000); /* 4 kept short ones, 5 waits each */
  wait_site_b(WAIT_LOCK, 2 * WAIT_ONE, 7000000);
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 0);
  Profile *p = cut(WAIT_OFFCPU);
  if (p) {
    PP_CHECK_INT(p->n_sample_type, ==, 2);
    PP_CHECK_STR(pt_str(p, p->sample_type[0]->type), "contentions");
    PP_CHECK_STR(pt_str(p, p->sample_type[0]->unit), "count");
    PP_CHECK_STR(pt_str(p, p->sample_type[1]->type), "delay");
    PP_CHECK_STR(pt_str(p, p->sample_type[1]->unit), "nanoseconds");
    PP_CHECK_STR(pt_str(p, p->period_type->type), "contentions");
    PP_CHECK_STR(pt_str(p, p->default_sample_type), "delay");
    PP_CHECK_INT(pt_sum(p, 0, "wait_site_a"), ==, 10);
    PP_CHECK_INT(pt_sum(p, 1, "wait_site_a"), ==, 30000000);
    PP_CHECK_INT(pt_sum(p, 0, "wait_site_b"), ==, 20);
    PP_CHECK_INT(pt_sum(p, 1, "wait_site_b"), ==, 4000000);
    PP_CHECK_INT(pt_sum(p, 1, NULL), ==, 34000000); /* the lock wait is the other profile's */
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 1); /* the cut took the window */
  p = cut(WAIT_LOCK);
  if (p) {
    PP_CHECK_INT(pt_sum(p, 0, "wait_site_b"), ==, 2);
    PP_CHECK_INT(pt_sum(p, 1, NULL), ==, 7000000);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  p = cut(WAIT_OFFCPU); /* an empty window cuts to an empty profile */
  if (p) {
    PP_CHECK_INT(p->n_sample, ==, 0);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  wait_stop();
}

static void test_waits_carry_the_threads_labels(void) {
  start(1u << WAIT_OFFCPU);
  PP_CHECK_INT(pushprof_label_set("route", "/checkout"), ==, 0);
  wait_site_a(WAIT_OFFCPU, WAIT_ONE, 2000000);
  pushprof_labels_clear();
  wait_site_a(WAIT_OFFCPU, WAIT_ONE, 5000000);
  Profile *p = cut(WAIT_OFFCPU);
  if (p) {
    int labelled = 0, bare = 0;
    for (size_t i = 0; i < p->n_sample; i++) {
      const char *r = pt_label(p, p->sample[i], "route");
      if (r && strcmp(r, "/checkout") == 0 && p->sample[i]->value[1] == 2000000)
        labelled++;
      if (!r && p->sample[i]->value[1] == 5000000)
        bare++;
    }
    PP_CHECK_INT(labelled, ==, 1);
    PP_CHECK_INT(bare, ==, 1);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  wait_stop();
}

static void *own_thread(void *arg) {
  (void)arg;
  threads_is_own = 1; /* as the SDK's own threads are marked */
  wait_site_a(WAIT_OFFCPU, WAIT_ONE, 9000000);
  return NULL;
}

static void test_own_threads_and_stopped_kinds_are_not_recorded(void) {
  start(1u << WAIT_OFFCPU);
  pthread_t t;
  PP_CHECK_INT(pthread_create(&t, NULL, own_thread, NULL), ==, 0);
  pthread_join(t, NULL);
  wait_site_a(WAIT_LOCK, WAIT_ONE, 9000000); /* lock is off */
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 1);
  PP_CHECK_INT(wait_window_empty(WAIT_LOCK), ==, 1);
  wait_stop();
  PP_CHECK_INT(wait_running(WAIT_OFFCPU), ==, 0);
  wait_site_a(WAIT_OFFCPU, WAIT_ONE, 9000000); /* after the stop */
  PP_CHECK_INT(wait_window_empty(WAIT_OFFCPU), ==, 1);
}

/* The decision: waits of at least the rate all kept at their own length;
 * shorter ones kept with probability d/rate, and the totals of both values
 * unbiased over many draws. */
static void test_weighing_is_unbiased(void) {
  int64_t c, d;
  PP_CHECK_INT(wait_weigh(5000000, 1000000, 0.999, &c, &d), ==, 1);
  PP_CHECK_INT(c, ==, WAIT_ONE);
  PP_CHECK_INT(d, ==, 5000000);
  PP_CHECK_INT(wait_weigh(0, 1000000, 0.0, &c, &d), ==, 0);
  /* Seeded: u is drawn here, not by the SDK, so the bounds cannot flake. */
  uint64_t s = 88172645463325252ull;
  double true_d = 0, true_n = 0, est_d = 0, est_c = 0;
  for (int i = 0; i < 2000000; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    int64_t wait = 1000 + (int64_t)(s % 400000); /* 1..401 us, far below the rate */
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    double u = (double)(s >> 11) * (1.0 / 9007199254740992.0);
    true_d += (double)wait;
    true_n += 1;
    if (wait_weigh(wait, 1000000, u, &c, &d)) {
      est_d += (double)d;
      est_c += (double)c / WAIT_ONE;
    }
  }
  fprintf(stderr, "  delay %.4g of %.4g, waits %.4g of %.4g\n", est_d, true_d, est_c, true_n);
  PP_CHECK(est_d > 0.98 * true_d && est_d < 1.02 * true_d);
  PP_CHECK(est_c > 0.97 * true_n && est_c < 1.03 * true_n);
}

static void test_missing_interposers_and_bad_rates_are_refused(void) {
  char err[256];
  PP_CHECK_INT(wait_start(1u << WAIT_OFFCPU, 0, 1000000, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "out of range") != NULL);
  wait_use_hooks(NULL); /* this program has no libpushprof_wait.so */
  PP_CHECK_INT(wait_start(1u << WAIT_OFFCPU, 1000000, 1000000, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "libpushprof_wait.so") != NULL);
  PP_CHECK(strstr(err, "LD_PRELOAD") != NULL);
  TH.is_ours = never_ours;
  wait_use_hooks(&TH);
  PP_CHECK_INT(wait_start(1u << WAIT_OFFCPU, 1000000, 1000000, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "comes first") != NULL);
  TH.is_ours = always_ours;
}

int main(void) {
  wait_use_hooks(&TH);
  /* First: they need a process whose tables are not built yet (the
   * collector's thread, which builds them, starts with the sampler). */
  PP_RUN(test_pending_waits_go_with_the_stop);
  PP_RUN(test_waits_before_the_tables_are_walked_from_stack_copies);
  char err[256];
  sampler_config sc = {.hz = 100, .signo = SIGPROF, .no_cpu = 1};
  if (sampler_start(&sc, err, sizeof err) != 0) { /* collector_build needs the collector */
    fprintf(stderr, "sampler_start: %s\n", err);
    return 1;
  }
  PP_RUN(test_layout_values_and_sites);
  PP_RUN(test_waits_carry_the_threads_labels);
  PP_RUN(test_own_threads_and_stopped_kinds_are_not_recorded);
  PP_RUN(test_weighing_is_unbiased);
  PP_RUN(test_missing_interposers_and_bad_rates_are_refused);
  sampler_stop();
  PP_DONE();
}
