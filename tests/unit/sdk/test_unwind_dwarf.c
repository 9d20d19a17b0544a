/* The DWARF unwinder on this process's own stack, in a real SIGPROF
 * handler: this file is built -O2 -fomit-frame-pointer, so only the CFI
 * tables (utab_refresh) can find the callers. Proves that a sample in a
 * frameless leaf gets its caller, that frames above a signal handler are
 * found through the signal frame, and that deep recursion is truncated at
 * the cap and marked. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "deferred.h"
#include "pp_test.h"
#include "unwind.h"
#include "unwind_tables.h"

#define MAXS 4096
#define DEPTH 128
static __thread uintptr_t t_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t t_hi __attribute__((tls_model("initial-exec")));
static uintptr_t g_pcs[MAXS][DEPTH];
static uint32_t g_depth[MAXS];
static unsigned g_flags[MAXS];
static _Atomic int g_n;
static volatile sig_atomic_t g_stop;
volatile uint64_t sink;

/* Exported (for dladdr's names; the build hides symbols by default). */
#pragma GCC visibility push(default)
uint64_t dw_leaf(uint64_t n);
uint64_t dw_func_a(uint64_t n);
uint64_t dw_func_b(uint64_t n);
void dw_worker(double seconds);
uint64_t dw_recurse(int n);
void dw_in_handler(int sig);
void dw_interrupted(void);
void check_debug_frame_lib(const char *path);
#pragma GCC visibility pop

static void on_prof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int i = atomic_fetch_add(&g_n, 1);
  if (i >= MAXS)
    return;
  unwind_regs r;
  unwind_regs_from_ucontext(uc, &r);
  g_depth[i] = unwind_stack(&r, t_lo, t_hi, g_pcs[i], DEPTH, &g_flags[i]);
}

/* Names the function holding pc (needs -rdynamic for this executable). */
static const char *fn_name(uintptr_t pc) {
  Dl_info di;
  if (dladdr((void *)pc, &di) == 0 || !di.dli_sname)
    return "?";
  return di.dli_sname;
}

__attribute__((noinline)) uint64_t dw_leaf(uint64_t n) {
  uint64_t x = n;
  for (uint64_t i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + i;
  return x;
}

__attribute__((noinline)) uint64_t dw_func_a(uint64_t n) {
  return dw_leaf(n) + 1;
}

__attribute__((noinline)) uint64_t dw_func_b(uint64_t n) {
  return dw_leaf(n) * 3;
}

__attribute__((noinline)) void dw_worker(double seconds) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    sink += dw_func_a(200000 + (sink & 1));
    sink += dw_func_b(100000 + (sink & 1));
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

__attribute__((noinline)) uint64_t dw_recurse(int n) {
  if (n == 0) {
    uint64_t x = 0;
    while (!g_stop)
      x += dw_leaf(1000 + (x & 1));
    return x;
  }
  volatile char frame[32]; /* keeps a real frame per call: no loop, no tail call */
  frame[n & 31] = (char)n;
  uint64_t r = dw_recurse(n - 1);
  return r + (uint64_t)frame[n & 31];
}

__attribute__((noinline)) void dw_in_handler(int sig) {
  (void)sig;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    sink += dw_leaf(100000 + (sink & 1));
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 400000000L);
}

__attribute__((noinline)) void dw_interrupted(void) {
  raise(SIGUSR1);
  sink++;
}

static void start_sampling(void) {
  atomic_store(&g_n, 0);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  PP_CHECK_INT(setitimer(ITIMER_PROF, &it, NULL), ==, 0);
}

static int stop_sampling(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  int n = atomic_load(&g_n);
  return n < MAXS ? n : MAXS;
}

static int frame_is(int s, uint32_t i, const char *name) {
  return i < g_depth[s] && strcmp(fn_name(g_pcs[s][i]), name) == 0;
}

/* The loops run on wall time (a CPU clock read is a system call, where
 * timer signals land): on a loaded machine they get fewer samples, so the
 * floors are low and the checks are fractions. */
