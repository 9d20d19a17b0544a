/* sdk/walk_here.c: the calling thread's stack bounds, an object's code
 * range, and the cut of the profiler's own frames from a walked stack. */
#include <pthread.h>
#include <stdint.h>

#include "pp_test.h"
#include "walk_here.h"

__attribute__((noinline)) static int here(void) {
  return 42;
}

static void test_bounds_hold_the_callers_stack(void) {
  uintptr_t lo = 0, hi = 0;
  int local = 1;
  PP_CHECK_INT(walk_here_bounds(&lo, &hi), ==, 0); /* the main thread's */
  PP_CHECK(lo < hi);
  PP_CHECK((uintptr_t)&local >= lo && (uintptr_t)&local < hi);
}

static void *unregistered(void *arg) {
  uintptr_t lo = 0, hi = 0;
  /* No SDK registered this thread and it is not the main thread: unknown. */
  *(int *)arg = walk_here_bounds(&lo, &hi);
  return NULL;
}

static void test_unknown_threads_say_so(void) {
  int rc = 0;
  pthread_t t;
  PP_CHECK_INT(pthread_create(&t, NULL, unregistered, &rc), ==, 0);
  pthread_join(t, NULL);
  PP_CHECK_INT(rc, ==, -1);
}

static void test_code_range_holds_the_function(void) {
  uintptr_t lo = 0, hi = 0;
  PP_CHECK_INT(walk_here_code_range((const void *)(uintptr_t)here, &lo, &hi), ==, 0);
  PP_CHECK((uintptr_t)here >= lo && (uintptr_t)here < hi);
  PP_CHECK_INT(here(), ==, 42);
  int data = 0;
  PP_CHECK_INT(walk_here_code_range(&data, &lo, &hi), ==, -1); /* a stack address */
  PP_CHECK_INT(walk_here_code_range(NULL, &lo, &hi), ==, -1);
}

/* Interposer code is [100, 200): frames above and in it go. */
static void test_strip_cuts_through_the_interposer(void) {
  uintptr_t out[16];
  const uintptr_t a[] = {10, 20, 150, 160, 500, 600};
  PP_CHECK_INT(walk_here_strip(a, 6, 100, 200, out), ==, 2);
  PP_CHECK_INT(out[0], ==, 500);
  PP_CHECK_INT(out[1], ==, 600);
  /* No interposer frame: the stack is whole (a direct call, as in tests). */
  const uintptr_t b[] = {10, 20, 30};
  PP_CHECK_INT(walk_here_strip(b, 3, 100, 200, out), ==, 3);
  PP_CHECK_INT(out[0], ==, 10);
  /* The interposer's frame only past the first eight: not ours, whole. */
  const uintptr_t c[] = {1, 2, 3, 4, 5, 6, 7, 8, 150, 700};
  PP_CHECK_INT(walk_here_strip(c, 10, 100, 200, out), ==, 10);
  /* Everything in the interposer: nothing left. */
  const uintptr_t d[] = {120, 130};
  PP_CHECK_INT(walk_here_strip(d, 2, 100, 200, out), ==, 0);
  /* In place. */
  uintptr_t e[] = {150, 900, 901};
  PP_CHECK_INT(walk_here_strip(e, 3, 100, 200, e), ==, 2);
  PP_CHECK_INT(e[0], ==, 900);
  PP_CHECK_INT(e[1], ==, 901);
}

int main(void) {
  PP_RUN(test_bounds_hold_the_callers_stack);
  PP_RUN(test_unknown_threads_say_so);
  PP_RUN(test_code_range_holds_the_function);
  PP_RUN(test_strip_cuts_through_the_interposer);
  PP_DONE();
}
