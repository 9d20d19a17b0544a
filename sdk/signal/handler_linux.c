/* The sampling signal handler and the actions it forwards other signals
 * to: what the program installed before the SDK, or since through the
 * interposed sigaction and signal. The protocol between the handler and the
 * collector thread is the comment above sampler_handle_signal; what the
 * handler may call is checked by test_signal_path. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "deferred.h"
#include "otel_read.h"
#include "handler.h"
#include "labels.h"
#include "pushprof.h"
#include "ring.h"
#include "sampler_internal.h"
#include "threads_linux.h"
#include "unwind.h"
#include "unwind_tables.h"

static _Atomic int g_running; /* samples are recorded only while set */
static _Atomic int g_itimer;  /* setitimer was used: SI_KERNEL SIGPROFs are ours */
/* setitimer mode: the period, and the process CPU time up to which
 * expiries have been counted (itimer_weight). */
static _Atomic int64_t g_itimer_period_ns, g_itimer_counted_ns;
static _Atomic int g_installed[SIGNO_MAX];

/* The program's action for a signal our handler took (see
 * sampler_sigaction): what it installed before us, or since through the
 * interposed sigaction/signal. g_view holds the whole struct for the
 * program's reads (under g_sig_lock); the handler reads only the function
 * and flags from g_fwd, a seqlock of atomics (odd seq: being written). */
typedef struct fwd_action {
  _Atomic unsigned seq;
  _Atomic uintptr_t fn; /* sa_handler or sa_sigaction */
  _Atomic int flags;
} fwd_action;
static fwd_action g_fwd[SIGNO_MAX];
static struct sigaction g_view[SIGNO_MAX];
/* Serializes every change of a signal's action that passes through us (the
 * program's and the SDK's install), taken with all signals blocked so a
 * handler can never wait for its own thread. */
static atomic_flag g_sig_lock = ATOMIC_FLAG_INIT;
/* Set around the SDK's own sigaction calls: they go to libc untouched
 * (volatile: the compiler cannot see that sigaction reads it back). */
static __thread volatile int g_own_sigaction __attribute__((tls_model("initial-exec")));

/* libc's sigaction past the interposer (sampler_use_libc), or where there
 * is no interposer (the static library) the first definition, looked up at
 * sampler_start: never dlsym in a signal handler. */
static _Atomic(sampler_sigaction_fn) g_libc_sigaction;

void handler_set_libc_sigaction(sampler_sigaction_fn fn) {
  atomic_store_explicit(&g_libc_sigaction, fn, memory_order_release);
}

void handler_resolve_libc_sigaction(void) {
  if (!atomic_load_explicit(&g_libc_sigaction, memory_order_acquire))
    atomic_store_explicit(&g_libc_sigaction, (sampler_sigaction_fn)dlsym(RTLD_DEFAULT, "sigaction"),
                          memory_order_release);
}

void handler_set_running(int on) {
  atomic_store(&g_running, on);
}

int handler_running(void) {
  return atomic_load(&g_running);
}

void handler_use_itimer(int64_t period_ns) {
  struct timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  atomic_store(&g_itimer_counted_ns, (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec);
  atomic_store(&g_itimer_period_ns, period_ns);
  atomic_store(&g_itimer, 1);
}

int handler_itimer(void) {
  return atomic_load(&g_itimer);
}

void handler_atfork_child(void) {
  atomic_flag_clear(&g_sig_lock); /* a thread that held it is gone */
}

int sampler_own_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact) {
  sigset_t all, old;
  sigfillset(&all);
  /* No handler of the program runs on this thread while the flag is set. */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_own_sigaction = 1;
  sampler_sigaction_fn libc = atomic_load_explicit(&g_libc_sigaction, memory_order_acquire);
  int rc = -1;
  if (libc)
    rc = libc(signo, act, oldact);
  else
    errno = ENOSYS; /* cannot happen with a working libc */
  int saved = errno;
  g_own_sigaction = 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = saved;
  return rc;
}

/* SIG_DFL, an empty mask, no flags (all-zero on Linux). */
static const struct sigaction g_dfl = {.sa_handler = SIG_DFL};