static void test_unwind_dwarf_leaf_gets_its_caller(void) {
  start_sampling();
  dw_worker(0.4);
  int n = stop_sampling();
  PP_CHECK_INT(n, >=, 10);
  int in_leaf = 0, with_caller = 0, with_main = 0;
  for (int s = 0; s < n; s++) {
    if (!frame_is(s, 0, "dw_leaf"))
      continue;
    in_leaf++;
    if ((frame_is(s, 1, "dw_func_a") || frame_is(s, 1, "dw_func_b")) && frame_is(s, 2, "dw_worker"))
      with_caller++;
    for (uint32_t i = 3; i < g_depth[s]; i++)
      with_main += frame_is(s, i, "__libc_start_main");
  }
  PP_CHECK_INT(in_leaf, >=, n / 2);
  PP_CHECK_INT(with_caller, ==, in_leaf); /* every leaf sample: leaf <- func_a|b <- worker */
  PP_CHECK_INT(with_main, ==, in_leaf);
}

static void on_usr1(int sig) {
  dw_in_handler(sig);
}

static void test_unwind_dwarf_through_signal_frame(void) {
  signal(SIGUSR1, on_usr1);
  start_sampling();
  dw_interrupted();
  int n = stop_sampling();
  PP_CHECK_INT(n, >=, 10);
  int in_handler = 0, through = 0;
  for (int s = 0; s < n; s++) {
    int h = -1;
    for (uint32_t i = 0; i < g_depth[s]; i++)
      if (frame_is(s, i, "dw_in_handler"))
        h = (int)i;
    if (h < 0)
      continue;
    in_handler++;
    for (uint32_t i = (uint32_t)h + 1; i < g_depth[s]; i++)
      if (frame_is(s, i, "dw_interrupted")) {
        through++;
        break;
      }
  }
  PP_CHECK_INT(in_handler, >=, n / 2);
  PP_CHECK_INT(through, >=, in_handler * 9 / 10); /* raise() may be mid-syscall */
}

/* The calling thread's stack bounds, for the handler. */
static void set_bounds(void) {
  pthread_attr_t a;
  void *addr;
  size_t size;
  PP_CHECK_INT(pthread_getattr_np(pthread_self(), &a), ==, 0);
  PP_CHECK_INT(pthread_attr_getstack(&a, &addr, &size), ==, 0);
  pthread_attr_destroy(&a);
  t_lo = (uintptr_t)addr;
  t_hi = t_lo + size;
}

static void *recursion_thread(void *arg) {
  (void)arg;
  set_bounds();
  sink += dw_recurse(300);
  return NULL;
}

static void test_unwind_dwarf_deep_recursion_is_truncated(void) {
  pthread_t t;
  start_sampling();
  PP_CHECK_INT(pthread_create(&t, NULL, recursion_thread, NULL), ==, 0);
  struct timespec d = {0, 300000000L};
  nanosleep(&d, NULL);
  g_stop = 1;
  pthread_join(t, NULL);
  int n = stop_sampling();
  int truncated = 0;
  for (int s = 0; s < n; s++)
    if (g_depth[s] == DEPTH && (g_flags[s] & UNWIND_F_TRUNCATED) &&
        frame_is(s, DEPTH - 1, "dw_recurse"))
      truncated++;
  PP_CHECK_INT(truncated, >=, 1);
}

/* A library with no .eh_frame: its rows come from .debug_frame, in its own
 * file (own) or in a debug file found by build id (split). */
__attribute__((noinline)) void check_debug_frame_lib(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  PP_CHECK(h != NULL);
  if (!h)
    return;
  uint64_t (*caller)(uint64_t) = (uint64_t(*)(uint64_t))dlsym(h, "udf_caller");
  PP_CHECK(caller != NULL);
  if (!caller) {
    dlclose(h);
    return;
  }
  PP_CHECK_INT(utab_refresh(NULL), >=, 1);
  start_sampling();
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    sink += caller(100000 + (sink & 1));
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
  int n = stop_sampling();
  int in_leaf = 0, with_caller = 0;
  for (int s = 0; s < n; s++) {
    if (!frame_is(s, 0, "udf_leaf"))
      continue;
    in_leaf++;
    with_caller += frame_is(s, 1, "udf_caller") && frame_is(s, 2, "check_debug_frame_lib");
  }
  PP_CHECK_INT(in_leaf, >=, n / 2);
  PP_CHECK_INT(with_caller, ==, in_leaf);
  dlclose(h);
}

