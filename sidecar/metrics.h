/* Process-wide counters and gauges rendered as Prometheus text on /metrics.
 * All functions are thread-safe. Reason strings must be static (string
 * literals) and in snake_case: they become label values. */
#ifndef SIDECAR_METRICS_H
#define SIDECAR_METRICS_H
#include <stdint.h>

typedef enum metric_counter {
  M_PUSHES_RECEIVED,     /* pushprof_pushes_received_total: frames read */
  M_PUSHES_ACCEPTED,     /* pushprof_pushes_accepted_total: acked (durable) */
  M_PUSH_BYTES,          /* pushprof_push_bytes_total */
  M_BATCHES_EXPORTED,    /* pushprof_batches_exported_total */
  M_EXPORT_BYTES,        /* pushprof_export_bytes_total */
  M_EXPORT_FAILURES,     /* pushprof_export_failures_total */
  M_EXPORT_RETRIES,      /* pushprof_export_retries_total */
  M_SPOOL_QUARANTINED,   /* pushprof_spool_quarantined_total */
  M_CONNECTIONS,         /* pushprof_connections_total */
  M_PUSHES_DEDUPLICATED, /* pushprof_pushes_deduplicated_total: a second copy of a push */
  M_PUSHES_EMPTY,        /* pushprof_pushes_empty_total: no_samples pushes (counted only) */
  M_CONN_THREADS,        /* pushprof_connection_threads_started_total */
  M_MANIFESTS_SET_ASIDE, /* pushprof_batch_manifests_set_aside_total: unreadable, renamed .bad */
  M_COUNTER_MAX
} metric_counter;

typedef enum metric_gauge {
  G_SPOOL_BYTES,        /* pushprof_spool_bytes */
  G_SPOOL_FILES,        /* pushprof_spool_files */
  G_OPEN_CONNECTIONS,   /* pushprof_open_connections */
  G_CONN_THREADS,       /* pushprof_connection_threads: serving or waiting for a connection */
  G_PENDING_BATCHES,    /* pushprof_pending_batches */
  G_OLDEST_PENDING_AGE, /* pushprof_oldest_pending_age_seconds */
  G_MEMORY_FRAMES,      /* pushprof_memory_frames_bytes: frames being read or handled */
  G_MEMORY_BATCHES,     /* pushprof_memory_batches_bytes: profiles being merged, payloads, index */
  G_MEMORY_BUDGET,      /* pushprof_memory_budget_bytes: --max-memory */
  G_MEMORY_FIXED,       /* pushprof_memory_fixed_bytes: RSS once the exporters were up */
  G_MEMORY_RSS_LIMIT,   /* pushprof_memory_rss_limit_bytes: new pushes wait above it */
  G_SUBSCRIBERS,        /* pushprof_ondemand_subscribers: processes open to on-demand profiles */
  G_GAUGE_MAX
} metric_gauge;

void metrics_add(metric_counter c, uint64_t n);
void metrics_set(metric_gauge g, int64_t v);
/* pushprof_pushes_rejected_total{reason="..."} */
void metrics_reject(const char *reason);
/* pushprof_drops_total{reason="..."}: data given up on (not refused at the door) */
void metrics_drop(const char *reason, uint64_t n);
/* pushprof_export_failures_by_class_total{reason="..."}: one failed HTTP
 * request of an exporter (http_5xx, http_429, http_408, http_4xx, timeout,
 * tls, connection, ...). */
void metrics_export_failure(const char *cls);
/* pushprof_connections_evicted_total{reason="..."}: connections the listener
 * closed to make room for a new one while at --max-connections (idle: no
 * byte of a frame yet; slow_frame: a frame started but not finished). */
void metrics_evict(const char *reason);
/* Per export target (one per --export): labelled {target="..."} families
 * pushprof_target_batches_exported_total, _export_failures_total,
 * _export_retries_total, _batches_refused_total and the gauge
 * pushprof_target_pending_batches. */
typedef enum metric_target_counter {
  MT_BATCHES_EXPORTED,
  MT_EXPORT_FAILURES,
  MT_EXPORT_RETRIES,
  MT_BATCHES_REFUSED, /* refused for good */
  MT_COUNTER_MAX
} metric_target_counter;
#define METRICS_MAX_TARGETS 16
/* Registers a target named name (a URL without credentials; copied); its id,
 * or -1 when the table is full (its counts then go nowhere). */
int metrics_target_register(const char *name);
void metrics_target_add(int target, metric_target_counter c, uint64_t n);
void metrics_target_set_pending(int target, int64_t batches);
/* Test helper: a target counter's value by target name (0 if unknown). */
uint64_t metrics_target_value(const char *name, metric_target_counter c);

/* Renders everything, plus pushprof_memory_in_use_bytes (frames + batches)
 * and process_resident_memory_bytes (/proc/self/statm); malloc'ed, caller frees. NULL on ENOMEM. */
char *metrics_render(void);
/* Test helper: the current value of a rejected/drop/evicted reason (0 if never seen). */
uint64_t metrics_reason_value(const char *family, const char *reason);
#endif
