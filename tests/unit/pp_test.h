/* Minimal assertion macros for pushprof's unit tests: each failure prints both
 * sides and the location, and the test binary exits non-zero at the end. */
#ifndef PP_TEST_H
#define PP_TEST_H
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pp_test_failures;
static int pp_test_cases;

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

#define PP_RUN(fn)                                                                                 \
  do {                                                                                             \
    int pp_before_ = pp_test_failures;                                                             \
    pp_test_cases++;                                                                               \
    fn();                                                                                          \
    fprintf(stderr, "%s %s\n", pp_test_failures == pp_before_ ? "ok  " : "FAIL", #fn);             \
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

#define PP_DONE()                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "%d cases, %d failed checks\n", pp_test_cases, pp_test_failures);              \
    return pp_test_failures ? 1 : 0;                                                               \
  } while (0)

#endif
