/* pushprof-sidecar: wires config, spool, listener, batcher, exporter and the
 * metrics endpoint together; the main thread then only waits for signals and
 * rescans the spool for files SDKs dropped in while we were unreachable. */
#include <errno.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "batcher.h"
#include "config.h"
#include "exporter.h"
#include "fsutil.h"
#include "http_common.h"
#include "http_metrics.h"
#include "listener.h"
#include "lockfile.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "ondemand.h"
#include "spool.h"

/* glibc's defaults suit this load badly: one malloc arena per connection
 * thread (up to 8 per core), each keeping its freed memory, and an mmap
 * threshold that rises after the first large free, so multi-MiB frames and
 * decoded profiles end up in those arenas for good. Two arenas, and blocks
 * of 1 MiB and more mmap'ed (returned to the system when freed), keep RSS
 * near what is live. Not lower: every frame, decode arena and gzip state of
 * a typical push (about 100 KiB) would then be a fresh mapping, faulted in
 * and unmapped each time. */
static void tune_malloc(void) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  /* (Sanitizer builds: their allocator replaces glibc's and refuses mallopt.) */
  if (mallopt(M_ARENA_MAX, 2) != 1 || mallopt(M_MMAP_THRESHOLD, 1 << 20) != 1)
    log_event(LOG_WARN, "mallopt failed; memory use may be higher under load", "arena_max=2");
#endif
}

/* Test hook, not a user setting: a guard limit in bytes, so tests can put
 * the sidecar over it without filling its memory (sanitizer builds too,
 * where the guard is otherwise off). 0 when unset or not a number. */
static uint64_t test_rss_limit(void) {
  const char *t = getenv("PUSHPROF_TEST_RSS_LIMIT");
  if (!t || !*t)
    return 0;
  char *end;
  unsigned long long v = strtoull(t, &end, 10);
  return *end == '\0' ? (uint64_t)v : 0;
}

/* Measures the fixed part of the memory (membudget.h) once the exporters,
 * their libraries and the metrics listener are up, before any push or
 * pending batch is in memory, and arms the RSS guard: the guard leaves an
 * eighth of the dynamic part as headroom for frames already admitted. In a
 * sanitizer build the runtime's shadow memory and quarantine dwarf any
 * budget: there --max-memory bounds only what the budget counts. */
static int split_memory(uint64_t max, uint64_t *dynamic, char *err, size_t errlen) {
  int64_t rss = membudget_rss();
  uint64_t fixed = rss > 0 ? (uint64_t)rss : 0;
  uint64_t limit = 0;
  metrics_set(G_MEMORY_FIXED, (int64_t)fixed);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  *dynamic = max;
  (void)err;
  (void)errlen;
  log_event(LOG_INFO, "sanitizer build: the fixed part is not deducted and RSS is not bounded",
            "max_memory=%llu", (unsigned long long)max);
#else
  if (rss < 0)
    log_event(LOG_WARN, "cannot read /proc/self/statm: the memory budget ignores the fixed part",
              "max_memory=%llu", (unsigned long long)max);
  if (membudget_split(max, fixed, dynamic, err, errlen) != 0)
    return -1;
  limit = rss < 0 ? 0 : max - *dynamic / 8;
#endif
  uint64_t forced = test_rss_limit();
  if (forced)
    limit = forced;
  membudget_guard(limit);
  metrics_set(G_MEMORY_RSS_LIMIT, (int64_t)limit);
  log_event(LOG_INFO, "memory budget", "max_memory=%llu fixed=%llu dynamic=%llu rss_limit=%llu",
            (unsigned long long)max, (unsigned long long)fixed, (unsigned long long)*dynamic,
            (unsigned long long)limit);
  return 0;
}

/* Each connection holds an fd, and so does each connection being evicted
 * (up to as many again); plus the spool, exports and /metrics. A soft limit
 * of 1024 (a common default) would make accept() fail first. */
/* Room for max_connections (and as many being evicted), 256 files, and
 * extra (on-demand subscriptions). */
