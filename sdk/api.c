/* The public API: pushprof_start/stop, standalone output at exit, strerror,
 * version. Configuration comes from env_config; sampling from the sampler. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otel_foreign.h"
#include "api_internal.h"
#include "env_config.h"
#include "otel_ctx.h"
#include "heap.h"
#include "options.h"
#include "pp_gzip.h"
#include "procstat.h"
#include "profiles.h"
#include "term.h"
#include "push.h"
#include "sdk_log.h"
#include "threads_linux.h"
#include "pushprof.h"
#include "sampler.h"
#include "wait.h"

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static env_config api_cfg;       /* guarded by api_lock */
static atomic_int api_started;   /* written under api_lock */
static atomic_int api_pid;       /* the process that started profiling */
static int api_forked;           /* a forked child's profile (fork handler, then api_lock) */
static int api_atexit_installed; /* guarded by api_lock */

/* In a setuid/setgid program (AT_SECURE) the environment belongs to the
 * caller, not the program: secure_getenv ignores it there, so only the
 * options the program passes count. */
static const char *getenv_cb(void *ctx, const char *name) {
  (void)ctx;
  return secure_getenv(name);
}

static int write_all(int fd, const uint8_t *p, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* An exec'd program keeps its process's pid, so its %p name may hold the
 * file an earlier program of this process wrote at its exec: a file written
 * since the process started is kept, and this program's goes to the first
 * free name with ".execN" put in (N = 1, 2, ...). Older files (another
 * process that had the pid) are replaced as always. */
static void skip_earlier_images(char *path, size_t len) {
  char base[PATH_MAX];
  struct stat st;
  int64_t since = -1; /* read from /proc only if the name is taken */
  snprintf(base, sizeof base, "%s", path);
  for (int n = 1; n < 100; n++) {
    if (stat(path, &st) != 0)
      return;
    if (since < 0)
      since = procstat_start_ns();
    if ((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec < since)
      return;
    char tag[16];
    snprintf(tag, sizeof tag, "exec%d", n);
    snprintf(path, len, "%s", base);
    if (env_config_output_tag(path, tag, len) != 0) {
      snprintf(path, len, "%s", base);
      return;
    }
  }
}

/* Temp file then rename, so a reader never sees half a profile. No fsync:
 * standalone files are the ad-hoc path; the sidecar path is the durable one. */
static int write_profile(const char *tmpl, unsigned profiles, unsigned bit, const uint8_t *data,
                         size_t len) {
  char path[PATH_MAX], tmp[PATH_MAX];
  pid_t pid = getpid();
  int fd = -1;
  if (env_config_output_for(tmpl, pid, profiles, bit, path, sizeof path) != 0) {
    sdk_log("pushprof: PUSHPROF_OUTPUT=\"%s\" expands to an invalid path; profile not written",
            tmpl);
    return PUSHPROF_EINVAL;
  }
  if (env_config_output_has_pid(tmpl))
    skip_earlier_images(path, sizeof path);
  int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)pid);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    sdk_log("pushprof: cannot write the profile to %s: path too long (set PUSHPROF_OUTPUT to a "
            "shorter path)",
            path);
    return PUSHPROF_EINVAL;
  }
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    goto fail;
  if (write_all(fd, data, len) != 0)
    goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  fd = -1;
  if (rename(tmp, path) != 0)
    goto fail;
  return 0;
fail:;
  int e = errno;
  if (fd >= 0)
    close(fd);
  unlink(tmp);
  sdk_log("pushprof: cannot write the profile to %s: %s (set PUSHPROF_OUTPUT to a writable path)",
          path, strerror(e));
  return PUSHPROF_ESYS;
}

/* Cuts one profile type's last window and writes it to its file. */
static int write_final(unsigned bit) {
  uint8_t *raw = NULL, *gz = NULL;
  size_t rawlen = 0, gzlen = 0;
  int64_t start_ns = 0, end_ns = 0;
  int rc = profiles_cut(bit, &raw, &rawlen, &start_ns, &end_ns);
  if (rc != 0) {
    sdk_log("pushprof: cannot build the final %s profile: %s", env_config_profile_name(bit),
            pushprof_strerror(rc));
    goto done;
  }
  if (!api_cfg.output_path[0])
    goto done; /* nothing to write to (rejected at start; kept for safety) */
  if (pp_gzip(raw, rawlen, &gz, &gzlen) != 0) {
    sdk_log("pushprof: cannot compress the final profile: out of memory");
    rc = PUSHPROF_ENOMEM;
    goto done;
  }
  rc = write_profile(api_cfg.output_path, api_cfg.profiles, bit, gz, gzlen);
done:
  free(raw);
  free(gz);
  return rc;
}

