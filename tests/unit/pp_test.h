/* Minimal assertion macros for pushprof's unit tests: each failure prints both
 * sides and the location, and the test binary exits non-zero at the end.
 *
 * Skips: a case that cannot check what it means here (no root, too little
 * disk, a sanitizer that forbids it) calls PP_SKIP("why") and returns; it
 * is reported as "skip <case>: why" and counted apart, never as passed. The
 * binary exits 77 (ctest: skipped, SKIP_RETURN_CODE in tests/testing.cmake)
 * only when every case it ran skipped and no check failed; when some cases
 * ran, it exits 0 or 1 as usual and its last line counts the skips. A
 * failed check wins over a skip in the same case. Skip a whole case, never
 * half of one: a part that may not run here is a case of its own. */
#ifndef PP_TEST_H
#define PP_TEST_H
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pp_test_failures;
static int pp_test_cases;
static int pp_test_skipped;
static char pp_test_skip_reason[256]; /* set by PP_SKIP in the running case */

#define PP_CHECK(cond)                                                                             \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      pp_test_failures++;                                                                          \
    }                                                                                              \
  } while (0)

#define PP_CHECK_INT(a, op, b)                                                                     \
  do {                                                                                             \
    long long pp_a_ = (long long)(a), pp_b_ = (long long)(b);                                      \
    if (!(pp_a_ op pp_b_)) {                                                                       \
      fprintf(stderr, "%s:%d: check failed: %s %s %s (%lld vs %lld)\n", __FILE__, __LINE__, #a,    \
              #op, #b, pp_a_, pp_b_);                                                              \
      pp_test_failures++;                                                                          \
    }                                                                                              \
  } while (0)

#define PP_CHECK_STR(a, b)                                                                         \
  do {                                                                                             \
    const char *pp_a_ = (a), *pp_b_ = (b);                                                         \
    if (!pp_a_ || !pp_b_ || strcmp(pp_a_, pp_b_) != 0) {                                           \
      fprintf(stderr, "%s:%d: check failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__, __LINE__,    \
              #a, #b, pp_a_ ? pp_a_ : "(null)", pp_b_ ? pp_b_ : "(null)");                         \
      pp_test_failures++;                                                                          \
    }                                                                                              \
  } while (0)

/* PP_SKIP(fmt, ...): the running case (a void function) stops here as
 * skipped, printf-style reason. */
#define PP_SKIP(...)                                                                               \
  do {                                                                                             \
    snprintf(pp_test_skip_reason, sizeof pp_test_skip_reason, __VA_ARGS__);                        \
    return;                                                                                        \
  } while (0)

#define PP_RUN(fn)                                                                                 \
  do {                                                                                             \
    int pp_before_ = pp_test_failures;                                                             \
    pp_test_cases++;                                                                               \
    pp_test_skip_reason[0] = '\0';                                                                 \
    fn();                                                                                          \
    if (pp_test_failures != pp_before_)                                                            \
      fprintf(stderr, "FAIL %s\n", #fn);                                                           \
    else if (pp_test_skip_reason[0]) {                                                             \
      pp_test_skipped++;                                                                           \
      fprintf(stderr, "skip %s: %s\n", #fn, pp_test_skip_reason);                                  \
    } else                                                                                         \
      fprintf(stderr, "ok   %s\n", #fn);                                                           \
  } while (0)

/* Makes a new directory /tmp/pp-NAME-XXXXXX and writes its path to dir
 * (len bytes). A test that cannot have one stops here: exit status 1. */
static inline void pp_test_mkdtemp(char *dir, size_t len, const char *name) {
  snprintf(dir, len, "/tmp/pp-%s-XXXXXX", name);
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
}

/* Exit status: 1 if a check failed, else 77 if every case skipped, else 0. */
#define PP_DONE()                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "%d cases, %d skipped, %d failed checks\n", pp_test_cases, pp_test_skipped,    \
            pp_test_failures);                                                                     \
    return pp_test_failures ? 1 : pp_test_cases > 0 && pp_test_skipped == pp_test_cases ? 77 : 0;  \
  } while (0)

#endif
