/* The split of --max-memory into the fixed part and the dynamic budget, the
 * RSS reading against the kernel's own VmRSS, and the RSS guard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membudget.h"
#include "pp_test.h"

#define MiB(n) ((uint64_t)(n) << 20)

static int64_t status_vmrss(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %lld kB", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

static void test_membudget_split_leaves_the_rest_to_the_budget(void) {
  uint64_t d = 0;
  char err[512] = "";
  PP_CHECK_INT(membudget_split(MiB(48), MiB(14), &d, err, sizeof err), ==, 0);
  PP_CHECK_INT(d, ==, MiB(34));
  PP_CHECK_INT(membudget_split(MiB(22), MiB(14), &d, err, sizeof err), ==, 0);
  PP_CHECK_INT(d, ==, MEMBUDGET_MIN_DYNAMIC);
}

static void test_membudget_split_refuses_too_small_a_limit_with_the_fix(void) {
  uint64_t d = 7;
  char err[512] = "";
  PP_CHECK_INT(membudget_split(MiB(16), MiB(14), &d, err, sizeof err), ==, -1);
  PP_CHECK_INT(d, ==, 7);
  PP_CHECK(strstr(err, "--max-memory 16 MiB is too small") != NULL);
  PP_CHECK(strstr(err, "takes 14 MiB") != NULL);
  PP_CHECK(strstr(err, "to 22 MiB or more") != NULL);
  /* A fixed part above the limit is refused, not wrapped around. */
  PP_CHECK_INT(membudget_split(MiB(16), MiB(30), &d, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "to 38 MiB or more") != NULL);
}

static void test_membudget_rss_matches_vmrss(void) {
  /* Touch 8 MiB so the two reads differ by far less than what they measure. */
  size_t n = MiB(8);
  char *p = malloc(n);
  PP_CHECK(p != NULL);
  if (!p)
    return;
  memset(p, 1, n);
  int64_t ours = membudget_rss(), kernel = status_vmrss();
  PP_CHECK(ours > (int64_t)n);
  PP_CHECK(kernel > 0);
  PP_CHECK(ours - kernel < (int64_t)MiB(1) && kernel - ours < (int64_t)MiB(1));
  free(p);
}

static void test_membudget_guard_trips_over_its_limit_only(void) {
  PP_CHECK(!membudget_over()); /* disarmed */
  PP_CHECK_INT(membudget_guard_limit(), ==, 0);
  membudget_guard(1);
  PP_CHECK(membudget_over());
  PP_CHECK_INT(membudget_guard_limit(), ==, 1);
  membudget_guard(MiB(1) << 20);
  PP_CHECK(!membudget_over());
  membudget_guard(0);
  PP_CHECK(!membudget_over());
}

int main(void) {
  PP_RUN(test_membudget_split_leaves_the_rest_to_the_budget);
  PP_RUN(test_membudget_split_refuses_too_small_a_limit_with_the_fix);
  PP_RUN(test_membudget_rss_matches_vmrss);
  PP_RUN(test_membudget_guard_trips_over_its_limit_only);
  PP_DONE();
}