static void raise_fd_limit(int max_connections, int extra) {
  struct rlimit rl;
  rlim_t want = (rlim_t)max_connections * 2 + 256 + (rlim_t)extra;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
    return;
  rlim_t old = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
  if (rl.rlim_cur > old && setrlimit(RLIMIT_NOFILE, &rl) != 0)
    rl.rlim_cur = old;
  if (rl.rlim_cur < want)
    log_event(LOG_WARN, "file descriptor limit below what --max-connections needs",
              "soft=%llu hard=%llu want=%llu fix=\"raise the hard limit (ulimit -Hn, systemd "
              "LimitNOFILE=) or lower --max-connections\"",
              (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
              (unsigned long long)want);
  else
    log_event(LOG_INFO, "file descriptor limit raised", "from=%llu to=%llu",
              (unsigned long long)old, (unsigned long long)rl.rlim_cur);
}

/* The bearer token of --http-token-file: its content less trailing blanks
 * and newlines; 1..4096 bytes of printable ASCII. NULL with err. */
static char *read_token(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "re");
  if (!f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return NULL;
  }
  char *buf = calloc(1, 4098);
  size_t n = buf ? fread(buf, 1, 4097, f) : 0;
  fclose(f);
  if (!buf) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
    buf[--n] = 0;
  const char *bad = NULL;
  if (n == 0)
    bad = "the file is empty: put the token in it";
  else if (n > 4096)
    bad = "the token is over 4096 bytes";
  for (size_t i = 0; i < n && !bad; i++)
    if (buf[i] <= ' ' || buf[i] > '~')
      bad = "the token must be printable ASCII without blanks (e.g. openssl rand -hex 32)";
  if (bad) {
    snprintf(err, errlen, "%s", bad);
    free(buf);
    return NULL;
  }
  return buf;
}

/* One sidecar per spool: a second one would export the same files twice.
 * A dot name: the spool ignores dot files that do not end in .push. */
static int lock_spool(const char *dir, char *err, size_t errlen) {
  char path[4096], what[4200];
  if (snprintf(path, sizeof path, "%s/.sidecar.lock", dir) >= (int)sizeof path) {
    snprintf(err, errlen, "--spool %s: path too long", dir);
    return -1;
  }
  if (fsutil_mkdir_p(dir) != 0) {
    snprintf(err, errlen, "--spool %s: cannot create it: %s (create it or set --spool)", dir,
             strerror(errno));
    return -1;
  }
  snprintf(what, sizeof what, "--spool %s", dir);
  return lockfile_acquire(path, what, err, errlen);
}

