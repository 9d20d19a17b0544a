/* The profile types by bit (sdk/profiles.c): each PUSHPROF_PROFILE_* bit
 * cuts and asks after its own profiler's window, told apart by the sample
 * types of the profile it cuts (read back with protobuf-c); and the wait
 * kinds a profile mask turns on. The off-CPU and lock windows are filled
 * through wait_record with this test's own hooks, as in test_wait. */
#include <signal.h>
#include <string.h>

#include "profile_test_util.h"
#include "profiles.h"
#include "sampler.h"
#include "wait.h"

static int always_ours(void) {
  return 1;
}
static wait_hooks TH = {.is_ours = always_ours};

/* Cuts bit through profiles_cut and parses it; NULL on failure. */
static Profile *cut(unsigned bit) {
  pt_cut c = {0};
  return pt_parse_cut(profiles_cut(bit, &c.raw, &c.len, &c.t0, &c.t1), &c);
}

/* Checks that p's first sample type is type and returns the sum of value
 * column v over its samples. */
static int64_t check_type_and_sum(Profile *p, const char *type, size_t v) {
  if (!p)
    return -1;
  PP_CHECK(p->n_sample_type > v);
  if (p->n_sample_type > 0)
    PP_CHECK_STR(pt_str(p, p->sample_type[0]->type), type);
  int64_t s = pt_sum(p, v, NULL);
  perftools__profiles__profile__free_unpacked(p, NULL);
  return s;
}

static void test_profiles_wait_mask_keeps_only_the_wait_bits(void) {
  PP_CHECK_INT(profiles_wait_mask(0), ==, 0);
  PP_CHECK_INT(profiles_wait_mask(PUSHPROF_PROFILE_CPU), ==, 0);
  PP_CHECK_INT(profiles_wait_mask(PUSHPROF_PROFILE_HEAP), ==, 0);
  PP_CHECK_INT(profiles_wait_mask(PUSHPROF_PROFILE_OFFCPU), ==, 1u << WAIT_OFFCPU);
  PP_CHECK_INT(profiles_wait_mask(PUSHPROF_PROFILE_LOCK), ==, 1u << WAIT_LOCK);
  PP_CHECK_INT(profiles_wait_mask(PROFILES_WAIT), ==, 1u << WAIT_OFFCPU | 1u << WAIT_LOCK);
  PP_CHECK_INT(profiles_wait_mask(PROFILES_ALL), ==, 1u << WAIT_OFFCPU | 1u << WAIT_LOCK);
}

/* A wait of each kind with a different delay: each bit's window is empty
 * until its own kind is recorded, and its cut holds that kind's delay
 * only. The CPU and heap bits cut their own layouts. */
static void test_profiles_each_bit_cuts_its_own_window(void) {
  char err[256] = "";
  int rc = wait_start(1u << WAIT_OFFCPU | 1u << WAIT_LOCK, 1000000, 1000000, err, sizeof err);
  PP_CHECK_INT(rc, ==, 0);
  if (rc) {
    fprintf(stderr, "wait_start: %s\n", err);
    return;
  }
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_OFFCPU), ==, 1);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_LOCK), ==, 1);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_HEAP), ==, 1); /* heap never started */

  wait_record(WAIT_OFFCPU, WAIT_ONE, 3000000);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_OFFCPU), ==, 0);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_LOCK), ==, 1);
  wait_record(WAIT_LOCK, WAIT_ONE, 7000000);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_LOCK), ==, 0);

  PP_CHECK_INT(check_type_and_sum(cut(PUSHPROF_PROFILE_OFFCPU), "contentions", 1), ==, 3000000);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_OFFCPU), ==, 1); /* the cut took it */
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_LOCK), ==, 0);   /* not the lock one */
  PP_CHECK_INT(check_type_and_sum(cut(PUSHPROF_PROFILE_LOCK), "contentions", 1), ==, 7000000);
  PP_CHECK_INT(profiles_window_empty(PUSHPROF_PROFILE_LOCK), ==, 1);

  PP_CHECK_INT(check_type_and_sum(cut(PUSHPROF_PROFILE_CPU), "samples", 0), >=, 0);
  PP_CHECK_INT(check_type_and_sum(cut(PUSHPROF_PROFILE_HEAP), "alloc_objects", 0), ==, 0);
  wait_stop();
}

int main(void) {
  wait_use_hooks(&TH);
  char err[256];
  sampler_config sc = {.hz = 100, .signo = SIGPROF, .no_cpu = 1};
  if (sampler_start(&sc, err, sizeof err) != 0) { /* the wait profiler uses the collector */
    fprintf(stderr, "sampler_start: %s\n", err);
    return 1;
  }
  PP_RUN(test_profiles_wait_mask_keeps_only_the_wait_bits);
  PP_RUN(test_profiles_each_bit_cuts_its_own_window);
  sampler_stop();
  PP_DONE();
}
