/* One small interface for every exporter (file, s3, gs, pyroscope, otlp); each
 * lives in sidecar/exporters/exporter_<scheme>.c and is picked by the
 * --export URL's scheme. put() is called from the batcher thread; an
 * exporter may assume one call at a time. */
#ifndef SIDECAR_EXPORTER_H
#define SIDECAR_EXPORTER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"
#include "pushprof.pb-c.h"

enum export_result {
  EXPORT_OK = 0,
  EXPORT_RETRY = -1,     /* transient: retry with backoff */
  EXPORT_PERMANENT = -2, /* will never succeed: move to failed/ */
};

typedef struct export_object {
  const char *service;          /* raw service name (sanitize before using in paths/keys) */
  const char *node;             /* node name */
  const char *subdir;           /* bucket_subdirectory, may be "" */
  Pushprof__V1__Label **labels; /* process labels */
  size_t nlabels;
  int64_t start_ns, end_ns;
  const uint8_t *data; /* gzip-compressed merged pprof */
  size_t len;
  /* The same, uncompressed (OTLP conversion, Pyroscope splitting); NULL
   * unless the exporter sets wants_pprof. */
  const uint8_t *pprof;
  size_t pprof_len;
  const char *content_hash; /* hex SHA-256 of data: idempotent object names */
  uint32_t pid;             /* the pushing process when every push was one's, else 0 */
  /* exporter_profile_type of the batch: "heap"; "" or NULL for none (CPU
   * and any other layout) */
  const char *profile_type;
} export_object;

typedef struct exporter exporter;
struct exporter {
  const char *scheme;
  int (*put)(exporter *ex, const export_object *obj, char *err, size_t errlen);
  void (*destroy)(exporter *ex);
  void *impl;
  /* Set by put() on EXPORT_RETRY when the server asked for a pause
   * (Retry-After, in seconds); the batcher resets it to -1 before each
   * put() and waits at least this long before the next attempt. */
  int retry_after_s;
  /* Set by put() on EXPORT_PERMANENT to a static snake_case drop reason
   * (e.g. "too_old"); the batcher resets it to NULL before each put() and
   * counts the drop as "export_permanent" when it stays NULL. */
  const char *drop_reason;
  /* put() reads obj->pprof: the batcher gunzips the batch for it. Others
   * (file, s3, gs) store the gzip bytes as they are and get NULL. */
  bool wants_pprof;
};

typedef struct exporter_options {
  int max_dumps_retained; /* file: keep at most N objects per service dir (0 = all) */
  /* HTTP exporters (s3, gs, pyroscope); NULL/0 = default. */
  const char *ca_file;          /* --ca-file: PEM CA added to the system store */
  int tls_insecure_skip_verify; /* --tls-insecure-skip-verify */
  int http_timeout_ms;          /* --http-timeout: whole request (0 = 60 s) */
  const char *s3_region;        /* --s3-region (else AWS_REGION, AWS_DEFAULT_REGION) */
  const char *s3_endpoint;      /* --s3-endpoint (else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL) */
  int s3_path_style;            /* --s3-path-style; IP/localhost endpoints use it anyway */
  const char *gcs_endpoint;     /* --gcs-endpoint (else STORAGE_EMULATOR_HOST) */
  const char *pyroscope_api;    /* --pyroscope-api: "push" (default) or "ingest" */
  const char *pyroscope_tenant; /* --pyroscope-tenant (else PYROSCOPE_TENANT_ID) */
  uint64_t pyroscope_max_profile_bytes; /* --pyroscope-max-profile-bytes (0 = 4 MiB) */
  int pyroscope_max_samples;            /* --pyroscope-max-samples (0 = 16000) */
  const char *const *otlp_headers;      /* --otlp-header KEY=VALUE, each; may be NULL */
  size_t n_otlp_headers;
} exporter_options;

/* Creates the exporter for url; NULL with a message naming the URL and the fix. */
exporter *exporter_create(const char *url, const exporter_options *opts, char *err, size_t errlen);
void exporter_destroy(exporter *ex);
/* Replaces every byte outside [A-Za-z0-9._-] with '_', and "." / ".." /
 * "" with "_"; out always NUL-terminated. Used for path segments and keys. */
const char *exporter_sanitize(const char *in, char *out, size_t outlen);
/* The profile type a batch's names and series carry, from its sample
 * types: "heap" when one is Go's heap layout's (alloc_* or inuse_*), else
 * "" (CPU profiles, whose names never had a type, and any other layout). */
const char *exporter_profile_type(const Perftools__Profiles__Profile *p);
/* The name of a batch's file or object: "<UTC start>-<hash16>.pb.gz", or
 * "<UTC start>-<type>-<hash16>.pb.gz" when it has a profile type, e.g.
 * "20261122T101500Z-heap-3b73d9cb3e31b5ff.pb.gz"; a CPU batch and a heap
 * batch of one service and second differ, and a reader tells them apart
 * by name. 0, or -1 (start time out of range, or outlen too small). */
int exporter_object_name(const export_object *obj, char *out, size_t outlen);
/* Copies url to out without userinfo ("user:pass@") and without query or
 * fragment, so it can go in a log line. */
void exporter_redact_url(const char *url, char *out, size_t outlen);
#endif
