/* Unit tests for sidecar/exporters/http_module_so.c: the entry point of
 * the built pushprof-sidecar-http.so, loaded here as pushprof-sidecar
 * loads it. It refuses a host of another ABI or size, returns the
 * exporters' table to this build's host, and the exporters inside log
 * through the host's functions (the module has no log of its own). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_module.h"
#include "pp_test.h"

static int events;
static char last_msg[128];

static void host_log_vevent(enum log_level level, const char *msg, const char *fmt, va_list ap) {
  (void)level, (void)fmt, (void)ap;
  events++;
  snprintf(last_msg, sizeof last_msg, "%s", msg);
}

static const char *host_log_quote(const char *s, char *buf, unsigned long buflen) {
  snprintf(buf, buflen, "\"%s\"", s ? s : "");
  return buf;
}

static void host_metrics_drop(const char *reason, uint64_t n) {
  (void)reason, (void)n;
}

static void host_metrics_export_failure(const char *cls) {
  (void)cls;
}

static const http_module_host host = {
    .abi = HTTP_MODULE_ABI,
    .size = sizeof(http_module_host),
    .log_vevent = host_log_vevent,
    .log_quote = host_log_quote,
    .metrics_drop = host_metrics_drop,
    .metrics_export_failure = host_metrics_export_failure,
};

static http_module_entry_fn entry;

static void test_http_module_so_refuses_another_hosts_abi(void) {
  http_module_host h = host;
  PP_CHECK(entry(NULL) == NULL);
  h.abi = HTTP_MODULE_ABI + 1;
  PP_CHECK(entry(&h) == NULL);
  h = host;
  h.size = sizeof h - 8;
  PP_CHECK(entry(&h) == NULL);
}

static void test_http_module_so_returns_the_table_and_logs_through_host(void) {
  const http_module *m = entry(&host);
  PP_CHECK(m != NULL);
  if (!m)
    return;
  PP_CHECK_INT(m->abi, ==, HTTP_MODULE_ABI);
  PP_CHECK_INT(m->size, ==, sizeof(http_module));
  PP_CHECK_INT(m->sizeof_exporter, ==, sizeof(exporter));
  PP_CHECK_INT(m->sizeof_exporter_options, ==, sizeof(exporter_options));
  PP_CHECK_INT(m->sizeof_export_object, ==, sizeof(export_object));
  PP_CHECK(m->s3 && m->gs && m->pyroscope && m->otlp);
  /* An exporter made inside the module logs that it is ready, via host. */
  setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  exporter_options o = {.s3_endpoint = "http://127.0.0.1:1"};
  char err[512] = "";
  events = 0;
  exporter *ex = m->s3("s3://bkt", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_STR(ex->scheme, "s3");
    ex->destroy(ex);
  }
  PP_CHECK(events >= 1);
  PP_CHECK_STR(last_msg, "object store exporter ready");
}

int main(void) {
  void *h = dlopen(PP_HTTP_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  entry = (http_module_entry_fn)dlsym(h, HTTP_MODULE_ENTRY);
  if (!entry) {
    fprintf(stderr, "%s: no %s\n", PP_HTTP_MODULE_PATH, HTTP_MODULE_ENTRY);
    return 1;
  }
  PP_RUN(test_http_module_so_refuses_another_hosts_abi);
  PP_RUN(test_http_module_so_returns_the_table_and_logs_through_host);
  PP_DONE();
}