static void test_unwind_dwarf_debug_frame_in_the_object(void) {
  check_debug_frame_lib(UDF_OWN);
}

static void test_unwind_dwarf_debug_frame_from_debug_file(void) {
  utab_set_debug_root_for_tests(UDF_ROOT);
  check_debug_frame_lib(UDF_SPLIT);
  utab_set_debug_root_for_tests(NULL);
}

/* Before any table is built, stack copies taken in the handler are walked
 * with the rows of just the FDEs they need (utab_row_on_demand): the leaf
 * gets its callers through libc to _start (the outermost frame), and no
 * object is compiled whole. */
static int g_slot[DEFER_SLOTS];
static _Atomic int g_nslot;

static void on_prof_defer(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  unwind_regs r;
  unwind_regs_from_ucontext(uc, &r);
  if (atomic_load(&g_nslot) >= DEFER_SLOTS)
    return;
  int slot = defer_take(&r, t_hi);
  if (slot >= 0)
    g_slot[atomic_fetch_add(&g_nslot, 1)] = slot;
}

static void test_unwind_dwarf_deferred_copies_use_rows_on_demand(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof_defer;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  start_sampling();
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    sink += dw_func_a(200000 + (sink & 1));
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (atomic_load(&g_nslot) < DEFER_SLOTS && t.tv_sec - t0.tv_sec < 3);
  stop_sampling();
  int n = atomic_load(&g_nslot), in_leaf = 0, with_callers = 0;
  PP_CHECK_INT(n, >=, 2);
  for (int i = 0; i < n; i++) {
    g_depth[i] = defer_unwind(g_slot[i], g_pcs[i], DEPTH, &g_flags[i]);
    PP_CHECK(!(g_flags[i] & UNWIND_F_NO_TABLE));
    if (!frame_is(i, 0, "dw_leaf"))
      continue;
    in_leaf++;
    int main_found = 0;
    for (uint32_t k = 3; k < g_depth[i]; k++)
      main_found |= frame_is(i, k, "__libc_start_main");
    with_callers += frame_is(i, 1, "dw_func_a") && main_found && (g_flags[i] & UNWIND_F_END);
  }
  PP_CHECK_INT(in_leaf, >=, 1);
  PP_CHECK_INT(with_callers, ==, in_leaf);
  if (with_callers != in_leaf)
    for (uint32_t k = 0; k < g_depth[0]; k++)
      fprintf(stderr, "  #%u %s flags %#x\n", k, fn_name(g_pcs[0][k]), g_flags[0]);
  PP_CHECK_INT(defer_busy(), ==, 0);
  utab_stats st;
  utab_get_stats(&st);
  PP_CHECK_INT(st.tables, ==, 0);    /* nothing compiled whole */
  PP_CHECK_INT(st.on_demand, >=, 2); /* this executable and libc, per FDE */
  PP_CHECK_INT(st.on_demand_fdes, >=, 3);
  fprintf(stderr, "deferred: %d copies, %d in dw_leaf, with their callers to _start\n", n, in_leaf);
}

int main(void) {
  set_bounds();
  PP_RUN(test_unwind_dwarf_deferred_copies_use_rows_on_demand);
  /* Whole tables for every object from here on (test_unwind_tables checks
   * how the first and later refreshes build them). */
  PP_CHECK_INT(utab_refresh_first(NULL), ==, 2);
  PP_CHECK_INT(utab_refresh(NULL), >=, 1);
  utab_on_demand_trim();
  PP_CHECK(utab_ready());
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  PP_RUN(test_unwind_dwarf_leaf_gets_its_caller);
  PP_RUN(test_unwind_dwarf_through_signal_frame);
  PP_RUN(test_unwind_dwarf_deep_recursion_is_truncated);
  PP_RUN(test_unwind_dwarf_debug_frame_in_the_object);
  PP_RUN(test_unwind_dwarf_debug_frame_from_debug_file);
  PP_DONE();
}
