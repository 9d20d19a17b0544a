/* Process-wide metrics: plain counters and gauges are atomics; the reason-
 * labelled families (rejects, drops) live in a small table under a mutex,
 * since new reasons appear rarely and the table stays tiny. */
#include "metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "membudget.h"

typedef struct metric_desc {
  const char *name;
  const char *help;
} metric_desc;

static const metric_desc counter_desc[M_COUNTER_MAX] = {
    [M_PUSHES_RECEIVED] = {"pushprof_pushes_received_total", "Push frames read from clients."},
    [M_PUSHES_ACCEPTED] = {"pushprof_pushes_accepted_total",
                           "Pushes acknowledged after they were durable in the spool."},
    [M_PUSH_BYTES] = {"pushprof_push_bytes_total", "Bytes of accepted push frames."},
    [M_BATCHES_EXPORTED] = {"pushprof_batches_exported_total",
                            "Merged batches the exporter accepted."},
    [M_EXPORT_BYTES] = {"pushprof_export_bytes_total", "Compressed bytes of exported batches."},
    [M_EXPORT_FAILURES] = {"pushprof_export_failures_total",
                           "Export attempts that failed (transient or permanent)."},
    [M_EXPORT_RETRIES] = {"pushprof_export_retries_total",
                          "Export attempts scheduled again after a transient failure."},
    [M_SPOOL_QUARANTINED] = {"pushprof_spool_quarantined_total",
                             "Torn or corrupt spool files moved to quarantine/."},
    [M_CONNECTIONS] = {"pushprof_connections_total", "Client connections accepted."},
    [M_PUSHES_DEDUPLICATED] = {"pushprof_pushes_deduplicated_total",
                               "Second copies of a push already held or exported, deleted."},
    [M_PUSHES_EMPTY] = {"pushprof_pushes_empty_total",
                        "Processes that exited without a sample: counted, nothing stored."},
    [M_CONN_THREADS] = {"pushprof_connection_threads_started_total",
                        "Threads started to serve connections (one serves connection after "
                        "connection while they keep coming)."},
    [M_MANIFESTS_SET_ASIDE] = {"pushprof_batch_manifests_set_aside_total",
                               "Batch manifests whose payload could not be read, set aside as "
                               ".bad; a manifest is its batch's only copy, so their pushes "
                               "were lost."},
};

static const metric_desc gauge_desc[G_GAUGE_MAX] = {
    [G_SPOOL_BYTES] = {"pushprof_spool_bytes",
                       "Bytes counted against --max-spool-bytes: pending pushes (journal "
                       "records and files) and pending batches' manifests."},
    [G_SPOOL_FILES] = {"pushprof_spool_files",
                       "Pushes not yet exported: held in the journal, in files, or in "
                       "pending batches' manifests."},
    [G_OPEN_CONNECTIONS] = {"pushprof_open_connections", "Client connections open now."},
    [G_CONN_THREADS] = {"pushprof_connection_threads",
                        "Threads serving a connection or waiting for the next one."},
    [G_PENDING_BATCHES] = {"pushprof_pending_batches", "Batches not yet exported."},
    [G_OLDEST_PENDING_AGE] = {"pushprof_oldest_pending_age_seconds",
                              "Age of the oldest push not yet exported."},
    [G_MEMORY_FRAMES] = {"pushprof_memory_frames_bytes",
                         "Bytes of push frames being read or handled (budgeted)."},
    [G_MEMORY_BATCHES] = {"pushprof_memory_batches_bytes",
                          "Bytes the batcher holds: profiles being merged, payloads not yet on "
                          "disk, the index of pending batches (budgeted)."},
    [G_MEMORY_BUDGET] = {"pushprof_memory_budget_bytes",
                         "The memory budget (--max-memory); past it new pushes are told to retry."},
    [G_MEMORY_FIXED] = {"pushprof_memory_fixed_bytes",
                        "Resident memory measured at start-up once the exporters were loaded "
                        "(code, libraries, threads); --max-memory less this is what frames and "
                        "batches may use."},
    [G_MEMORY_RSS_LIMIT] = {"pushprof_memory_rss_limit_bytes",
                            "Resident memory above which new pushes wait and are then told to "
                            "retry (0: no guard, as in sanitizer builds)."},
    [G_SUBSCRIBERS] = {"pushprof_ondemand_subscribers",
                       "Profiled processes subscribed to on-demand profiles now."},
};

