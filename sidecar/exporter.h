/* One small interface for every exporter (file, s3, gs, pyroscope); each
 * lives in sidecar/exporters/exporter_<scheme>.c and is picked by the
 * --export URL's scheme. put() is called from the batcher thread; an
 * exporter may assume one call at a time. */
#ifndef SIDECAR_EXPORTER_H
#define SIDECAR_EXPORTER_H
#include <stddef.h>
#include <stdint.h>

#include "pushprof.pb-c.h"

enum export_result {
  EXPORT_OK = 0,
  EXPORT_RETRY = -1,     /* transient: retry with backoff */
  EXPORT_PERMANENT = -2, /* will never succeed: move to failed/ */
};

typedef struct export_object {
  const char *service;   /* raw service name (sanitize before using in paths/keys) */
  const char *node;      /* node name */
  const char *subdir;    /* bucket_subdirectory, may be "" */
  Pushprof__V1__Label **labels; /* process labels */
  size_t nlabels;
  int64_t start_ns, end_ns;
  const uint8_t *data;   /* gzip-compressed merged pprof */
  size_t len;
  const uint8_t *pprof;  /* the same, uncompressed (Pyroscope splitting) */
  size_t pprof_len;
  const char *content_hash; /* hex SHA-256 of data: idempotent object names */
} export_object;

typedef struct exporter exporter;
struct exporter {
  const char *scheme;
  int (*put)(exporter *ex, const export_object *obj, char *err, size_t errlen);
  void (*destroy)(exporter *ex);
  void *impl;
};

typedef struct exporter_options {
  int max_dumps_retained; /* file: keep at most N objects per service dir (0 = all) */
} exporter_options;

/* Creates the exporter for url; NULL with a message naming the URL and the fix. */
exporter *exporter_create(const char *url, const exporter_options *opts, char *err, size_t errlen);
void exporter_destroy(exporter *ex);
/* Replaces every byte outside [A-Za-z0-9._-] with '_', and "." / ".." /
 * "" with "_"; out always NUL-terminated. Used for path segments and keys. */
const char *exporter_sanitize(const char *in, char *out, size_t outlen);
#endif