/* Stops sampling and writes the last window. Caller holds api_lock. */
static int stop_locked(void) {
  int rc = 0;
  term_disarm();
  sampler_stop();
  atomic_store(&api_started, 0);
  if (push_active()) /* the sidecar path owns the last window */
    rc = push_final(api_cfg.exit_timeout_ms > 0 ? api_cfg.exit_timeout_ms
                                                : ENV_CONFIG_EXIT_TIMEOUT_DEFAULT_MS);
  else
    for (unsigned bit = PROFILES_FIRST; bit <= PROFILES_LAST; bit <<= 1)
      if (api_cfg.profiles & bit) {
        int r = write_final(bit);
        if (r != 0 && rc == 0)
          rc = r;
      }
  if (api_cfg.profiles & PUSHPROF_PROFILE_HEAP)
    heap_stop();
  if (api_cfg.profiles & PROFILES_WAIT)
    wait_stop();
  return rc;
}

/* Exit: the flush runs on a helper thread so the exiting thread can give up
 * after the exit timeout; a stuck flush never hangs the host's exit. */
static struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int done;
} exit_wait = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void exit_flush(void) {
  if (pthread_mutex_lock(&api_lock) == 0) {
    if (atomic_load(&api_started))
      stop_locked();
    pthread_mutex_unlock(&api_lock);
  }
  pthread_mutex_lock(&exit_wait.m);
  exit_wait.done = 1;
  pthread_cond_signal(&exit_wait.c);
  pthread_mutex_unlock(&exit_wait.m);
}

static void *exit_flush_main(void *arg) {
  (void)arg;
  threads_exclude_self();
  exit_flush();
  threads_exclude_end();
  return NULL;
}

static void api_at_exit(void) {
  (void)api_final_flush();
}

/* 1 if no profile type has anything to push or write. */
static int nothing_to_write(int pushing) {
  return pushing ? push_nothing_to_send() : profiles_windows_empty(api_cfg.profiles);
}

int api_final_flush(void) {
  /* A forked child that did not restart, or a vfork/posix_spawn child
   * (which shares our memory): its profile is not ours to write. */
  if (!atomic_load(&api_started) || getpid() != (pid_t)atomic_load(&api_pid))
    return 0;
  /* Nothing sampled and nothing waiting (most short commands, most forked
   * children): no push and no file (a standalone parent still writes its
   * possibly empty profile, as gperftools does), no helper thread, and the
   * SDK's threads are left to the exit rather than woken and joined (each
   * join waits for the scheduler). */
  int pushing = push_active();
  if (pushing || api_forked) {
    sampler_quiesce(); /* no sample after the check below */
    if (nothing_to_write(pushing) && pthread_mutex_lock(&api_lock) == 0) {
      int left = 0;
      if (atomic_load(&api_started) && nothing_to_write(pushing)) {
        term_disarm();
        sampler_leave();
        if (pushing)
          (void)push_leave_empty();
        atomic_store(&api_started, 0);
        left = 1;
      }
      pthread_mutex_unlock(&api_lock);
      if (left)
        return 1;
    }
  }
  int timeout_ms =
      api_cfg.exit_timeout_ms > 0 ? api_cfg.exit_timeout_ms : ENV_CONFIG_EXIT_TIMEOUT_DEFAULT_MS;
  pthread_t t;
  pthread_attr_t ta;
  struct timespec deadline;
  int waited_out = 0;
  pthread_mutex_lock(&exit_wait.m);
  exit_wait.done = 0; /* again after an exec that failed and restarted us */
  pthread_mutex_unlock(&exit_wait.m);
  if (pthread_attr_init(&ta) != 0)
    goto inline_flush;
  pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
  int rc = threads_spawn_internal(&t, &ta, exit_flush_main, NULL);
  pthread_attr_destroy(&ta);
  if (rc != 0)
    goto inline_flush;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&exit_wait.m);
  while (!exit_wait.done) {
    if (pthread_cond_clockwait(&exit_wait.c, &exit_wait.m, CLOCK_MONOTONIC, &deadline) ==
        ETIMEDOUT) {
      waited_out = !exit_wait.done;
      break;
    }
  }
  pthread_mutex_unlock(&exit_wait.m);
  if (waited_out)
    sdk_log("pushprof: the final profile was not written within %d ms; giving up (raise "
            "PUSHPROF_EXIT_TIMEOUT_MS)",
            timeout_ms);
  return 1;
inline_flush:
  exit_flush();
  return 1;
}

/* A SIGTERM/SIGINT/SIGHUP caught by the push path: stop and push the last
 * window (the pusher then re-raises the signal). */
static void api_on_term(void) {
  (void)pushprof_stop();
}

