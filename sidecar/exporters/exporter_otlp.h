/* The OTLP profiles exporter's pure parts, exposed for the unit tests:
 * where requests go (the --export URL and the OTEL_EXPORTER_OTLP_*
 * environment, as other OpenTelemetry exporters read it) and the header
 * list (OTEL_EXPORTER_OTLP_HEADERS syntax). Internal to sidecar/exporters/.
 * Error texts name the setting and the fix but never a header value (they
 * are credentials). */
#ifndef SIDECAR_EXPORTER_OTLP_H
#define SIDECAR_EXPORTER_OTLP_H
#include <stddef.h>

#define OTLP_DEFAULT_PATH "/v1development/profiles"
#define OTLP_DEFAULT_ENDPOINT "http://localhost:4318"
#define OTLP_HEADERS_MAX 64

/* The URL requests are POSTed to, malloc'ed, from --export url:
 *   otlp+http(s)://HOST:PORT         -> http(s)://HOST:PORT/v1development/profiles
 *   otlp+http(s)://HOST:PORT/PATH    -> http(s)://HOST:PORT/PATH (as is)
 *   otlp                             -> $OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT (as is),
 *                                       else $OTEL_EXPORTER_OTLP_ENDPOINT + the default path,
 *                                       else http://localhost:4318 + the default path.
 * NULL with err (no credentials in the URL, no query, a host required). */
char *otlp_endpoint(const char *url, char *err, size_t errlen);

typedef struct otlp_header {
  char *name, *value;
} otlp_header;

/* Parses "k1=v1,k2=v2" (values percent-decoded, spaces around entries
 * trimmed) from source (named in errors, e.g. "$OTEL_EXPORTER_OTLP_HEADERS")
 * into *h (a later entry with the same name, case-insensitive, replaces
 * the earlier one). one = 1: exactly one KEY=VALUE (a --otlp-header flag).
 * 0, or -1 with err naming source and the fix; *h stays consistent either
 * way (free with otlp_headers_free). */
int otlp_parse_headers(const char *s, const char *source, int one, otlp_header **h, size_t *n,
                       char *err, size_t errlen);
void otlp_headers_free(otlp_header *h, size_t n);
#endif
