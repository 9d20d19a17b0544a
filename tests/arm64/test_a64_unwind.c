/* aarch64-specific unwinding, under qemu-user in the cross build:
 *  - hand-written .debug_frame rows for what aarch64 code says: the return
 *    address still in x30 (no rule in the CIE), negate_ra_state (pointer
 *    authentication) changing no row, a frame record at the bottom of a
 *    frame too big for ra_off8 (RA beside the saved FP), CFA from x29;
 *  - a real SIGPROF handler over a frameless leaf called from a function
 *    with an 8 KiB frame: every leaf sample has that caller, its caller and
 *    __libc_start_main (main is hidden from dladdr by -fvisibility);
 *  - the same handler over an app's signal handler that returns through a
 *    sigreturn trampoline described as the kernel's vDSO describes its own
 *    (an S CIE, CFA from x29): the frames below the signal frame are found
 *    through the ucontext, as on arm64 hardware, where qemu-user (no vDSO)
 *    would not show it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"
#include "cfi_elf.h"
#include "pp_test.h"
#include "unwind.h"
#include "unwind_tables.h"

/* ---- hand-written rows ---- */

static size_t put_u32(uint8_t *p, uint32_t v) {
  memcpy(p, &v, 4);
  return 4;
}

static size_t put_u64(uint8_t *p, uint64_t v) {
  memcpy(p, &v, 8);
  return 8;
}

static void expect_row(const cfi_table *t, uintptr_t pc, unsigned kind, int32_t cfa, int16_t fp,
                       int8_t ra8) {
  const cfi_row *r = cfi_lookup(t, pc);
  PP_CHECK(r != NULL);
  if (!r)
    return;
  PP_CHECK_INT(r->kind, ==, kind);
  PP_CHECK_INT(r->cfa_off, ==, cfa);
  PP_CHECK_INT(r->fp_off, ==, fp);
  PP_CHECK_INT(r->ra_off8, ==, ra8);
}

static void test_a64_cfi_leaf_pac_and_big_frame_rows(void) {
  static const uint8_t cie_ops[] = {0x0c, 31, 0}; /* def_cfa sp+0; x30 left unsaid */
  static const uint8_t fde_ops[] = {
      0x41, 0x2d,             /* +4: negate_ra_state (paciasp): the same row */
      0x41, 0x0e, 0x80, 0x10, /* +8: CFA = sp+2048 */
      0x9d, 0x80, 0x02,       /* x29 at CFA-2048 */
      0x9e, 0xff, 0x01,       /* x30 at CFA-2040: too far for ra_off8 */
      0x41, 0x0d, 29,         /* +0xc: CFA = x29+2048 */
      0x41, 0x0e, 0x10,       /* +0x10: CFA = x29+16 */
      0x9d, 0x02, 0x9e, 0x01, /* x29 at CFA-16, x30 at CFA-8 */
  };
  uint8_t sec[128];
  size_t n = 0;
  /* CIE: length, id, version 1, "", code align 4, data align -8, RA column 30 */
  size_t cie_len = 4 + 1 + 1 + 1 + 1 + 1 + sizeof cie_ops;
  size_t cie_pad = (4 - (cie_len % 4)) % 4;
  n += put_u32(sec + n, (uint32_t)(cie_len + cie_pad));
  n += put_u32(sec + n, 0xffffffffu);
  sec[n++] = 1;
  sec[n++] = 0;
  sec[n++] = 4;
  sec[n++] = 0x78; /* sleb -8 */
  sec[n++] = 30;
  memcpy(sec + n, cie_ops, sizeof cie_ops);
  n += sizeof cie_ops;
  memset(sec + n, 0, cie_pad); /* DW_CFA_nop */
  n += cie_pad;
  size_t fde_len = 4 + 8 + 8 + sizeof fde_ops;
  size_t fde_pad = (4 - (fde_len % 4)) % 4;
  n += put_u32(sec + n, (uint32_t)(fde_len + fde_pad));
  n += put_u32(sec + n, 0); /* its CIE, at offset 0 */
  n += put_u64(sec + n, 0x1000);
  n += put_u64(sec + n, 0x40);
  memcpy(sec + n, fde_ops, sizeof fde_ops);
  n += sizeof fde_ops;
  memset(sec + n, 0, fde_pad);
  n += fde_pad;
  cfi_table *t = NULL;
  cfi_stats st;
  PP_CHECK_INT(cfi_build(sec, n, 0, 0, CFI_DEBUG_FRAME, NULL, &t, &st), ==, 0);
  PP_CHECK(t != NULL);
  if (!t)
    return;
  PP_CHECK_INT(st.fdes, ==, 1);
  PP_CHECK_INT(st.bad_ops, ==, 0);
  PP_CHECK_INT(st.unknown_rows, ==, 0);
  expect_row(t, 0x1000, CFI_CFA_SP, 0, CFI_FP_SAME, CFI_RA_LINKREG);
  expect_row(t, 0x1004, CFI_CFA_SP, 0, CFI_FP_SAME, CFI_RA_LINKREG);
  expect_row(t, 0x1008, CFI_CFA_SP, 2048, -2048, CFI_RA_BESIDE_FP);
  expect_row(t, 0x100c, CFI_CFA_FP, 2048, -2048, CFI_RA_BESIDE_FP);
  expect_row(t, 0x1010, CFI_CFA_FP, 16, -16, -1);
  expect_row(t, 0x103f, CFI_CFA_FP, 16, -16, -1);
  free(t);
}

