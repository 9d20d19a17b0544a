/* Unit tests for sidecar/exporters/exporter.c: choosing a backend by the
 * URL's scheme, and the errors that name the fix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter.h"
#include "pp_test.h"

static void test_create_rejects_unknown_scheme_and_relative_paths(void) {
  char err[512] = "";
  PP_CHECK(exporter_create("ftp://x/y", NULL, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "ftp") != NULL);
  PP_CHECK(strstr(err, "file://") != NULL);
  PP_CHECK(strstr(err, "s3") != NULL);
  err[0] = '\0';
  PP_CHECK(exporter_create("file://relative/dir", NULL, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "absolute") != NULL);
  err[0] = '\0';
  PP_CHECK(exporter_create("/no/scheme", NULL, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "scheme") != NULL);
  PP_CHECK(exporter_create("", NULL, err, sizeof err) == NULL);
}

static void test_create_matches_the_scheme_in_any_case(void) {
  char dir[] = "/tmp/pp_test_exporterXXXXXX", url[64], err[512] = "";
  PP_CHECK(mkdtemp(dir) != NULL);
  snprintf(url, sizeof url, "FiLe://%s", dir);
  exporter *ex = exporter_create(url, NULL, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex)
    PP_CHECK_STR(ex->scheme, "file");
  exporter_destroy(ex);
  exporter_destroy(NULL);
  /* A scheme that only starts like a known one is not that one. */
  snprintf(url, sizeof url, "files://%s", dir);
  PP_CHECK(exporter_create(url, NULL, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "unsupported export scheme \"files\"") != NULL);
  snprintf(url, sizeof url, "fil://%s", dir);
  PP_CHECK(exporter_create(url, NULL, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "unsupported export scheme \"fil\"") != NULL);
  rmdir(dir);
}

int main(void) {
  PP_RUN(test_create_rejects_unknown_scheme_and_relative_paths);
  PP_RUN(test_create_matches_the_scheme_in_any_case);
  PP_DONE();
}
