/* The sampler on Linux: installs the signal handler, arms per-thread CPU
 * timers (or setitimer as a fallback) and drives the collector. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "otel_foreign.h"
#include "collector.h"
#include "handler.h"
#include "heap.h"
#include "wait.h"
#include "pushprof.h"
#include "sampler_internal.h"
#include "sdk_log.h"
#include "threads_linux.h"
#include "dlphdr.h"

static pthread_mutex_t g_api_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static int g_started, g_mode; /* under g_api_mu */

static _Atomic int g_force_itimer;

void sampler_force_itimer_for_tests(int on) {
  atomic_store(&g_force_itimer, on);
}

/* Arms per-thread timers; -1 with why set if they cannot be made. */
static int arm_threads(int signo, int64_t period_ns, char *why, size_t whylen) {
  if (atomic_load(&g_force_itimer)) {
    snprintf(why, whylen, "disabled by a test");
    threads_register_self(); /* as threads_arm_all does before it fails */
    return -1;
  }
  return threads_arm_all(signo, period_ns, why, whylen);
}

void sampler_use_libc(int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *),
                      sampler_sigaction_fn sigaction_fn) {
  threads_set_real_create(create);
  handler_set_libc_sigaction(sigaction_fn);
}

void sampler_before_dlclose(void *handle) {
  collector_before_dlclose(handle);
}

void sampler_after_dlclose(void) {
  collector_after_dlclose();
}

/* The heap profiler's lock is taken last: a thread holding any other lock
 * of ours may allocate, and its sampled path takes the heap's (and only
 * malloc inside it). */
static void atfork_prepare(void) {
  collector_atfork_prepare();
  threads_atfork_prepare();
  dlphdr_atfork_prepare(); /* a refresh holds the collector's lock, then this */
  heap_atfork_prepare();
  wait_atfork_prepare();
}

static void atfork_parent(void) {
  wait_atfork_parent();
  heap_atfork_parent();
  dlphdr_atfork_parent();
  threads_atfork_parent();
  collector_atfork_parent();
}

static void atfork_child(void) {
  /* No timer survives fork and there is no collector thread: the child is
   * not sampling until the SDK's fork handler restarts it. */
  dlphdr_atfork_child();
  threads_atfork_child();
  collector_atfork_child();
  heap_atfork_child(); /* after the deferred slots are reset: it keeps its own */
  wait_atfork_child();
  handler_set_running(0);
  pthread_mutex_init(&g_api_mu, NULL);
  handler_atfork_child();
  g_started = 0;
}

static void register_atfork(void) {
  if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0)
    sdk_log("pushprof: cannot register fork handlers; a forked child may be unprofiled");
}

int sampler_start(const sampler_config *cfg, char *err, size_t errlen) {
  char why[160] = "";
  int rc = 0;
  if (errlen)
    err[0] = '\0';
  if (!cfg || cfg->hz < 1 || cfg->hz > 1000 || cfg->signo < 1 || cfg->signo >= SIGNO_MAX ||
      cfg->signo == SIGKILL || cfg->signo == SIGSTOP) {
    snprintf(err, errlen, "invalid sampler configuration (hz 1..1000, a catchable signal)");
    return PUSHPROF_EINVAL;
  }
  handler_resolve_libc_sigaction();
  pthread_mutex_lock(&g_api_mu);
  if (g_started) {
    rc = PUSHPROF_EALREADY;
    goto out;
  }
  collector_init();
  pthread_once(&g_atfork_once, register_atfork);
  if (cfg->no_cpu) {
    g_mode = COLLECTOR_MODE_TIMERS;
    rc = collector_start(cfg->hz, cfg->signo, g_mode, err, errlen);
    if (rc == 0)
      g_started = 1;
    goto out;
  }
  threads_set_exit_owed_hook(handler_record_at_exit);
  threads_set_tls_probe(otel_foreign_slot); /* another tracer's records, if it owns the name */
  rc = handler_install(cfg->signo, err, errlen);
  if (rc < 0)
    goto out;
  int64_t period_ns = 1000000000LL / cfg->hz;
  handler_set_running(1);
  g_mode = COLLECTOR_MODE_TIMERS;
  if (arm_threads(cfg->signo, period_ns, why, sizeof why) != 0) {
    rc = handler_install(SIGPROF, err, errlen);
    if (rc < 0)
      goto fail;
    handler_use_itimer(period_ns);
    struct itimerval it = {.it_interval = {.tv_sec = period_ns / 1000000000,
                                           .tv_usec = (period_ns % 1000000000) / 1000},
                           .it_value = {0}};
    it.it_value = it.it_interval;
    if (setitimer(ITIMER_PROF, &it, NULL) != 0) {
      snprintf(err, errlen, "%s, and setitimer(ITIMER_PROF) failed: %s", why, strerror(errno));
      rc = PUSHPROF_ESYS;
      goto fail;
    }
    g_mode = COLLECTOR_MODE_ITIMER;
    sdk_log("pushprof: per-thread CPU timers unavailable (%s); sampling with "
            "setitimer(ITIMER_PROF) on SIGPROF instead (per-thread fairness is lost)",
            why);
  }
  rc = collector_start(cfg->hz, cfg->signo, g_mode, err, errlen);
  if (rc < 0)
    goto fail;
  g_started = 1;
out:
  pthread_mutex_unlock(&g_api_mu);
  return rc;
fail:
  handler_set_running(0);
  threads_disarm_all();
  if (g_mode == COLLECTOR_MODE_ITIMER || handler_itimer()) {
    struct itimerval off = {0};
    setitimer(ITIMER_PROF, &off, NULL);
  }
  pthread_mutex_unlock(&g_api_mu);
  return rc;
}

/* No sample after this: timers off (g_api_mu held, started). */
static void quiesce_locked(void) {
  handler_set_running(0);
  threads_disarm_all();
  if (g_mode == COLLECTOR_MODE_ITIMER) {
    struct itimerval off = {0};
    setitimer(ITIMER_PROF, &off, NULL); /* still in itimer mode: late SIGPROFs are swallowed */
  }
}

void sampler_set_tick(void (*fn)(void)) {
  collector_set_tick(fn);
}

void sampler_wake_from_signal(void) {
  collector_wake_from_signal();
}

void sampler_quiesce(void) {
  pthread_mutex_lock(&g_api_mu);
  if (g_started)
    quiesce_locked();
  pthread_mutex_unlock(&g_api_mu);
}

void sampler_leave(void) {
  pthread_mutex_lock(&g_api_mu);
  if (g_started) {
    handler_set_running(0);
    collector_leave();
    g_started = 0;
  }
  pthread_mutex_unlock(&g_api_mu);
}

void sampler_stop(void) {
  pthread_mutex_lock(&g_api_mu);
  if (g_started) {
    quiesce_locked();
    collector_stop();
    g_started = 0;
  }
  pthread_mutex_unlock(&g_api_mu);
}

int sampler_window_empty(void) {
  return collector_window_empty();
}

int sampler_cut(uint8_t **out, size_t *len, int64_t *start_ns, int64_t *end_ns) {
  if (!out || !len || !start_ns || !end_ns)
    return PUSHPROF_EINVAL;
  return collector_cut(out, len, start_ns, end_ns);
}

int sampler_discard(void) {
  return collector_discard();
}

int sampler_thread_register(void) {
  return threads_register_self();
}

int sampler_thread_started(uintptr_t entry) {
  threads_entry = entry;
  return threads_register_self();
}

int sampler_running(void) {
  return handler_running();
}