/* ---- a real handler over an 8 KiB frame ---- */

#define MAXS 2048
#define DEPTH 64
static uintptr_t g_lo, g_hi;
static uintptr_t g_pcs[MAXS][DEPTH];
static uint32_t g_depth[MAXS];
static uintptr_t g_lr[MAXS]; /* x30 when the signal came */
static _Atomic int g_n;
volatile uint64_t a64_sink;

#pragma GCC visibility push(default)
uint64_t a64_leaf(uint64_t n);
uint64_t a64_big(uint64_t n);
uint64_t a64_outer(uint64_t n);
void a64_in_handler(int sig, siginfo_t *si, void *uc);
uint64_t a64_nocfi_outer(uint64_t n); /* a64_nocfi.c: no CFI */
uint64_t a64_nocfi_mid(uint64_t n);
uint64_t a64_cfi_caller(uint64_t n);
uint64_t a64_plt_caller(uint64_t n);
void a64_interrupted(void);
#pragma GCC visibility pop

static void on_prof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int i = atomic_fetch_add(&g_n, 1);
  if (i >= MAXS)
    return;
  unwind_regs r;
  unwind_regs_from_ucontext(uc, &r);
  unsigned flags;
  g_lr[i] = r.lr;
  g_depth[i] = unwind_stack(&r, g_lo, g_hi, g_pcs[i], DEPTH, &flags);
}

__attribute__((noinline)) uint64_t a64_leaf(uint64_t n) {
  uint64_t x = n;
  for (uint64_t i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + i;
  return x;
}

__attribute__((noinline)) uint64_t a64_big(uint64_t n) {
  volatile char buf[8192];
  buf[n & 8191] = (char)n;
  uint64_t r = a64_leaf(n);
  return r + (uint64_t)buf[n & 8191];
}

__attribute__((noinline)) uint64_t a64_outer(uint64_t n) {
  uint64_t r = a64_big(n);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return r + 1;
}

/* A sigreturn trampoline as the arm64 vDSO's __kernel_rt_sigreturn: the
 * FDE starts one nop early so that return address - 1 falls inside it. */
void a64_sigreturn(void);
__asm__(".text\n"
        ".p2align 2\n"
        ".cfi_startproc\n"
        ".cfi_signal_frame\n"
        ".cfi_def_cfa x29, 0\n"
        ".cfi_offset x29, 0\n"
        ".cfi_offset x30, 8\n"
        "nop\n"
        ".globl a64_sigreturn\n"
        ".type a64_sigreturn, %function\n"
        "a64_sigreturn:\n"
        "mov x8, #139\n" /* __NR_rt_sigreturn */
        "svc #0\n"
        ".cfi_endproc\n"
        ".size a64_sigreturn, .-a64_sigreturn\n");

/* f(n), n varied a little so it is not folded, over and over for ms. */
static void run_for(uint64_t (*f)(uint64_t), uint64_t n, long ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    a64_sink += f(n + (a64_sink & 1));
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ms * 1000000L);
}

/* The 1 ms profiling timer on, no sample kept yet. */
static void timer_on(void) {
  atomic_store(&g_n, 0);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  PP_CHECK_INT(setitimer(ITIMER_PROF, &it, NULL), ==, 0);
}

/* The timer off: how many samples were kept. */
static int timer_off(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  int n = atomic_load(&g_n);
  return n < MAXS ? n : MAXS;
}

static const char *fn_name(uintptr_t pc) {
  Dl_info di;
  return dladdr((void *)pc, &di) && di.dli_sname ? di.dli_sname : "?";
}

