/* The process's unwind tables (sdk/unwind_tables.c) as the collector
 * builds them: the first refresh publishes the executable's and libc's
 * tables only and leaves the other objects pending; the next refresh
 * builds those, and the rows compiled on demand before are freed once
 * whole tables exist. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>

#include "pp_test.h"
#include "unwind_tables.h"

/* A function of this executable, for its table. */
uint64_t ut_leaf(uint64_t n);
__attribute__((noinline)) uint64_t ut_leaf(uint64_t n) {
  uint64_t x = n;
  for (uint64_t i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + i;
  return x;
}

/* The first refresh after a first sample: the executable's and libc's
 * tables only, the other objects known but pending (samples meeting them
 * are deferred); the next full refresh builds them. The rows a deferred
 * walk compiles on demand before the first refresh (one FDE in the
 * executable, one in libc) stay until trimmed. */
static void test_unwind_tables_first_refresh_builds_executable_and_libc_only(void) {
  void *elf_fn = dlsym(RTLD_DEFAULT, "elf_version"); /* in libelf, another object */
  void *libc_fn = dlsym(RTLD_DEFAULT, "getpid");
  PP_CHECK(elf_fn != NULL);
  PP_CHECK(libc_fn != NULL);
  int known = UTAB_UNKNOWN;
  PP_CHECK(utab_row_on_demand((uintptr_t)&ut_leaf, &known) != NULL);
  PP_CHECK_INT(known, ==, UTAB_HAS_TABLE);
  known = UTAB_UNKNOWN;
  PP_CHECK(utab_row_on_demand((uintptr_t)libc_fn, &known) != NULL);
  PP_CHECK_INT(known, ==, UTAB_HAS_TABLE);

  PP_CHECK(!utab_ready());
  PP_CHECK_INT(utab_refresh_first(NULL), ==, 2);
  PP_CHECK(utab_ready());
  utab_stats st;
  utab_get_stats(&st);
  PP_CHECK_INT(st.tables, ==, 2);
  PP_CHECK_INT(st.objects, >, 2);
  known = UTAB_UNKNOWN;
  const void *hint = NULL;
  utab_enter();
  PP_CHECK(utab_find((uintptr_t)&ut_leaf, &known, &hint) != NULL);
  PP_CHECK_INT(known, ==, UTAB_HAS_TABLE);
  hint = NULL;
  PP_CHECK(utab_find((uintptr_t)elf_fn, &known, &hint) == NULL);
  PP_CHECK_INT(known, ==, UTAB_PENDING);
  utab_leave();
  PP_CHECK_INT(utab_refresh_first(NULL), ==, 0); /* once */
  PP_CHECK_INT(utab_refresh(NULL), >=, 1);       /* the others */
  utab_get_stats(&st);
  PP_CHECK_INT(st.tables, >, 2);
  PP_CHECK_INT(st.on_demand, >=, 2); /* until trimmed: */
  utab_on_demand_trim();
  utab_get_stats(&st);
  PP_CHECK_INT(st.on_demand, ==, 0); /* whole tables for all: per-FDE rows freed */
  hint = NULL;
  utab_enter();
  PP_CHECK(utab_find((uintptr_t)elf_fn, &known, &hint) != NULL);
  PP_CHECK_INT(known, ==, UTAB_HAS_TABLE);
  utab_leave();
}

int main(void) {
  PP_RUN(test_unwind_tables_first_refresh_builds_executable_and_libc_only);
  PP_DONE();
}
