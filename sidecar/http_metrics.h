/* /metrics (Prometheus text from metrics_render) and /healthz over HTTP,
 * served by libmicrohttpd on its own thread. */
#ifndef SIDECAR_HTTP_METRICS_H
#define SIDECAR_HTTP_METRICS_H
#include <stddef.h>

typedef struct http_metrics http_metrics;

/* addr is HOST:PORT ("[::1]:9464", "0.0.0.0:9464"; port 0 picks a free
 * one). NULL with err naming the address and the fix. */
http_metrics *http_metrics_start(const char *addr, char *err, size_t errlen);
/* The bound port (useful with port 0). */
int http_metrics_port(const http_metrics *h);
/* /healthz answers 503 from now on (shutting down). Thread-safe. */
void http_metrics_set_stopping(http_metrics *h);
void http_metrics_stop(http_metrics *h);
#endif
