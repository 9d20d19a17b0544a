/* /metrics (Prometheus text from metrics_render), /healthz and the
 * on-demand profile API (/profile/cpu, /profile/heap: ondemand.h) over
 * HTTP, served by libmicrohttpd, a thread per connection (a POST waits for
 * its session's window), at most HTTP_MAX_CONNECTIONS at once. */
#ifndef SIDECAR_HTTP_METRICS_H
#define SIDECAR_HTTP_METRICS_H
#include <stddef.h>

#include "ondemand.h"

#define HTTP_MAX_CONNECTIONS 16
#define HTTP_BODY_MAX 16384    /* a request body: beyond it 413 */
#define HTTP_IDLE_TIMEOUT_S 10 /* a connection silent this long is closed */

typedef struct http_metrics http_metrics;

typedef struct http_serve_options {
  ondemand *od;      /* NULL: /profile/ answers 404 */
  const char *token; /* bearer token /profile/ requires; NULL: none */
} http_serve_options;

/* http_metrics_start with the on-demand API. Without a token, /profile/
 * answers 403 unless addr is a loopback address: profiles reveal code and
 * labels. */
http_metrics *http_metrics_start_with(const char *addr, const http_serve_options *o, char *err,
                                      size_t errlen);
/* 1 if HOST of HOST:PORT is a loopback address (127.0.0.0/8, ::1, localhost). */
int http_addr_is_loopback(const char *addr);

/* addr is HOST:PORT ("[::1]:9464", "0.0.0.0:9464"; ":9464" is loopback;
 * port 0 picks a free one). NULL with err naming the address and the fix. */
http_metrics *http_metrics_start(const char *addr, char *err, size_t errlen);
/* The bound port (useful with port 0). */
int http_metrics_port(const http_metrics *h);
/* /healthz answers 503 from now on (shutting down). Thread-safe. */
void http_metrics_set_stopping(http_metrics *h);
void http_metrics_stop(http_metrics *h);
#endif
