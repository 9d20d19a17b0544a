/* Unit tests for sidecar/exporters/http_module_table.c, as the unit tests'
 * http_module_get (http_module_linked.c) hands it out: each scheme's
 * constructor, and the ABI and sizes a loader checks. */
#include "exporter_backends.h"
#include "http_module.h"
#include "pp_test.h"

static void test_http_module_table_names_each_constructor(void) {
  char err[64] = "";
  const http_module *m = http_module_get("s3", err, sizeof err);
  PP_CHECK(m == &http_module_exporters);
  PP_CHECK(http_module_get("otlp", err, sizeof err) == m);
  PP_CHECK(m->s3 == exporter_s3_create);
  PP_CHECK(m->gs == exporter_gcs_create);
  PP_CHECK(m->pyroscope == exporter_pyroscope_create);
  PP_CHECK(m->otlp == exporter_otlp_create);
  PP_CHECK_INT(m->abi, ==, HTTP_MODULE_ABI);
  PP_CHECK_INT(m->size, ==, sizeof(http_module));
  PP_CHECK_INT(m->sizeof_exporter, ==, sizeof(exporter));
  PP_CHECK_INT(m->sizeof_exporter_options, ==, sizeof(exporter_options));
  PP_CHECK_INT(m->sizeof_export_object, ==, sizeof(export_object));
}

int main(void) {
  PP_RUN(test_http_module_table_names_each_constructor);
  PP_DONE();
}