static _Atomic uint64_t counters[M_COUNTER_MAX];
static _Atomic int64_t gauges[G_GAUGE_MAX];

enum { FAMILY_REJECTED, FAMILY_DROPS, FAMILY_EXPORT_FAILURES, FAMILY_EVICTED, FAMILY_MAX };
static const metric_desc family_desc[FAMILY_MAX] = {
    [FAMILY_REJECTED] = {"pushprof_pushes_rejected_total",
                         "Pushes refused with an error reply, by reason."},
    [FAMILY_DROPS] = {"pushprof_drops_total", "Data given up on after it was accepted, by reason."},
    [FAMILY_EXPORT_FAILURES] = {"pushprof_export_failures_by_class_total",
                                "Failed HTTP requests of the exporters, by class."},
    [FAMILY_EVICTED] = {"pushprof_connections_evicted_total",
                        "Connections closed to admit a new one at the connection limit, by "
                        "reason."},
};

#define REASONS_MAX 64 /* further distinct reasons are folded into "other" */

typedef struct reason_entry {
  int family;
  const char *reason; /* static string */
  uint64_t value;
} reason_entry;

static pthread_mutex_t reasons_mu = PTHREAD_MUTEX_INITIALIZER;
static reason_entry reasons[REASONS_MAX];
static size_t nreasons;

static const metric_desc target_desc[MT_COUNTER_MAX] = {
    [MT_BATCHES_EXPORTED] = {"pushprof_target_batches_exported_total",
                             "Batches this export target accepted."},
    [MT_EXPORT_FAILURES] = {"pushprof_target_export_failures_total",
                            "Export attempts to this target that failed (transient or permanent)."},
    [MT_EXPORT_RETRIES] = {"pushprof_target_export_retries_total",
                           "Export attempts to this target scheduled again after a failure."},
    [MT_BATCHES_REFUSED] = {"pushprof_target_batches_refused_total",
                            "Batches this target refused for good (their pushes go to failed/)."},
};

typedef struct target_entry {
  char *name;
  _Atomic uint64_t c[MT_COUNTER_MAX];
  _Atomic int64_t pending;
} target_entry;

static pthread_mutex_t targets_mu = PTHREAD_MUTEX_INITIALIZER;
static target_entry targets[METRICS_MAX_TARGETS];
static _Atomic int ntargets;

int metrics_target_register(const char *name) {
  pthread_mutex_lock(&targets_mu);
  int n = atomic_load(&ntargets), id = -1;
  for (int i = 0; i < n; i++)
    if (strcmp(targets[i].name, name ? name : "") == 0)
      id = i; /* the same target again (a restarted batcher in tests) */
  if (id < 0 && n < METRICS_MAX_TARGETS && (targets[n].name = strdup(name ? name : ""))) {
    id = n;
    atomic_store(&ntargets, n + 1);
  }
  pthread_mutex_unlock(&targets_mu);
  return id;
}

void metrics_target_add(int target, metric_target_counter c, uint64_t n) {
  if (target < 0 || target >= atomic_load(&ntargets) || (unsigned)c >= MT_COUNTER_MAX)
    return;
  atomic_fetch_add_explicit(&targets[target].c[c], n, memory_order_relaxed);
}

void metrics_target_set_pending(int target, int64_t batches) {
  if (target < 0 || target >= atomic_load(&ntargets))
    return;
  atomic_store_explicit(&targets[target].pending, batches, memory_order_relaxed);
}