static void test_a64_leaf_under_a_big_frame_gets_its_callers(void) {
  pthread_attr_t a;
  void *addr;
  size_t size;
  PP_CHECK_INT(pthread_getattr_np(pthread_self(), &a), ==, 0);
  PP_CHECK_INT(pthread_attr_getstack(&a, &addr, &size), ==, 0);
  pthread_attr_destroy(&a);
  g_lo = (uintptr_t)addr;
  g_hi = g_lo + size;
  PP_CHECK_INT(utab_refresh(NULL), >=, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  PP_CHECK_INT(sigaction(SIGPROF, &sa, NULL), ==, 0);
  timer_on();
  run_for(a64_outer, 100000, 400);
  int n = timer_off();
  int in_leaf = 0, full = 0;
  for (int s = 0; s < n; s++) {
    if (g_depth[s] < 1 || strcmp(fn_name(g_pcs[s][0]), "a64_leaf") != 0)
      continue;
    in_leaf++;
    int main_seen = 0;
    for (uint32_t i = 3; i < g_depth[s]; i++)
      main_seen |= strcmp(fn_name(g_pcs[s][i]), "__libc_start_main") == 0;
    full += g_depth[s] >= 4 && strcmp(fn_name(g_pcs[s][1]), "a64_big") == 0 &&
            strcmp(fn_name(g_pcs[s][2]), "a64_outer") == 0 && main_seen;
  }
  fprintf(stderr,
          "big frame: %d samples, %d in a64_leaf, %d with a64_big <- a64_outer <- ... <- "
          "__libc_start_main\n",
          n, in_leaf, full);
  PP_CHECK_INT(in_leaf, >=, n / 2);
  PP_CHECK_INT(full, ==, in_leaf);
}

__attribute__((noinline)) uint64_t a64_cfi_caller(uint64_t n) {
  uint64_t r = a64_nocfi_outer(n);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return r ^ 5;
}

/* Two frames without CFI between the leaf and a64_cfi_caller: the walk
 * crosses them by the frame-pointer chain, which on aarch64 leaves SP
 * unknown, and a64_cfi_caller's SP-based row must not be followed with a
 * guessed SP. */
static void test_a64_frames_without_cfi_by_frame_pointers(void) {
  timer_on();
  run_for(a64_cfi_caller, 100000, 400);
  int n = timer_off();
  int in_leaf = 0, full = 0, first = 1;
  for (int s = 0; s < n; s++) {
    if (g_depth[s] < 1 || strcmp(fn_name(g_pcs[s][0]), "a64_leaf") != 0)
      continue;
    in_leaf++;
    int root = 0;
    for (uint32_t i = 4; i < g_depth[s]; i++)
      root |= strcmp(fn_name(g_pcs[s][i]), "__libc_start_main") == 0;
    int ok = g_depth[s] >= 5 && strcmp(fn_name(g_pcs[s][1]), "a64_nocfi_mid") == 0 &&
             strcmp(fn_name(g_pcs[s][2]), "a64_nocfi_outer") == 0 &&
             strcmp(fn_name(g_pcs[s][3]), "a64_cfi_caller") == 0 && root;
    full += ok;
    if (!ok && first) {
      first = 0;
      for (uint32_t i = 0; i < g_depth[s]; i++)
        fprintf(stderr, "  #%u %s\n", i, fn_name(g_pcs[s][i]));
    }
  }
  fprintf(stderr,
          "no CFI: %d samples, %d in a64_leaf, %d with a64_nocfi_mid <- a64_nocfi_outer <- "
          "a64_cfi_caller <- ... <- __libc_start_main\n",
          n, in_leaf, full);
  PP_CHECK_INT(in_leaf, >=, n / 2);
  PP_CHECK_INT(full, ==, in_leaf);
}

__attribute__((noinline)) void a64_in_handler(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  run_for(a64_leaf, 100000, 400);
  __asm__ volatile("" ::: "memory"); /* no tail call: this frame is in the stack */
}

__attribute__((noinline)) void a64_interrupted(void) {
  raise(SIGUSR2);
  a64_sink++;
}

/* The kernel's struct sigaction: glibc's sigaction has no sa_restorer on
 * aarch64. */
struct a64_kernel_sigaction {
  void (*handler)(int, siginfo_t *, void *);
  unsigned long flags;
  void (*restorer)(void);
  uint64_t mask;
};
#define A64_SA_RESTORER 0x04000000ul

static void test_a64_through_a_vdso_like_signal_frame(void) {
  int known = 0;
  const void *hint = NULL;
  utab_enter();
  const cfi_row *row = utab_find((uintptr_t)a64_sigreturn - 1, &known, &hint);
  unsigned kind = row ? row->kind : CFI_GAP;
  utab_leave();
  PP_CHECK_INT(kind, ==, CFI_SIGNAL);
  struct a64_kernel_sigaction ka = {a64_in_handler, SA_SIGINFO | A64_SA_RESTORER, a64_sigreturn, 0};
  PP_CHECK_INT(syscall(SYS_rt_sigaction, SIGUSR2, &ka, NULL, 8), ==, 0);
  timer_on();
  a64_interrupted();
  int n = timer_off();
  int in_handler = 0, through = 0;
  for (int s = 0; s < n; s++) {
    int h = -1;
    for (uint32_t i = 0; i < g_depth[s] && h < 0; i++)
      if (strcmp(fn_name(g_pcs[s][i]), "a64_in_handler") == 0)
        h = (int)i;
    if (h < 0)
      continue;
    in_handler++;
    for (uint32_t i = (uint32_t)h + 1; i < g_depth[s]; i++)
      if (strcmp(fn_name(g_pcs[s][i]), "a64_interrupted") == 0) {
        through++;
        break;
      }
  }
  fprintf(stderr, "signal frame: %d samples, %d in the handler, %d of them reach a64_interrupted\n",
          n, in_handler, through);
  PP_CHECK_INT(in_handler, >=, n / 2);
  PP_CHECK_INT(through, ==, in_handler);
}

/* Calls getpagesize (a few instructions in libc) through the PLT, so that
 * a good share of the samples land in its PLT stub. */
__attribute__((noinline)) uint64_t a64_plt_caller(uint64_t n) {
  uint64_t s = 0;
  for (uint64_t i = 0; i < n; i++)
    s += (uint64_t)getpagesize();
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return s;
}

static int main_bias_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  *(uintptr_t *)arg = info->dlpi_addr;
  return 1; /* the first object is the program */
}

