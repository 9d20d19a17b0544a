/* Picks the exporter for an --export URL by its scheme. */
#include "exporter.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "exporter_backends.h"
#include "http_module.h"

/* file:// is built in; the others are in pushprof-sidecar-http.so. */
enum backend_kind { BK_FILE, BK_S3, BK_GS, BK_PYROSCOPE, BK_OTLP };

typedef struct backend {
  const char *scheme;
  enum backend_kind kind;
} backend;

static const backend backends[] = {
    {"file", BK_FILE},
    {"s3", BK_S3},
    {"gs", BK_GS},
    {"pyroscope+http", BK_PYROSCOPE},
    {"pyroscope+https", BK_PYROSCOPE},
    {"otlp+http", BK_OTLP},
    {"otlp+https", BK_OTLP},
};

static exporter *create(const backend *be, const char *url, const exporter_options *opts, char *err,
                        size_t errlen) {
  if (be->kind == BK_FILE)
    return exporter_file_create(url, opts, err, errlen);
  const http_module *m = http_module_get(be->scheme, err, errlen);
  if (!m)
    return NULL;
  switch (be->kind) {
  case BK_S3:
    return m->s3(url, opts, err, errlen);
  case BK_GS:
    return m->gs(url, opts, err, errlen);
  case BK_PYROSCOPE:
    return m->pyroscope(url, opts, err, errlen);
  case BK_OTLP:
  default:
    return m->otlp(url, opts, err, errlen);
  }
}

#define SUPPORTED                                                                                  \
  "file:///DIR, s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, pyroscope+http(s)://HOST:PORT, "           \
  "otlp+http(s)://HOST:PORT[/PATH], otlp (endpoint from $OTEL_EXPORTER_OTLP_ENDPOINT)"

exporter *exporter_create(const char *url, const exporter_options *opts, char *err, size_t errlen) {
  static const exporter_options defaults = {0};
  if (!opts)
    opts = &defaults;
  if (!url || !*url) {
    snprintf(err, errlen,
             "no export URL given (set --export, e.g. --export file:///var/lib/pushprof/out); "
             "supported: %s",
             SUPPORTED);
    return NULL;
  }
  if (strcasecmp(url, "otlp") == 0)
    return create(&(const backend){"otlp", BK_OTLP}, url, opts, err, errlen);
  const char *sep = strstr(url, "://");
  if (!sep) {
    snprintf(err, errlen,
             "export URL \"%.200s\" has no scheme (write it as scheme://...); supported: %s", url,
             SUPPORTED);
    return NULL;
  }
  size_t slen = (size_t)(sep - url);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    if (strlen(backends[i].scheme) == slen && strncasecmp(url, backends[i].scheme, slen) == 0)
      return create(&backends[i], url, opts, err, errlen);
  }
  snprintf(err, errlen, "unsupported export scheme \"%.*s\" in \"%.200s\"; supported: %s",
           (int)(slen > 32 ? 32 : slen), url, url, SUPPORTED);
  return NULL;
}

void exporter_destroy(exporter *ex) {
  if (ex && ex->destroy)
    ex->destroy(ex);
}
