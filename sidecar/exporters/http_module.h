/* The HTTP exporters (s3, gs, pyroscope, otlp) and the libraries only they
 * use (libcurl, libxml2, jansson, libssl) live in a module,
 * pushprof-sidecar-http.so, that pushprof-sidecar loads the first time an
 * --export URL needs it: a sidecar exporting to file:// maps none of them
 * (4 of its 10.3 MiB idle RSS).
 *
 * The module is built from this tree only, for the sidecar of its build. It
 * sees none of the sidecar's symbols (everything is built hidden): the
 * sidecar hands it the log and metrics functions in an http_module_host, and
 * gets back the exporters' constructors in an http_module. Both tables carry
 * HTTP_MODULE_ABI and the sizes of the structures they pass, which a module
 * of another build is refused on.
 *
 * The unit tests link the same exporters statically (http_module_linked.c):
 * there http_module_get() returns the table without loading anything. */
#ifndef SIDECAR_HTTP_MODULE_H
#define SIDECAR_HTTP_MODULE_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter.h"
#include "log.h"

#define HTTP_MODULE_ABI 1u
#define HTTP_MODULE_FILE "pushprof-sidecar-http.so"
/* The one symbol the module exports: an http_module_entry_fn. */
#define HTTP_MODULE_ENTRY "pushprof_sidecar_http_module"

typedef exporter *(*exporter_create_fn)(const char *url, const exporter_options *opts, char *err,
                                        size_t errlen);

/* What the sidecar lends the module; lives as long as the process. */
typedef struct http_module_host {
  uint32_t abi;  /* HTTP_MODULE_ABI */
  uint32_t size; /* sizeof(http_module_host) */
  void (*log_vevent)(enum log_level level, const char *msg, const char *fmt, va_list ap);
  const char *(*log_quote)(const char *s, char *buf, unsigned long buflen);
  void (*metrics_drop)(const char *reason, uint64_t n);
  void (*metrics_export_failure)(const char *cls);
} http_module_host;

/* What the module gives back: static, never freed. */
typedef struct http_module {
  uint32_t abi;  /* HTTP_MODULE_ABI */
  uint32_t size; /* sizeof(http_module) */
  /* sizeof each structure the constructors and put() pass across. */
  uint32_t sizeof_exporter, sizeof_exporter_options, sizeof_export_object;
  exporter_create_fn s3, gs, pyroscope, otlp;
} http_module;

/* Signature of HTTP_MODULE_ENTRY: keeps host and returns the module's
 * table, or NULL if host's abi or size is not this build's. */
typedef const http_module *(*http_module_entry_fn)(const http_module_host *host);

/* The constructors of the HTTP exporters (http_module_table.c). */
extern const http_module http_module_exporters;

/* The HTTP exporters for an --export URL of scheme ("s3", "gs", ...): the
 * module, loaded on first use, or NULL with err naming the module file, where
 * it was looked for, why it failed and the fix. Thread-safe; a failure is
 * remembered (the module is tried once). Two definitions, one per binary:
 * http_module_dl_linux.c (pushprof-sidecar: dlopen) and
 * http_module_linked.c (the static library the unit tests link). */
const http_module *http_module_get(const char *scheme, char *err, size_t errlen);
#endif