/* With a socket, starts the pusher (sampling already runs); undoes the
 * sampler on failure. Caller holds api_lock. */
static int start_push_locked(const env_config *cfg, char *err, size_t errlen) {
  if (!cfg->socket_path[0])
    return 0;
  if (cfg->output_path[0])
    sdk_log("pushprof: PUSHPROF_OUTPUT is ignored: profiles go to the sidecar at %s",
            cfg->socket_path);
  int rc = push_start(cfg, api_on_term, err, errlen);
  if (rc != 0) {
    sampler_stop();
    sdk_log("pushprof: %s; profiling is off", err);
    return rc;
  }
  if (cfg->handle_term_signals)
    push_install_term_handlers();
  return 0;
}

/* The OpenTelemetry process context: readers outside the process see our
 * service and labels; failing to publish it leaves profiling on. */
static void publish_otel_ctx(const env_config *cfg) {
  char err[256];
  if (otel_ctx_publish(cfg->service, cfg->labels, cfg->nlabels, err, sizeof err) != 0)
    sdk_log("pushprof: cannot publish the OpenTelemetry process context: %s; profilers outside "
            "the process do not see this one's service and labels",
            err);
}

/* fork(): the child gets a fresh profile of its own (its pid, its threads,
 * none of the parent's samples) and pushes or writes it at its own exit,
 * exec or _exit, unless it has nothing in it. */
static void api_atfork_prepare(void) {
  pthread_mutex_lock(&api_lock);
}

static void api_atfork_parent(void) {
  pthread_mutex_unlock(&api_lock);
}

static void api_atfork_child(void) {
  pthread_mutex_unlock(&api_lock);
  if (!atomic_load(&api_started))
    return;
  char err[256];
  /* Until the child samples again a term signal takes its default action. */
  term_disarm();
  term_atfork_child();
  if (api_cfg.socket_path[0])
    push_atfork_child();
  atomic_store(&api_started, 0);
  sampler_stop();
  sampler_config sc = {.hz = api_cfg.hz,
                       .signo = api_cfg.signo,
                       .no_cpu = !(api_cfg.profiles & PUSHPROF_PROFILE_CPU)};
  if (sampler_start(&sc, err, sizeof err) != 0) {
    heap_stop();
    wait_stop();
    return; /* the child runs unprofiled; the parent is unaffected */
  }
  /* The parent's window is not ours. */
  (void)sampler_discard();
  if (start_push_locked(&api_cfg, err, sizeof err) != 0)
    return;
  if (!api_cfg.socket_path[0] && api_cfg.handle_term_signals)
    term_arm(api_on_term);
  publish_otel_ctx(&api_cfg);
  atomic_store(&api_pid, (int)getpid());
  api_forked = 1;
  atomic_store(&api_started, 1);
}

int pushprof_flush(int timeout_ms) {
  if (!atomic_load(&api_started))
    return PUSHPROF_ENOTSTARTED;
  if (!push_active())
    return PUSHPROF_ESTANDALONE;
  return push_flush(timeout_ms);
}

/* With no service named (options, PUSHPROF_SERVICE, OTEL_SERVICE_NAME), a
 * tracer's process context that owns otel_thread_ctx_v1 names it. */
static void foreign_service(const pushprof_options *o, env_config *cfg) {
  char svc[ENV_CONFIG_SERVICE_MAX + 1];
  const char *e1 = getenv_cb(NULL, "PUSHPROF_SERVICE"), *e2 = getenv_cb(NULL, "OTEL_SERVICE_NAME");
  if ((o->service && o->service[0]) || (e1 && e1[0]) || (e2 && e2[0]) || otel_records_ours())
    return;
  if (otel_foreign_load() == 0 && otel_foreign_service(svc, sizeof svc) == 0)
    memcpy(cfg->service, svc, strlen(svc) + 1);
}