uint64_t metrics_target_value(const char *name, metric_target_counter c) {
  int n = atomic_load(&ntargets);
  for (int i = 0; name && i < n && (unsigned)c < MT_COUNTER_MAX; i++)
    if (strcmp(targets[i].name, name) == 0)
      return atomic_load(&targets[i].c[c]);
  return 0;
}

void metrics_add(metric_counter c, uint64_t n) {
  if ((unsigned)c >= M_COUNTER_MAX)
    return;
  atomic_fetch_add_explicit(&counters[c], n, memory_order_relaxed);
}

void metrics_set(metric_gauge g, int64_t v) {
  if ((unsigned)g >= G_GAUGE_MAX)
    return;
  atomic_store_explicit(&gauges[g], v, memory_order_relaxed);
}

static void reason_add(int family, const char *reason, uint64_t n) {
  if (!reason || !*reason)
    reason = "unknown";
  pthread_mutex_lock(&reasons_mu);
  size_t i;
  for (i = 0; i < nreasons; i++)
    if (reasons[i].family == family && strcmp(reasons[i].reason, reason) == 0)
      break;
  if (i == nreasons) {
    if (nreasons >= REASONS_MAX - FAMILY_MAX) {
      /* Keep one slot per family for "other" so nothing goes uncounted. */
      reason = "other";
      for (i = 0; i < nreasons; i++)
        if (reasons[i].family == family && strcmp(reasons[i].reason, reason) == 0)
          break;
    }
    if (i == nreasons && nreasons < REASONS_MAX) {
      reasons[nreasons].family = family;
      reasons[nreasons].reason = reason;
      reasons[nreasons].value = 0;
      nreasons++;
    }
  }
  if (i < nreasons)
    reasons[i].value += n;
  pthread_mutex_unlock(&reasons_mu);
}

void metrics_reject(const char *reason) {
  reason_add(FAMILY_REJECTED, reason, 1);
}

void metrics_drop(const char *reason, uint64_t n) {
  reason_add(FAMILY_DROPS, reason, n);
}

void metrics_export_failure(const char *cls) {
  reason_add(FAMILY_EXPORT_FAILURES, cls, 1);
}

void metrics_evict(const char *reason) {
  reason_add(FAMILY_EVICTED, reason, 1);
}

uint64_t metrics_reason_value(const char *family, const char *reason) {
  int fam = -1;
  uint64_t v = 0;
  if (!family || !reason)
    return 0;
  for (int f = 0; f < FAMILY_MAX; f++) {
    /* Accept the full metric name or the short one ("rejected", "drops"). */
    if (strcmp(family, family_desc[f].name) == 0 ||
        (f == FAMILY_REJECTED &&
         (strcmp(family, "rejected") == 0 || strcmp(family, "reject") == 0)) ||
        (f == FAMILY_DROPS && (strcmp(family, "drops") == 0 || strcmp(family, "drop") == 0)) ||
        (f == FAMILY_EVICTED && strcmp(family, "evicted") == 0))
      fam = f;
  }
  if (fam < 0)
    return 0;
  pthread_mutex_lock(&reasons_mu);
  for (size_t i = 0; i < nreasons; i++)
    if (reasons[i].family == fam && strcmp(reasons[i].reason, reason) == 0)
      v = reasons[i].value;
  pthread_mutex_unlock(&reasons_mu);
  return v;
}

typedef struct strbuf {
  char *p;
  size_t len, cap;
  int oom;
} strbuf;

static void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *sb, const char *fmt, ...) {
  if (sb->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sb->p + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      sb->oom = 1;
      return;
    }
    if ((size_t)n < sb->cap - sb->len) {
      sb->len += (size_t)n;
      return;
    }
    size_t ncap = sb->cap * 2 + (size_t)n + 1;
    char *np = realloc(sb->p, ncap);
    if (!np) {
      sb->oom = 1;
      return;
    }
    sb->p = np;
    sb->cap = ncap;
  }
}

