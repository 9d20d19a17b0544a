/* Interposition (only in the .so files).
 * pthread_create: every new thread registers itself with the sampler before
 * running its start routine, with exact stack bounds, even while sampling is
 * off (a later start then arms it without guessing its bounds); it
 * deregisters at exit (the thread table's key destructor). Threads made any
 * other way are found by the periodic rescan.
 * dlclose: before a library goes, its mappings and symbols are kept for the
 * next profiles, so samples taken in it keep their function names.
 * sigaction, signal: a program that sets its own action for our sampling
 * signal after we start (GNU sort installs a cleanup handler for SIGPROF,
 * which re-raises with the default action) would take our timers' signals
 * and die of the first one; its action becomes the one our handler forwards
 * other signals to instead (sampler_sigaction). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*dlclose_fn)(void *);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

typedef struct trampoline_arg {
  void *(*fn)(void *);
  void *arg;
#ifdef __SANITIZE_ADDRESS__
  pthread_attr_t attr; /* see unpoison_own_stack */
  void *stack;
  size_t stack_size;
#endif
} trampoline_arg;

static _Atomic(void *) g_real_pthread_create, g_real_dlclose, g_real_sigaction;

/* The next definition of name (libc's, or a sanitizer's), looked up once. */
static void *real_fn(_Atomic(void *) *slot, const char *name) {
  void *p = atomic_load_explicit(slot, memory_order_acquire);
  if (!p) {
    p = dlsym(RTLD_NEXT, name);
    atomic_store_explicit(slot, p, memory_order_release);
  }
  return p;
}

#ifdef __SANITIZE_ADDRESS__
/* ASan's pthread_create comes first in the chain, so the trampoline runs
 * before ASan's thread start has cleared the new stack's shadow: a stack
 * reused from a thread that vanished (every other thread at fork) still
 * carries that thread's poison. Uninstrumented, and what the calls write is
 * on the heap (ASan's interceptors check it against the stale shadow). */
__attribute__((no_sanitize_address)) static void unpoison_own_stack(trampoline_arg *t) {
  if (pthread_getattr_np(pthread_self(), &t->attr) != 0)
    return;
  if (pthread_attr_getstack(&t->attr, &t->stack, &t->stack_size) == 0)
    __asan_unpoison_memory_region(t->stack, t->stack_size);
  pthread_attr_destroy(&t->attr);
}
#endif

static void *trampoline(void *p) {
#ifdef __SANITIZE_ADDRESS__
  unpoison_own_stack(p);
#endif
  trampoline_arg t = *(trampoline_arg *)p;
  free(p);
  /* Failure: the rescan still finds the thread. */
  sampler_thread_started((uintptr_t)t.fn);
  return t.fn(t.arg);
}

__attribute__((visibility("default"))) int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  pthread_create_fn real = (pthread_create_fn)real_fn(&g_real_pthread_create, "pthread_create");
  if (!real)
    return EAGAIN; /* cannot happen with a working libc */
  trampoline_arg *t = malloc(sizeof *t);
  if (!t)
    return real(thread, attr, fn, arg); /* unsampled until the rescan, but created */
  t->fn = fn;
  t->arg = arg;
  int rc = real(thread, attr, trampoline, t);
  if (rc != 0)
    free(t);
  return rc;
}

__attribute__((visibility("default"))) int dlclose(void *handle) {
  dlclose_fn real = (dlclose_fn)real_fn(&g_real_dlclose, "dlclose");
  if (!real)
    return -1; /* cannot happen with a working libc */
  sampler_before_dlclose(handle);
  int rc = real(handle);
  sampler_after_dlclose(); /* its unwind table goes at once, not at the next drain */
  return rc;
}

static int real_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact);

/* Resolved before main, and before the preload library's constructor
 * starts the SDK: sigaction is called from signal handlers (ours resets
 * SIG_DFL before a re-raise), where dlsym is not safe; and the SDK's own
 * threads and signal actions go straight to libc's. */
__attribute__((constructor(101))) static void resolve_libc(void) {
  pthread_create_fn create = (pthread_create_fn)real_fn(&g_real_pthread_create, "pthread_create");
  (void)real_fn(&g_real_sigaction, "sigaction");
  sampler_use_libc(create, real_sigaction);
}

static int real_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact) {
  sigaction_fn real = (sigaction_fn)real_fn(&g_real_sigaction, "sigaction");
  if (!real) {
    errno = ENOSYS; /* cannot happen with a working libc */
    return -1;
  }
  return real(signo, act, oldact);
}

__attribute__((visibility("default"))) int sigaction(int signo, const struct sigaction *act,
                                                     struct sigaction *oldact) {
  return sampler_sigaction(signo, act, oldact, real_sigaction);
}

/* glibc's signal() sets its action without calling sigaction through the
 * PLT: the same BSD semantics (the signal blocked in its handler, restarted
 * system calls) through ours. */
__attribute__((visibility("default"))) sighandler_t signal(int signo, sighandler_t handler) {
  if (handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (signo > 0 && sigaddset(&sa.sa_mask, signo) != 0)
    return SIG_ERR;
  if (sampler_sigaction(signo, &sa, &old, real_sigaction) != 0)
    return SIG_ERR;
  return old.sa_handler;
}
