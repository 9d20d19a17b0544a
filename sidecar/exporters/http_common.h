/* Shared libcurl plumbing for the HTTP exporters (s3, gs, pyroscope): one
 * reusable easy handle per client (keeps connections alive), TLS verified
 * by default, timeouts, Retry-After, and the one rule that maps an answer to
 * EXPORT_OK / EXPORT_RETRY / EXPORT_PERMANENT:
 *   2xx                                   -> OK
 *   408, 429, 5xx, timeouts, transport    -> RETRY
 *   other 4xx, 1xx/3xx (no redirects)     -> PERMANENT
 * Credentials go to libcurl only through http_request's username/password or
 * header fields; nothing here ever copies them into an error string or a log
 * line. A client is used by one thread at a time (the batcher's). */
#ifndef SIDECAR_HTTP_COMMON_H
#define SIDECAR_HTTP_COMMON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define HTTP_DEFAULT_TIMEOUT_MS 60000L
#define HTTP_MAX_RETRY_AFTER_S 3600 /* a Retry-After above this is clamped */

typedef struct http_options {
  const char *ca_file;       /* extra CA bundle (PEM) added to the system store; NULL = none */
  bool insecure_skip_verify; /* --tls-insecure-skip-verify: no peer/host check (warned at start) */
  long connect_timeout_ms;   /* 0 = HTTP_DEFAULT_CONNECT_TIMEOUT_MS */
  long timeout_ms;           /* whole request; 0 = HTTP_DEFAULT_TIMEOUT_MS */
} http_options;

typedef struct http_client http_client;

typedef struct http_request {
  const char *method;         /* "GET", "PUT", "POST" */
  const char *url;            /* no credentials in it */
  const char *const *headers; /* "Name: value" lines, NULL-terminated; may be NULL.
                                 Never an empty value ("Expect:"): old libcurl signs
                                 those wrongly. */
  const void *body;           /* sent with Content-Length (never chunked); may be NULL */
  size_t body_len;
  const char *aws_sigv4;     /* CURLOPT_AWS_SIGV4 provider string, or NULL */
  const char *username;      /* sigv4 access key id / basic-auth user, or NULL */
  const char *password;      /* sigv4 secret / basic-auth password, or NULL */
  size_t max_response_bytes; /* body kept at most (rest discarded); 0 = 64 KiB */
  const char *form_field;    /* POST body as multipart/form-data (libcurl mime): one file */
  const char *form_filename; /* part named form_field holding body; NULL = plain body */
} http_request;

typedef struct http_response {
  long status;          /* 0 when no HTTP answer came (see transport_error) */
  bool transport_error; /* connection refused/reset, timeout, TLS failure, ... */
  bool timed_out;
  int retry_after_s; /* from Retry-After, clamped; -1 if absent or unparsable */
  char *body;        /* NUL-terminated, at most max_response_bytes; may be NULL */
  size_t body_len;
  char detail[512]; /* the transport error in words (no credentials), "" if none */
} http_response;

/* Creates a client; "who" names the exporter in messages ("s3", "gs").
 * Logs a warning when TLS verification is off. NULL with err on failure
 * (e.g. an unreadable --ca-file). Thread-safe to call; curl_global_init runs
 * once per process. */
http_client *http_client_new(const http_options *o, const char *who, char *err, size_t errlen);
void http_client_free(http_client *c);

/* Performs one request. Returns 0 when an HTTP answer arrived (any status),
 * -1 on a transport error (rs->transport_error set, rs->detail says what).
 * rs must be released with http_response_free either way. */
int http_perform(http_client *c, const http_request *rq, http_response *rs);
void http_response_free(http_response *rs);

/* EXPORT_OK / EXPORT_RETRY / EXPORT_PERMANENT for rs (the rule above). */
int http_classify(const http_response *rs);
int http_classify_status(long status);

/* Writes a one-line reason for a non-2xx answer or transport failure:
 *   "PUT https://host/path: HTTP 403: AccessDenied: Access Denied"
 * The URL loses its userinfo and query; the body is summarized (S3 XML
 * Code/Message, JSON error.message, else its first printable bytes). */
void http_describe(const char *method, const char *url, const http_response *rs, char *err,
                   size_t errlen);

/* Retry-After value (delta-seconds or an HTTP-date, relative to now) in
 * seconds, clamped to [0, HTTP_MAX_RETRY_AFTER_S]; -1 if unparsable. */
int http_parse_retry_after(const char *value, time_t now);

/* Replaces every occurrence of secret in s (in place) with "[redacted]"-like
 * stars; a no-op for NULL/short secrets. For any text echoed by a server. */
void http_scrub(char *s, const char *secret);

/* Percent-encodes in (RFC 3986 unreserved kept; '/' kept when keep_slash).
 * Returns 0, or -1 if out is too small. */
int http_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen);

/* Lowercase hex SHA-256 of data into out[65]. 0 or -1. */
int http_sha256_hex(const void *data, size_t len, char out[65]);
#endif
