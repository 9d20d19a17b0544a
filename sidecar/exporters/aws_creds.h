/* AWS credentials for the S3 exporter, from the first source configured in
 * the environment, in the AWS SDKs' order:
 *   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
 *   2. IRSA: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE -> STS
 *      AssumeRoleWithWebIdentity (endpoint AWS_ENDPOINT_URL_STS, else
 *      https://sts.REGION.amazonaws.com); the token file is re-read on every
 *      refresh (kubelet rotates it)
 *   3. EKS Pod Identity: AWS_CONTAINER_CREDENTIALS_FULL_URI with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (or _TOKEN) as Authorization
 * Temporary credentials are refreshed before they expire (at the latest 5
 * minutes before, or half-way through a shorter lifetime). Secrets live only
 * in this object and are wiped when replaced or freed; nothing here logs or
 * returns them in an error. Not thread-safe: one user (the batcher thread). */
#ifndef SIDECAR_AWS_CREDS_H
#define SIDECAR_AWS_CREDS_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "http_common.h"

typedef struct aws_credentials {
  char access_key_id[256];
  char secret_access_key[256];
  char session_token[4096]; /* "" if none */
  time_t expiration;        /* 0: does not expire */
} aws_credentials;

typedef struct aws_creds aws_creds;

/* Picks the source from the environment; NULL with err (naming the
 * variables to set) if none is configured or one is half-configured. */
aws_creds *aws_creds_new(const http_options *ho, const char *region, char *err, size_t errlen);
/* Fixed keys (GCS HMAC keys through the S3-compatible API); source "env". */
aws_creds *aws_creds_new_static(const char *access_key_id, const char *secret, char *err,
                                size_t errlen);
void aws_creds_free(aws_creds *p);
/* "env", "irsa", "pod-identity" or "static" (aws_creds_new_static). */
const char *aws_creds_source(const aws_creds *p);
/* True for sources that hand out expiring credentials (irsa, pod-identity). */
bool aws_creds_temporary(const aws_creds *p);

/* Current credentials, fetched or refreshed first if needed. Returns
 * EXPORT_OK (and *out, valid until the next call), EXPORT_RETRY (STS or the
 * agent unreachable / 5xx) or EXPORT_PERMANENT (e.g. a refused token), with
 * err free of secrets. */
int aws_creds_get(aws_creds *p, const aws_credentials **out, char *err, size_t errlen);
/* Forgets temporary credentials (a server said they expired). */
void aws_creds_invalidate(aws_creds *p);

/* Parsers, exposed for the unit tests. 0 or -1 with err. */
int aws_creds_parse_sts(const char *xml, size_t len, aws_credentials *out, char *err,
                        size_t errlen);
int aws_creds_parse_container(const char *json, size_t len, aws_credentials *out, char *err,
                              size_t errlen);
/* "2026-11-22T10:00:00Z" (fractions and +00:00 accepted) -> epoch. 0 or -1. */
int aws_parse_iso8601(const char *s, time_t *out);
/* When to refresh credentials that expire at exp, obtained at now. */
time_t aws_creds_refresh_at(time_t now, time_t exp);
#endif
