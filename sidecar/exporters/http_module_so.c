/* The entry point of pushprof-sidecar-http.so, and the log and metrics
 * functions the exporters call, forwarded to the sidecar's own (the module
 * has no copy of their state: one log stream, one set of counters). */
#include <stdarg.h>
#include <stddef.h>

#include "http_module.h"
#include "log.h"
#include "metrics.h"

static const http_module_host *host;

__attribute__((visibility("default"))) const http_module *
pushprof_sidecar_http_module(const http_module_host *h);

const http_module *pushprof_sidecar_http_module(const http_module_host *h) {
  if (!h || h->abi != HTTP_MODULE_ABI || h->size != sizeof(http_module_host))
    return NULL;
  host = h;
  return &http_module_exporters;
}

void log_event(enum log_level level, const char *msg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  host->log_vevent(level, msg, fmt, ap);
  va_end(ap);
}

const char *log_quote(const char *s, char *buf, unsigned long buflen) {
  return host->log_quote(s, buf, buflen);
}

void metrics_drop(const char *reason, uint64_t n) {
  host->metrics_drop(reason, n);
}

void metrics_export_failure(const char *cls) {
  host->metrics_export_failure(cls);
}