/* Label values are static snake_case strings, but escape anyway so a bad
 * caller cannot break the exposition format. */
static void sb_label_value(strbuf *sb, const char *v) {
  for (const char *c = v; *c; c++) {
    if (*c == '\\' || *c == '"')
      sb_printf(sb, "\\%c", *c);
    else if (*c == '\n')
      sb_printf(sb, "\\n");
    else
      sb_printf(sb, "%c", *c);
  }
}

char *metrics_render(void) {
  strbuf sb = {malloc(4096), 0, 4096, 0};
  if (!sb.p)
    return NULL;
  sb.p[0] = '\0';
  for (int c = 0; c < M_COUNTER_MAX; c++) {
    sb_printf(&sb, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", counter_desc[c].name,
              counter_desc[c].help, counter_desc[c].name, counter_desc[c].name,
              atomic_load_explicit(&counters[c], memory_order_relaxed));
  }
  for (int g = 0; g < G_GAUGE_MAX; g++) {
    sb_printf(&sb, "# HELP %s %s\n# TYPE %s gauge\n%s %" PRId64 "\n", gauge_desc[g].name,
              gauge_desc[g].help, gauge_desc[g].name, gauge_desc[g].name,
              atomic_load_explicit(&gauges[g], memory_order_relaxed));
  }
  sb_printf(&sb,
            "# HELP pushprof_memory_in_use_bytes Budgeted memory in use: frames + batches.\n"
            "# TYPE pushprof_memory_in_use_bytes gauge\npushprof_memory_in_use_bytes %" PRId64
            "\n# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %" PRId64
            "\n",
            atomic_load_explicit(&gauges[G_MEMORY_FRAMES], memory_order_relaxed) +
                atomic_load_explicit(&gauges[G_MEMORY_BATCHES], memory_order_relaxed),
            membudget_rss());
  pthread_mutex_lock(&reasons_mu);
  for (int f = 0; f < FAMILY_MAX; f++) {
    sb_printf(&sb, "# HELP %s %s\n# TYPE %s counter\n", family_desc[f].name, family_desc[f].help,
              family_desc[f].name);
    for (size_t i = 0; i < nreasons; i++) {
      if (reasons[i].family != f)
        continue;
      sb_printf(&sb, "%s{reason=\"", family_desc[f].name);
      sb_label_value(&sb, reasons[i].reason);
      sb_printf(&sb, "\"} %" PRIu64 "\n", reasons[i].value);
    }
  }
  pthread_mutex_unlock(&reasons_mu);
  int nt = atomic_load(&ntargets);
  for (int c = 0; c < MT_COUNTER_MAX; c++) {
    sb_printf(&sb, "# HELP %s %s\n# TYPE %s counter\n", target_desc[c].name, target_desc[c].help,
              target_desc[c].name);
    for (int i = 0; i < nt; i++) {
      sb_printf(&sb, "%s{target=\"", target_desc[c].name);
      sb_label_value(&sb, targets[i].name);
      sb_printf(&sb, "\"} %" PRIu64 "\n",
                atomic_load_explicit(&targets[i].c[c], memory_order_relaxed));
    }
  }
  sb_printf(&sb, "# HELP pushprof_target_pending_batches Batches this target has not taken yet.\n"
                 "# TYPE pushprof_target_pending_batches gauge\n");
  for (int i = 0; i < nt; i++) {
    sb_printf(&sb, "pushprof_target_pending_batches{target=\"");
    sb_label_value(&sb, targets[i].name);
    sb_printf(&sb, "\"} %" PRId64 "\n",
              atomic_load_explicit(&targets[i].pending, memory_order_relaxed));
  }
  if (sb.oom) {
    free(sb.p);
    return NULL;
  }
  return sb.p;
}
