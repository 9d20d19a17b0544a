/* Picks the exporter for an --export URL by its scheme. */
#include "exporter.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "exporter_backends.h"

typedef struct backend {
  const char *scheme;
  exporter *(*create)(const char *url, const exporter_options *opts, char *err, size_t errlen);
} backend;

static const backend backends[] = {
    {"file", exporter_file_create},
    {"s3", exporter_s3_create},
    {"gs", exporter_gcs_create},
    {"pyroscope+http", exporter_pyroscope_create},
    {"pyroscope+https", exporter_pyroscope_create},
    {"otlp+http", exporter_otlp_create},
    {"otlp+https", exporter_otlp_create},
};

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
    return exporter_otlp_create(url, opts, err, errlen);
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
      return backends[i].create(url, opts, err, errlen);
  }
  snprintf(err, errlen, "unsupported export scheme \"%.*s\" in \"%.200s\"; supported: %s",
           (int)(slen > 32 ? 32 : slen), url, url, SUPPORTED);
  return NULL;
}

void exporter_destroy(exporter *ex) {
  if (ex && ex->destroy)
    ex->destroy(ex);
}