int sampler_own_default(int signo) {
  return sampler_own_sigaction(signo, &g_dfl, NULL);
}

static void sig_lock(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
  while (atomic_flag_test_and_set_explicit(&g_sig_lock, memory_order_acquire))
    sched_yield();
}

static void sig_unlock(const sigset_t *old) {
  atomic_flag_clear_explicit(&g_sig_lock, memory_order_release);
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Under g_sig_lock. */
static void set_forward(int signo, const struct sigaction *a) {
  fwd_action *f = &g_fwd[signo];
  unsigned seq = atomic_load_explicit(&f->seq, memory_order_relaxed);
  atomic_store_explicit(&f->seq, seq + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  uintptr_t fn = (a->sa_flags & SA_SIGINFO) ? (uintptr_t)a->sa_sigaction : (uintptr_t)a->sa_handler;
  atomic_store_explicit(&f->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&f->flags, a->sa_flags, memory_order_relaxed);
  atomic_store_explicit(&f->seq, seq + 2, memory_order_release);
}

/* The forward target as one consistent pair. A writer holds the seqlock for
 * a few stores with its signals blocked; if it was preempted there, yield. */
static void get_forward(int signo, uintptr_t *fn, int *flags) {
  fwd_action *f = &g_fwd[signo];
  for (unsigned i = 1;; i++) {
    unsigned s1 = atomic_load_explicit(&f->seq, memory_order_acquire);
    if (!(s1 & 1)) {
      *fn = atomic_load_explicit(&f->fn, memory_order_relaxed);
      *flags = atomic_load_explicit(&f->flags, memory_order_relaxed);
      atomic_thread_fence(memory_order_acquire);
      if (atomic_load_explicit(&f->seq, memory_order_relaxed) == s1)
        return;
    }
    if (i % 64 == 0)
      sched_yield();
  }
}

int sampler_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact,
                      int (*real)(int, const struct sigaction *, struct sigaction *)) {
  if (g_own_sigaction || signo < 1 || signo >= SIGNO_MAX)
    return real(signo, act, oldact);
  sigset_t mask;
  sig_lock(&mask);
  int rc = 0, saved = errno;
  if (!atomic_load(&g_installed[signo])) {
    rc = real(signo, act, oldact);
    saved = errno;
  } else {
    struct sigaction prev = g_view[signo];
    if (act) {
      g_view[signo] = *act;
      set_forward(signo, act);
    }
    if (oldact)
      *oldact = prev;
  }
  sig_unlock(&mask);
  errno = saved;
  return rc;
}

/* Emulates SIG_DFL for a signal that was not ours, exactly as if we had
 * never been installed: ignore-by-default signals are ignored, others get
 * their default action once the handler returns (the signal is blocked
 * while we run, so raise() leaves it pending). */
static void default_action(int signo) {
  if (signo == SIGCHLD || signo == SIGURG || signo == SIGWINCH || signo == SIGCONT)
    return;
  sampler_own_default(signo);
  raise(signo);
}

/* A signal that is not ours goes where the program's action says, as the
 * kernel would have sent it (SA_RESETHAND included; the action's sa_mask
 * and SA_NODEFER are not emulated). */
static void forward(int signo, siginfo_t *si, void *uc) {
  uintptr_t fn;
  int flags;
  get_forward(signo, &fn, &flags);
  if (fn == (uintptr_t)SIG_IGN)
    return;
  if (fn == (uintptr_t)SIG_DFL) {
    default_action(signo);
    return;
  }
  if (flags & SA_RESETHAND) {
    sigset_t mask;
    sig_lock(&mask);
    g_view[signo] = g_dfl;
    set_forward(signo, &g_dfl);
    sig_unlock(&mask);
  }
  if (flags & SA_SIGINFO)
    ((void (*)(int, siginfo_t *, void *))fn)(signo, si, uc);
  else
    ((void (*)(int))fn)(signo);
}

/* Whether sp lies on the thread's sigaltstack, as the kernel decides it
 * (on_sig_stack): uc_stack holds the alternate stack as it was when the
 * signal came. Its ss_flags do not say whether the interrupted code was on
 * it (Linux stores the flags given to sigaltstack), hence the range test.
 * Not known inside a handler installed with SS_AUTODISARM (size 0 there). */
static int on_altstack(const void *uc, uintptr_t sp) {
  const stack_t *ss = &((const ucontext_t *)uc)->uc_stack;
  uintptr_t lo = (uintptr_t)ss->ss_sp;
  return !(ss->ss_flags & SS_DISABLE) && ss->ss_size && sp > lo && sp - lo <= ss->ss_size;
}

/* How many expiries of the process-wide ITIMER_PROF this signal stands for.
 * The kernel fires it at a tick of whichever thread runs (the SDK's own
 * included) and merges expiries while a SIGPROF is pending (a process-
 * directed signal waits for a thread that does not block it to run), with
 * no overrun count: on a busy machine most of them merged. The process CPU
 * clock says how many periods passed since the last one counted; the
 * remainder carries over, so the weights add up to the CPU time. */
static uint32_t itimer_weight(void) {
  int64_t period = atomic_load_explicit(&g_itimer_period_ns, memory_order_relaxed);
  struct timespec ts;
  if (period <= 0 || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return 1;
  int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  int64_t counted = atomic_load_explicit(&g_itimer_counted_ns, memory_order_relaxed);
  int64_t n = now > counted ? (now - counted) / period : 0;
  if (n < 1)
    n = 1; /* fired a little early against this clock: the next one is less */
  if (n > 1000)
    n = 1000;
  /* A concurrent handler counted this time already: this signal is one. */
  if (!atomic_compare_exchange_strong_explicit(&g_itimer_counted_ns, &counted, counted + n * period,
                                               memory_order_relaxed, memory_order_relaxed))
    return 1;
  return (uint32_t)n;
}

/* Handler <-> collector protocol.
 * - Which signals are ours: si_code == SI_TIMER and sival_ptr a cookie with
 *   our magic (threads_cookie: magic | slot generation | slot index); or, in
 *   setitimer fallback mode only, a SIGPROF with si_code == SI_KERNEL.
 *   Everything else goes to the program's action (g_fwd): the one installed
 *   before us, or the one it set since through the interposed sigaction or
 *   signal (sampler_sigaction), which never displaces our handler.
 * - A cookie whose generation no longer matches its slot is a stale signal
 *   from a deleted timer: swallowed. So are our signals after sampler_stop
 *   (g_running == 0); the handler is never uninstalled, so a late timer
 *   signal can never reach SIG_DFL and kill the process.
 * - The slot gives the thread's stack bounds without TLS or syscalls. They
 *   are written before the slot's generation is published (self
 *   registration) or published later by the collector, hi last, with
 *   release; we read hi with acquire, then lo. Unknown bounds (0): only the
 *   leaf pc and sp are recorded (RING_F_LEAF_ONLY) and the collector looks
 *   up the mapping that holds sp, so later samples of that thread are full;
 *   not when sp lies on the thread's sigaltstack (on_altstack): that
 *   mapping is the alternate stack, and taking it would leave every later
 *   sample on the real stack with its leaf only (RING_F_ALTSTACK). With
 *   known bounds, a sample on the sigaltstack (the kernel's uc_stack says
 *   where it is) is walked there and on through the signal frame of its
 *   handler to the thread's own stack (unwind_stack_alt).
 * - The record (weight 1 + si_overrun) is written in place into a ring cell
 *   claimed with one CAS (ring_reserve) and published by a release store of
 *   the cell's sequence number (ring_commit). The collector reads cells in
 *   order with acquire and hands them back; a full ring or a lost CAS race
 *   beyond a few tries counts a drop ("[pushprof] ring full" in the cut).
 * - Labels: the thread's label block is found through initial-exec TLS
 *   (this handler runs on the sampled thread itself, slot or no slot) and
 *   copied by value into rec->labels (labels_snapshot). The writer edits a
 *   private copy and publishes it into the other of two buffers under a
 *   sequence counter, so an interrupted label_set leaves the previous set
 *   readable: a sample never carries a torn value, and never waits.
 * - Unwinding (unwind_stack) reads the CFI tables the collector publishes
 *   (unwind_tables.h: immutable arrays behind one pointer, freed only once
 *   the handlers' reader count was seen at zero after a swap) and the
 *   thread's stack inside [lo, hi). A frame in code no table covers yet
 *   takes a frame-pointer step and marks the record RING_F_NO_TABLE.
 *   Tables are built only once a process is sampled: the first sample
 *   asks for them (utab_want) and wakes the collector (a futex wake).
 *   Until they are ready the stack is copied into a deferred slot
 *   (RING_F_DEFERRED) and the collector walks the copy with the tables
 *   (deferred.h); so is a stack that meets an object whose table is still
 *   pending (the others are built a drain period after the first sample),
 *   and that sample wakes the collector, which walks the copy at once
 *   (with the rows of just the FDEs it needs) and frees the slot.
 * - No locks, no malloc, no stdio; errno saved; work bounded by
 *   RING_MAX_DEPTH frames and the ring's retry cap. (A forwarded signal
 *   whose action has SA_RESETHAND takes g_sig_lock to reset it: its holders
 *   have every signal blocked, so they are never waiting on this thread.) */
void sampler_handle_signal(int signo, siginfo_t *si, void *uc) {
  int saved_errno = errno;
  threads_slot *slot = NULL;
  uint32_t idx = UINT32_MAX, gen = 0;
  int ours = 0;
  if (si && si->si_code == SI_TIMER) {
    slot = threads_from_cookie(si->si_value.sival_ptr, &ours, &idx, &gen);
  } else if (si && si->si_code == SI_KERNEL && signo == SIGPROF &&
             atomic_load_explicit(&g_itimer, memory_order_relaxed)) {
    ours = 1;
    slot = threads_self;
    if (slot) {
      idx = (uint32_t)(slot - threads_table);
      gen = atomic_load_explicit(&slot->gen, memory_order_acquire);
    }
  }
  if (!ours) {
    forward(signo, si, uc);
    goto out;
  }
  if (!atomic_load_explicit(&g_running, memory_order_acquire) || !uc)
    goto out;
  if (si->si_code == SI_TIMER && !slot)
    goto out; /* stale */

  uint64_t pos;
  ring_record *rec = ring_reserve(&collector_ring, &pos);
  if (!rec)
    goto out;
  unwind_regs regs;
  unwind_regs_from_ucontext(uc, &regs);
  uintptr_t hi = slot ? atomic_load_explicit(&slot->stack_hi, memory_order_acquire) : 0;
  uintptr_t lo = hi ? atomic_load_explicit(&slot->stack_lo, memory_order_relaxed) : 0;
  unsigned uflags;
  int defer = -1, defer_tried = 0, wake = 0;
  int own = hi && regs.sp >= lo && regs.sp < hi; /* on the thread's own stack */
  int alt = on_altstack(uc, regs.sp);
  if (!utab_ready()) {
    if (utab_want())
      collector_wake_from_signal(); /* the first sample: build the tables now */
    if (own) {
      defer = defer_take(&regs, hi); /* walked later, with the tables */
      defer_tried = 1;
    }
  }
  if (defer >= 0) {
    rec->pcs[0] = regs.pc;
    rec->depth = 1;
    rec->flags = RING_F_DEFERRED;
    rec->defer = defer;
  } else {
    if (!own && alt && hi) {
      /* In a handler on the sigaltstack: its frames, then through the
       * signal frame to the interrupted code on the thread's own stack. */
      const stack_t *ss = &((const ucontext_t *)uc)->uc_stack;
      uintptr_t alo = (uintptr_t)ss->ss_sp;
      rec->depth = (uint16_t)unwind_stack_alt(&regs, alo, alo + ss->ss_size, lo, hi, rec->pcs,
                                              RING_MAX_DEPTH, &uflags);
    } else {
      rec->depth = (uint16_t)unwind_stack(&regs, lo, hi, rec->pcs, RING_MAX_DEPTH, &uflags);
    }
    rec->flags = (uflags & UNWIND_F_TRUNCATED) ? RING_F_TRUNCATED : 0;
    if (uflags & UNWIND_F_NO_TABLE)
      rec->flags |= RING_F_NO_TABLE;
    /* A frame in an object whose table is still being built (or loaded
     * since the last refresh): walk a copy later, if a slot is free (a copy
     * holds the thread's own stack only). */
    if ((uflags & UNWIND_F_PENDING) && own && !defer_tried &&
        (defer = defer_take(&regs, hi)) >= 0) {
      rec->pcs[0] = regs.pc;
      rec->depth = 1;
      rec->flags = RING_F_DEFERRED;
      rec->defer = defer;
      wake = 1; /* walked at once, which frees the slot */
    }
  }
  if (hi == 0 || (!own && !alt))
    rec->flags |= RING_F_LEAF_ONLY;
  if (alt)
    rec->flags |= RING_F_ALTSTACK;
  /* A thread whose bounds are unknown (made past our interposer) gets them
   * from the collector's next drain: wake it now rather than lose up to a
   * drain period of stacks, once per thread. */
  if (slot && hi == 0 && !(rec->flags & RING_F_ALTSTACK) &&
      !atomic_exchange_explicit(&slot->bounds_asked, 1, memory_order_relaxed))
    wake = 1;
  rec->slot = idx;
  rec->gen = gen;
  rec->sp = regs.sp;
  /* Expiries the kernel merged into this signal (missed ticks, a vCPU that
   * was descheduled) still stand for CPU time spent here. */
  rec->weight = 1;
  rec->period_ns = slot && si->si_code == SI_TIMER
                       ? atomic_load_explicit(&slot->period_ns, memory_order_relaxed)
                       : 0;
  if (si->si_code == SI_TIMER && si->si_overrun > 0)
    rec->weight += si->si_overrun < 1000 ? (uint32_t)si->si_overrun : 1000;
  else if (si->si_code == SI_KERNEL)
    rec->weight = itimer_weight();
  labels_snapshot(rec);
  uintptr_t otel_slot = slot ? atomic_load_explicit(&slot->otel_slot, memory_order_acquire) : 0;
  if (otel_slot)
    otel_read_record(otel_slot, rec); /* another tracer's record for this thread */
  ring_commit(&collector_ring, pos);
  if (wake)
    collector_wake_from_signal(); /* after the commit: the drain sees the record */
out:
  errno = saved_errno;
}

/* A thread ends with its sample due but not yet signalled (threads_linux.c,
 * timer_overdue): the sample it would have had, given to its start routine
 * (the stack is gone by now) with its labels. Its timer is deleted, so no
 * signal can record it twice; a signal of another kind (setitimer) taken
 * meanwhile claims its own ring cell. */
void handler_record_at_exit(uintptr_t entry) {
  if (!atomic_load_explicit(&g_running, memory_order_acquire))
    return;
  uint64_t pos;
  ring_record *rec = ring_reserve(&collector_ring, &pos);
  if (!rec)
    return; /* counted as a drop by the ring */
  rec->pcs[0] = entry;
  rec->depth = entry ? 1 : 0;
  rec->flags = RING_F_AT_EXIT;
  rec->slot = UINT32_MAX;
  rec->gen = 0;
  rec->sp = 0;
  rec->weight = 1;
  rec->period_ns = 0;
  labels_snapshot(rec);
  ring_commit(&collector_ring, pos);
}

int handler_install(int signo, char *err, size_t errlen) {
  if (atomic_load(&g_installed[signo]))
    return 0;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = sampler_handle_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigset_t mask;
  sig_lock(&mask);
  if (sampler_own_sigaction(signo, NULL, &old) != 0)
    goto fail;
  g_view[signo] = old;
  set_forward(signo, &old); /* before we can run: the handler reads it */
  atomic_store(&g_installed[signo], 1);
  if (sampler_own_sigaction(signo, &sa, NULL) != 0) {
    atomic_store(&g_installed[signo], 0);
    goto fail;
  }
  sig_unlock(&mask);
  return 0;
fail:
  sig_unlock(&mask);
  snprintf(err, errlen, "cannot install the handler for signal %d: %s", signo, strerror(errno));
  return PUSHPROF_ESYS;
}