/* aarch64's PLT stubs have no FDE; the table gets rows for them (the RA
 * still in x30), so a sample inside a stub has the stub's caller as its
 * next frame, not that caller's caller as a frame-pointer step gives. */
static void test_a64_plt_stub_keeps_its_caller(void) {
  uintptr_t bias = 0, plt[2], sec[2];
  dl_iterate_phdr(main_bias_cb, &bias);
  PP_CHECK_INT(cfi_elf_plt("/proc/self/exe", bias, plt, sec), >=, 1);
  PP_CHECK(plt[1] > plt[0] + 32);
  timer_on();
  run_for(a64_plt_caller, 20000, 1200);
  int n = timer_off();
  int in_stub = 0, kept = 0, ours = 0;
  for (int s = 0; s < n; s++) {
    uintptr_t pc = g_pcs[s][0];
    int stub = (pc >= plt[0] + 32 && pc < plt[1]) || (pc >= sec[0] && pc < sec[1]);
    if (!stub || g_depth[s] < 1)
      continue;
    in_stub++;
    /* The stub's caller is where x30 returns to, whoever called it
     * (a64_plt_caller, or this test's clock_gettime). */
    kept += g_depth[s] >= 2 && g_pcs[s][1] == g_lr[s];
    ours += g_depth[s] >= 2 && strcmp(fn_name(g_pcs[s][1]), "a64_plt_caller") == 0;
  }
  fprintf(stderr,
          "PLT: %d samples, %d in a PLT stub, %d of them with the stub's caller next (%d in "
          "getpagesize's, called by a64_plt_caller)\n",
          n, in_stub, kept, ours);
  PP_CHECK_INT(in_stub, >=, 1);
  PP_CHECK_INT(kept, ==, in_stub);
}

/* Before the whole table is built, deferred walks take rows one FDE at a
 * time (utab_row_on_demand): the PLT gets the same rows there. */
static void test_a64_plt_rows_before_the_table(void) {
  uintptr_t bias = 0, plt[2], sec[2];
  dl_iterate_phdr(main_bias_cb, &bias);
  PP_CHECK_INT(cfi_elf_plt("/proc/self/exe", bias, plt, sec), >=, 1);
  if (plt[1] < plt[0] + 48)
    return;
  int known = UTAB_UNKNOWN;
  const cfi_row *r = utab_row_on_demand(plt[0] + 32, &known); /* a stub */
  PP_CHECK(r && r->kind == CFI_CFA_SP && r->cfa_off == 0 && r->ra_off8 == CFI_RA_LINKREG &&
           r->fp_off == CFI_FP_SAME);
  PP_CHECK_INT(known, ==, UTAB_HAS_TABLE);
  r = utab_row_on_demand(plt[0], &known); /* the header, before its push */
  PP_CHECK(r && r->kind == CFI_CFA_SP && r->cfa_off == 0 && r->ra_off8 == CFI_RA_LINKREG);
  r = utab_row_on_demand(plt[0] + 8, &known); /* past it */
  PP_CHECK(r && r->kind == CFI_CFA_SP && r->cfa_off == 16 && r->ra_off8 == -1);
}

int main(void) {
  PP_RUN(test_a64_cfi_leaf_pac_and_big_frame_rows);
  PP_RUN(test_a64_leaf_under_a_big_frame_gets_its_callers);
  PP_RUN(test_a64_frames_without_cfi_by_frame_pointers);
  PP_RUN(test_a64_plt_stub_keeps_its_caller);
  PP_RUN(test_a64_plt_rows_before_the_table);
  PP_RUN(test_a64_through_a_vdso_like_signal_frame);
  PP_DONE();
}