int pushprof_start(const pushprof_options *opts) {
  char err[512];
  env_config cfg;
  pushprof_options o;
  int rc = options_import(opts, &o, err, sizeof err);
  if (rc == 0)
    rc = env_config_resolve(&o, getenv_cb, NULL, program_invocation_short_name, &cfg, err,
                            sizeof err);
  if (rc != 0) {
    sdk_log("pushprof: %s; profiling is off", err);
    return rc;
  }
  foreign_service(&o, &cfg);
  if (!cfg.output_path[0] && !cfg.socket_path[0] && getauxval(AT_SECURE)) {
    sdk_log("pushprof: setuid/setgid program: the PUSHPROF_* environment is ignored and no "
            "output or socket was passed to pushprof_start; profiling is off");
    return PUSHPROF_ESETUID;
  }
  if (!cfg.output_path[0] && !cfg.socket_path[0]) {
    sdk_log(
        "pushprof: neither PUSHPROF_OUTPUT nor PUSHPROF_SOCKET is set; profiling is off "
        "(set PUSHPROF_SOCKET to the sidecar's socket, or PUSHPROF_OUTPUT=/path/prof-%%p.pb.gz)");
    return PUSHPROF_EINVAL;
  }
  if (pthread_mutex_lock(&api_lock) != 0)
    return PUSHPROF_ESYS;
  if (atomic_load(&api_started)) {
    pthread_mutex_unlock(&api_lock);
    return PUSHPROF_EALREADY;
  }
  sampler_config sc = {
      .hz = cfg.hz, .signo = cfg.signo, .no_cpu = !(cfg.profiles & PUSHPROF_PROFILE_CPU)};
  rc = sampler_start(&sc, err, sizeof err);
  if (rc != 0) {
    sdk_log("pushprof: cannot start sampling: %s; profiling is off",
            err[0] ? err : pushprof_strerror(rc));
    goto out;
  }
  if ((cfg.profiles & PUSHPROF_PROFILE_HEAP) && heap_start(cfg.heap_rate, err, sizeof err) != 0) {
    sampler_stop();
    sdk_log("pushprof: cannot profile the heap (PUSHPROF_PROFILES=heap): %s; profiling is off",
            err);
    rc = PUSHPROF_EINVAL;
    goto out;
  }
  if ((cfg.profiles & PROFILES_WAIT) &&
      wait_start(profiles_wait_mask(cfg.profiles), cfg.offcpu_rate, cfg.lock_rate, err,
                 sizeof err) != 0) {
    sampler_stop();
    heap_stop();
    sdk_log("pushprof: cannot profile waits (PUSHPROF_PROFILES=%s): %s; profiling is off",
            cfg.profiles & PUSHPROF_PROFILE_OFFCPU ? "offcpu" : "lock", err);
    rc = PUSHPROF_EINVAL;
    goto out;
  }
  rc = start_push_locked(&cfg, err, sizeof err);
  if (rc != 0) {
    heap_stop();
    wait_stop();
    goto out;
  }
  if (!cfg.socket_path[0] && cfg.handle_term_signals)
    term_arm(api_on_term);
  api_cfg = cfg;
  publish_otel_ctx(&cfg);
  atomic_store(&api_pid, (int)getpid());
  atomic_store(&api_started, 1);
  if (!api_atexit_installed) {
    if (pthread_atfork(api_atfork_prepare, api_atfork_parent, api_atfork_child) != 0)
      sdk_log("pushprof: cannot register fork handlers; forked children are not profiled");
    if (atexit(api_at_exit) != 0)
      sdk_log("pushprof: cannot register the exit handler; call pushprof_stop() to write %s",
              cfg.output_path);
    else
      api_atexit_installed = 1;
  }
out:
  pthread_mutex_unlock(&api_lock);
  return rc;
}

int pushprof_stop(void) {
  if (pthread_mutex_lock(&api_lock) != 0)
    return PUSHPROF_ESYS;
  int rc = PUSHPROF_ENOTSTARTED;
  if (atomic_load(&api_started))
    rc = stop_locked();
  pthread_mutex_unlock(&api_lock);
  return rc;
}

int pushprof_thread_register(void) {
  if (!sampler_running())
    return PUSHPROF_ENOTSTARTED;
  return sampler_thread_register();
}

const char *pushprof_strerror(int code) {
  switch (code) {
  case PUSHPROF_OK:
    return "success";
  case PUSHPROF_EINVAL:
    return "an argument or option is invalid";
  case PUSHPROF_ENOMEM:
    return "out of memory";
  case PUSHPROF_EALREADY:
    return "profiling is already started";
  case PUSHPROF_ENOTSTARTED:
    return "profiling is not started";
  case PUSHPROF_ESYS:
    return "a system call failed";
  case PUSHPROF_ECONFIG:
    return "an environment variable is invalid";
  case PUSHPROF_ELIMIT:
    return "a documented limit was exceeded";
  case PUSHPROF_ETIMEDOUT:
    return "the deadline passed";
  case PUSHPROF_EREFUSED:
    return "the sidecar refused the push";
  case PUSHPROF_EUNAVAILABLE:
    return "the sidecar could not be reached";
  case PUSHPROF_ESETUID:
    return "refused to run in a setuid/setgid program";
  case PUSHPROF_ESTANDALONE:
    return "profiling runs without a sidecar (standalone): nothing to push to";
  default:
    return "unknown pushprof error code";
  }
}

const char *pushprof_version(void) {
  return PUSHPROF_VERSION_STRING_BUILD;
}
