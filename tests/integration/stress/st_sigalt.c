/* Work inside signal handlers while sampled at 1000 Hz:
 * - "alt": each round raises SIGUSR1, whose handler (SA_ONSTACK) spins on
 *   the thread's sigaltstack, then spins a little on its normal stack;
 * - "normal": each round raises SIGUSR2 from st_normal_raise, whose handler
 *   spins on the normal stack (frames above the signal frame are known);
 * - "raw" (not in sanitizer builds): made by libc's pthread_create, past the
 *   SDK's interposer, so the SDK learns its stack bounds from a sample; it
 *   spends its first 1.5 s of CPU in a SIGUSR1 handler on its sigaltstack,
 *   then spins on its normal stack, whose samples must still be full.
 *   Sanitizers need their own pthread_create interceptor to see a thread.
 * Each handler checks where it runs; stdout is only the verdicts. */
#include "st_common.h"
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ST_RAW_THREAD 0
#else
#define ST_RAW_THREAD 1
#endif

enum { ROUNDS = 40, ALT_SIZE = 64 * 1024 };

WL_SPIN_FN(st_alt_spin)
WL_SPIN_FN(st_alt_thread_spin)
WL_SPIN_FN(st_normal_spin)
WL_SPIN_FN(st_raw_alt_spin)
WL_SPIN_FN(st_raw_normal_spin)

/* Per thread: the alternate stack and what its handler is to do. */
static __thread uintptr_t t_alt_lo, t_alt_hi;
static __thread double t_alt_seconds;
static __thread int t_raw;
static __thread volatile sig_atomic_t t_on_alt, t_off_alt, t_handled;

/* Counts whether the calling handler runs on this thread's sigaltstack. */
__attribute__((noinline)) static void note_stack(void) {
  volatile char here = 0;
  uintptr_t a = (uintptr_t)&here;
  if (a >= t_alt_lo && a < t_alt_hi)
    t_on_alt++;
  else
    t_off_alt++;
}

__attribute__((noipa)) void st_on_alt(int signo);
__attribute__((noipa)) void st_on_alt(int signo) {
  (void)signo;
  note_stack();
  if (t_raw)
    st_raw_alt_spin(t_alt_seconds);
  else
    st_alt_spin(t_alt_seconds);
  t_handled++;
}

__attribute__((noipa)) void st_on_normal(int signo);
__attribute__((noipa)) void st_on_normal(int signo) {
  (void)signo;
  note_stack();
  st_normal_spin(0.01);
  t_handled++;
}

static void install(int signo, void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  ST_CHECK(sigemptyset(&sa.sa_mask) == 0, "sigemptyset");
  ST_CHECK(sigaction(signo, &sa, NULL) == 0, "sigaction");
}

static void *alt_stack_setup(void) {
  void *p = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ST_CHECK(p != MAP_FAILED, "mmap alt stack");
  stack_t ss = {.ss_sp = p, .ss_size = ALT_SIZE, .ss_flags = 0};
  ST_CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack");
  t_alt_lo = (uintptr_t)p;
  t_alt_hi = (uintptr_t)p + ALT_SIZE;
  return p;
}

static void alt_stack_teardown(void *p) {
  stack_t off = {.ss_flags = SS_DISABLE};
  ST_CHECK(sigaltstack(&off, NULL) == 0, "sigaltstack off");
  ST_CHECK(munmap(p, ALT_SIZE) == 0, "munmap alt stack");
}

typedef struct verdict {
  int on_alt, off_alt, handled;
} verdict;

__attribute__((noipa)) void *st_alt_main(void *arg);
__attribute__((noipa)) void *st_alt_main(void *arg) {
  verdict *v = arg;
  void *p = alt_stack_setup();
  t_alt_seconds = 0.01;
  for (int i = 0; i < ROUNDS; i++) {
    ST_CHECK(pthread_kill(pthread_self(), SIGUSR1) == 0, "pthread_kill");
    st_alt_thread_spin(0.004);
  }
  alt_stack_teardown(p);
  *v = (verdict){t_on_alt, t_off_alt, t_handled};
  return NULL;
}

__attribute__((noipa)) void st_normal_raise(void);
__attribute__((noipa)) void st_normal_raise(void) {
  ST_CHECK(pthread_kill(pthread_self(), SIGUSR2) == 0, "pthread_kill");
}

__attribute__((noipa)) void *st_normal_main(void *arg);
__attribute__((noipa)) void *st_normal_main(void *arg) {
  verdict *v = arg;
  for (int i = 0; i < ROUNDS; i++)
    st_normal_raise();
  *v = (verdict){t_on_alt, t_off_alt, t_handled};
  return NULL;
}

__attribute__((noipa)) void *st_raw_main(void *arg);
__attribute__((noipa)) void *st_raw_main(void *arg) {
  verdict *v = arg;
  void *p = alt_stack_setup();
  t_raw = 1;
  t_alt_seconds = 1.5; /* past the SDK's first rescan (1 s), on the alt stack */
  ST_CHECK(pthread_kill(pthread_self(), SIGUSR1) == 0, "pthread_kill");
  st_raw_normal_spin(0.4);
  alt_stack_teardown(p);
  *v = (verdict){t_on_alt, t_off_alt, t_handled};
  return NULL;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int main(void) {
  install(SIGUSR1, st_on_alt, SA_ONSTACK);
  install(SIGUSR2, st_on_normal, 0);
  pthread_t alt, normal, raw;
  verdict va = {0}, vn = {0}, vr = {0};
  ST_CHECK(pthread_create(&alt, NULL, st_alt_main, &va) == 0, "pthread_create alt");
  ST_CHECK(pthread_create(&normal, NULL, st_normal_main, &vn) == 0, "pthread_create normal");
  if (ST_RAW_THREAD) {
    /* libc's own pthread_create: the handle's lookup skips interposers. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ST_CHECK(libc != NULL, "dlopen libc.so.6");
    create_fn create;
    *(void **)&create = dlsym(libc, "pthread_create");
    ST_CHECK(create != NULL, "dlsym pthread_create");
    ST_CHECK(create(&raw, NULL, st_raw_main, &vr) == 0, "pthread_create raw");
    ST_CHECK(pthread_join(raw, NULL) == 0, "pthread_join raw");
    ST_CHECK(dlclose(libc) == 0, "dlclose libc");
  }
  ST_CHECK(pthread_join(alt, NULL) == 0, "pthread_join alt");
  ST_CHECK(pthread_join(normal, NULL) == 0, "pthread_join normal");
  printf("alt: handled=%d on_alt=%d off_alt=%d\n", va.handled, va.on_alt, va.off_alt);
  printf("normal: handled=%d on_alt=%d off_alt=%d\n", vn.handled, vn.on_alt, vn.off_alt);
  if (ST_RAW_THREAD)
    printf("raw: handled=%d on_alt=%d off_alt=%d\n", vr.handled, vr.on_alt, vr.off_alt);
  else
    printf("raw: not run (sanitizer build)\n");
  int ok = va.handled == ROUNDS && va.on_alt == ROUNDS && vn.handled == ROUNDS &&
           vn.off_alt == ROUNDS && (!ST_RAW_THREAD || (vr.handled == 1 && vr.on_alt == 1));
  return ok ? 0 : 1;
}