int main(int argc, char **argv) {
  sidecar_config cfg;
  char err[1024] = "";
  int exit_code = 1;
  spool *sp = NULL;
  listener *ls = NULL;
  exporter *ex[CONFIG_MAX_EXPORTS] = {0};
  char *target_names[CONFIG_MAX_EXPORTS] = {0};
  size_t nex = 0;
  batcher *b = NULL;
  http_metrics *hm = NULL;
  ondemand *od = NULL;
  char *token = NULL;
  int spool_lock = -1;
  char q1[512], q2[2200], q3[512];

  tune_malloc();
  /* No OPENSSL_cleanup at exit: connection threads that are still ending
   * then would lose their per-thread state (a leak LeakSanitizer reports),
   * and the process is ending anyway. */
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
  int st = config_load(&cfg, argc, argv, err, sizeof err);
  if (st != CONFIG_OK) {
    if (st == CONFIG_ERROR)
      fprintf(stderr, "pushprof-sidecar: %s\n", err);
    config_free(&cfg);
    return st == CONFIG_DONE ? 0 : 2;
  }
  enum log_level level = LOG_INFO;
  (void)log_level_parse(cfg.log_level, &level); /* checked by config_load */
  log_set_level(level);

  /* Signals are taken synchronously by the main thread only; every thread
   * created below inherits the mask. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) {
    fprintf(stderr, "pushprof-sidecar: cannot block signals\n");
    goto out;
  }
  signal(SIGPIPE, SIG_IGN);
  /* Subscriptions to on-demand profiles hold a descriptor each. */
  raise_fd_limit(cfg.max_connections, cfg.metrics_addr[0] ? OD_MAX_SUBSCRIBERS : 0);
  if (cfg.http_token_file && cfg.http_token_file[0] &&
      !(token = read_token(cfg.http_token_file, err, sizeof err))) {
    fprintf(stderr, "pushprof-sidecar: --http-token-file %s: %s\n", cfg.http_token_file, err);
    exit_code = 2;
    goto out;
  }
  spool_lock = lock_spool(cfg.spool_dir, err, sizeof err);
  if (spool_lock < 0) {
    fprintf(stderr, "pushprof-sidecar: %s\n", err);
    goto out;
  }

  /* Before any other thread exists: listener_open changes the umask briefly. */
  listener_config lc = {.socket_path = cfg.socket_path,
                        .max_frame_bytes = cfg.max_frame_bytes,
                        .max_connections = cfg.max_connections,
                        .read_timeout_ms = cfg.read_timeout_ms,
                        .allow_uids = cfg.allow_uids,
                        .n_allow_uids = cfg.n_allow_uids,
                        .max_memory = cfg.max_memory};
  ls = listener_open(&lc, err, sizeof err);
  if (!ls) {
    fprintf(stderr, "pushprof-sidecar: --socket %s: %s\n", cfg.socket_path, err);
    goto out;
  }
  exporter_options eo = {.max_dumps_retained = cfg.max_dumps_retained,
                         .ca_file = cfg.ca_file,
                         .tls_insecure_skip_verify = cfg.tls_insecure_skip_verify,
                         .http_timeout_ms = cfg.http_timeout_ms,
                         .s3_region = cfg.s3_region,
                         .s3_endpoint = cfg.s3_endpoint,
                         .s3_path_style = cfg.s3_path_style,
                         .gcs_endpoint = cfg.gcs_endpoint,
                         .pyroscope_api = cfg.pyroscope_api,
                         .pyroscope_tenant = cfg.pyroscope_tenant,
                         .pyroscope_max_profile_bytes = cfg.pyroscope_max_profile_bytes,
                         .pyroscope_max_samples = cfg.pyroscope_max_samples,
                         .otlp_headers = (const char *const *)cfg.otlp_headers.v,
                         .n_otlp_headers = cfg.otlp_headers.n};
  bool any_otlp = false;
  for (size_t i = 0; i < cfg.exports.n && i < CONFIG_MAX_EXPORTS; i++) {
    const char *url = cfg.exports.v[i];
    size_t ul = strlen(url) + 1;
    ex[i] = exporter_create(url, &eo, err, sizeof err);
    if (!ex[i]) {
      char shown[4200];
      exporter_redact_url(url, shown, sizeof shown); /* no credentials on stderr either */
      fprintf(stderr, "pushprof-sidecar: --export %s: %s\n", shown, err);
      exit_code = 2;
      goto out;
    }
    nex = i + 1;
    any_otlp |= strncmp(ex[i]->scheme, "otlp", 4) == 0;
    if (!(target_names[i] = malloc(ul)))
      goto out;
    exporter_redact_url(url, target_names[i], ul);
  }
  if (cfg.otlp_headers.n && !any_otlp)
    log_event(LOG_WARN, "--otlp-header is set but no --export target is OTLP; ignored",
              "headers=%zu", cfg.otlp_headers.n);
  spool_config sc = {.dir = cfg.spool_dir,
                     .max_bytes = cfg.max_spool_bytes,
                     .drop_oldest = cfg.spool_drop_oldest,
                     .journal_bytes = cfg.journal_bytes};
  sp = spool_open(&sc, err, sizeof err);
  if (!sp) {
    fprintf(stderr, "pushprof-sidecar: --spool %s: %s\n", cfg.spool_dir, err);
    goto out;
  }
  if (cfg.metrics_addr[0]) {
    if (!(od = ondemand_new(err, sizeof err))) {
      fprintf(stderr, "pushprof-sidecar: %s\n", err);
      goto out;
    }
    listener_set_ondemand(ls, od);
    http_serve_options ho = {.od = od, .token = token};
    hm = http_metrics_start_with(cfg.metrics_addr, &ho, err, sizeof err);
    if (!hm) {
      fprintf(stderr, "pushprof-sidecar: %s\n", err);
      goto out;
    }
    log_event(LOG_INFO, "metrics listening", "addr=%s port=%d",
              log_quote(cfg.metrics_addr, q1, sizeof q1), http_metrics_port(hm));
  }
  uint64_t dynamic;
  if (split_memory(cfg.max_memory, &dynamic, err, sizeof err) != 0) {
    fprintf(stderr, "pushprof-sidecar: %s\n", err);
    exit_code = 2;
    goto out;
  }
  listener_set_budget(ls, dynamic);
  batcher_config bc = {.window_s = cfg.batch_window_s,
                       .node = cfg.node_name,
                       .subdir = cfg.bucket_subdir,
                       .max_age_s = cfg.max_batch_age_s,
                       .target_names = (const char *const *)target_names,
                       .max_memory = dynamic,
                       .max_frame_bytes = cfg.max_frame_bytes};
  metrics_set(G_MEMORY_BUDGET, (int64_t)cfg.max_memory);
  b = batcher_new_multi(&bc, ex, nex, sp);
  if (!b || batcher_start(b) != 0) {
    fprintf(stderr, "pushprof-sidecar: cannot start the batcher\n");
    goto out;
  }
  int resumed = spool_scan(sp, batcher_add_spooled, b);
  log_event(LOG_INFO, "spool scanned", "dir=%s resumed=%d bytes=%llu",
            log_quote(cfg.spool_dir, q1, sizeof q1), resumed < 0 ? 0 : resumed,
            (unsigned long long)spool_bytes(sp));
  if (listener_start(ls, sp, b) != 0)
    goto out;
  char targets[2048] = "";
  for (size_t i = 0, o = 0; i < nex && o < sizeof targets; i++)
    o += (size_t)snprintf(targets + o, sizeof targets - o, "%s%s", i ? " " : "", target_names[i]);
  log_event(LOG_INFO, "sidecar started", "socket=%s export=%s targets=%zu node=%s window_s=%d",
            log_quote(cfg.socket_path, q1, sizeof q1), log_quote(targets, q2, sizeof q2), nex,
            log_quote(cfg.node_name, q3, sizeof q3), cfg.batch_window_s);

  bool deferred_dropins = false; /* logged once until there is room again */
  for (;;) {
    struct timespec ts = {cfg.rescan_interval_s, 0};
    siginfo_t si;
    int sig = sigtimedwait(&set, &si, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      log_event(LOG_INFO, "shutting down", "signal=%s grace_s=%d",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg.shutdown_grace_s);
      break;
    }
    if (sig == SIGHUP) {
      log_event(LOG_INFO, "SIGHUP ignored", "hint=\"restart to change settings\"");
      continue;
    }
    if (sig < 0 && errno != EAGAIN && errno != EINTR) {
      log_event(LOG_ERROR, "sigtimedwait failed", "errno=%d", errno);
      break;
    }
    /* Drop-ins wait on disk while the resident memory is over the guard's
     * limit: each adds a pending batch's index entry, and they came in
     * past the listener's admission. */
    if (membudget_over()) {
      if (!deferred_dropins)
        log_event(LOG_WARN, "spool drop-ins left for later: resident memory near --max-memory",
                  "rss_limit=%llu", (unsigned long long)membudget_guard_limit());
      deferred_dropins = true;
      continue;
    }
    deferred_dropins = false;
    int n = spool_rescan_new(sp, batcher_add_spooled, b);
    if (n > 0)
      log_event(LOG_INFO, "spool drop-ins picked up", "files=%d", n);
  }
  exit_code = 0;

out:
  if (hm)
    http_metrics_set_stopping(hm);
  ondemand_close(od); /* sessions answer with what they hold */
  listener_stop(ls);  /* no new frames; frames in flight finished */
  if (b) {
    batcher_shutdown(b, cfg.shutdown_grace_s);
    batcher_free(b);
  }
  listener_free(ls);
  if (hm)
    http_metrics_stop(hm);
  ondemand_free(od);
  free(token);
  for (size_t i = 0; i < nex; i++)
    exporter_destroy(ex[i]);
  for (size_t i = 0; i < CONFIG_MAX_EXPORTS; i++)
    free(target_names[i]);
  if (sp) {
    log_event(LOG_INFO, "sidecar stopped", "spool_files_left=%zu", spool_files(sp));
    spool_close(sp);
  }
  if (spool_lock >= 0)
    close(spool_lock);
  config_free(&cfg);
  return exit_code;
}
