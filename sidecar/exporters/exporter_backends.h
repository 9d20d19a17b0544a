/* Constructors of the built-in exporters, dispatched by exporter_create() on
 * the --export URL's scheme. Internal to sidecar/exporters/. */
#ifndef SIDECAR_EXPORTER_BACKENDS_H
#define SIDECAR_EXPORTER_BACKENDS_H
#include <stdbool.h>

#include "exporter.h"

typedef struct aws_creds aws_creds;

/* file:///ABSOLUTE/DIR (exporter_file.c). */
exporter *exporter_file_create(const char *url, const exporter_options *opts, char *err,
                               size_t errlen);

/* s3://BUCKET/PREFIX (exporter_s3.c). */
exporter *exporter_s3_create(const char *url, const exporter_options *opts, char *err,
                             size_t errlen);
/* gs://BUCKET/PREFIX (exporter_gcs.c). */
exporter *exporter_gcs_create(const char *url, const exporter_options *opts, char *err,
                              size_t errlen);

/* The S3-compatible core shared by s3 and gs (s3compat.c). */
/* An S3-API exporter on endpoint; takes ownership of creds on success. gcs:
 * send x-goog-if-generation-match: 0 and take 412 as "already stored". */
exporter *s3compat_exporter_new(const char *scheme, const char *bucket, const char *prefix,
                                const char *endpoint, const char *region, bool path_style,
                                aws_creds *creds, bool gcs, const exporter_options *opts, char *err,
                                size_t errlen);
/* The URL objects go under: ENDPOINT/BUCKET (path style: forced, or for
 * IP/localhost endpoints and dotted bucket names) or SCHEME://BUCKET.HOST.
 * 0, or -1 if endpoint is not http(s)://HOST[:PORT][/]. */
int exporter_bucket_base_url(const char *endpoint, const char *bucket, bool path_style, char *out,
                             size_t outlen);
/* PREFIX/<subdir...>/<node>/<service>/<exporter_object_name>, every
 * segment sanitized to [A-Za-z0-9._-]. 0, or -1 if it does not fit. */
int exporter_object_key(const char *prefix, const export_object *obj, char *out, size_t outlen);
/* "SCHEME://BUCKET/PREFIX" -> malloc'ed bucket and prefix (no trailing '/'). */
int exporter_parse_bucket_url(const char *url, const char *scheme, char **bucket, char **prefix,
                              char *err, size_t errlen);
/* pyroscope+http(s)://HOST:PORT[/PREFIX] (exporter_pyroscope.c). */
exporter *exporter_pyroscope_create(const char *url, const exporter_options *opts, char *err,
                                    size_t errlen);
/* otlp+http(s)://HOST:PORT[/PATH] or "otlp" (exporter_otlp.c). */
exporter *exporter_otlp_create(const char *url, const exporter_options *opts, char *err,
                               size_t errlen);
#endif
