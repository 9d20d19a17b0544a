/* Unit tests for sidecar/exporters/exporter_otlp.c's pure parts: where
 * profiles go (URL or the OTEL_* environment) and the header syntax of
 * $OTEL_EXPORTER_OTLP_HEADERS and --otlp-header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter_otlp.h"
#include "pp_test.h"

static void test_otlp_endpoint_rules(void) {
  char err[512];
  char *u = otlp_endpoint("otlp+http://h:4318", err, sizeof err);
  PP_CHECK_STR(u, "http://h:4318/v1development/profiles");
  free(u);
  u = otlp_endpoint("otlp+HTTPS://h:4318/custom/path", err, sizeof err);
  PP_CHECK_STR(u, "https://h:4318/custom/path");
  free(u);
  u = otlp_endpoint("otlp+http://h:4318/", err, sizeof err);
  PP_CHECK_STR(u, "http://h:4318/v1development/profiles");
  free(u);
  PP_CHECK(otlp_endpoint("otlp+http://user:pw@h:1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "pw") == NULL && strstr(err, "--otlp-header") != NULL);
  PP_CHECK(otlp_endpoint("otlp+http://", err, sizeof err) == NULL);
  PP_CHECK(otlp_endpoint("otlp+ftp://h", err, sizeof err) == NULL);
  PP_CHECK(otlp_endpoint("otlp+http://h:1/p?q=1", err, sizeof err) == NULL);
  unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  u = otlp_endpoint("otlp", err, sizeof err);
  PP_CHECK_STR(u, "http://localhost:4318/v1development/profiles");
  free(u);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318/base/", 1);
  u = otlp_endpoint("otlp", err, sizeof err);
  PP_CHECK_STR(u, "https://collector:4318/base/v1development/profiles");
  free(u);
  setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://c:1/exact", 1);
  u = otlp_endpoint("otlp", err, sizeof err);
  PP_CHECK_STR(u, "http://c:1/exact");
  free(u);
  setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "c:1", 1);
  PP_CHECK(otlp_endpoint("otlp", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") != NULL);
  unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
}

static void test_otlp_header_syntax(void) {
  char err[512];
  otlp_header *h = NULL;
  size_t n = 0;
  PP_CHECK(otlp_parse_headers(" a=1 , Authorization=Bearer%20SECRETX,,b = x=y ", "$V", 0, &h, &n,
                              err, sizeof err) == 0);
  PP_CHECK_INT(n, ==, 3);
  PP_CHECK_STR(h[1].value, "Bearer SECRETX");
  PP_CHECK_STR(h[2].name, "b");
  PP_CHECK_STR(h[2].value, "x=y");
  PP_CHECK(otlp_parse_headers("A=2", "--otlp-header", 1, &h, &n, err, sizeof err) == 0);
  PP_CHECK_INT(n, ==, 3); /* replaced, case-insensitively */
  PP_CHECK_STR(h[0].value, "2");
  PP_CHECK(otlp_parse_headers("novalue", "--otlp-header", 1, &h, &n, err, sizeof err) != 0);
  PP_CHECK(strstr(err, "--otlp-header") != NULL && strstr(err, "KEY=VALUE") != NULL);
  PP_CHECK(otlp_parse_headers("bad name=v", "$V", 0, &h, &n, err, sizeof err) != 0);
  PP_CHECK(otlp_parse_headers("X=SECRETVALUE%0A", "$V", 0, &h, &n, err, sizeof err) != 0);
  PP_CHECK(strstr(err, "SECRETVALUE") == NULL && strstr(err, "X") != NULL);
  PP_CHECK(otlp_parse_headers("Content-Type=text/plain", "$V", 0, &h, &n, err, sizeof err) != 0);
  PP_CHECK(otlp_parse_headers("=v", "$V", 0, &h, &n, err, sizeof err) != 0);
  otlp_headers_free(h, n);
}

/* Escapes that are not two hex digits stay as written; an error keeps
 * every header parsed before it, usable and freeable; the limits hold. */
static void test_otlp_header_escapes_limits_and_partial_errors(void) {
  char err[512];
  otlp_header *h = NULL;
  size_t n = 0;
  PP_CHECK_INT(otlp_parse_headers("x=%41%zz%4,y=100%", "$V", 0, &h, &n, err, sizeof err), ==, 0);
  PP_CHECK_INT(n, ==, 2);
  PP_CHECK_STR(h[0].value, "A%zz%4");
  PP_CHECK_STR(h[1].value, "100%");
  PP_CHECK_INT(otlp_parse_headers("a=1,b=2,c d=3,e=4", "$V", 0, &h, &n, err, sizeof err), ==, -1);
  PP_CHECK_INT(n, ==, 4);
  PP_CHECK_STR(h[2].name, "a");
  PP_CHECK_STR(h[3].value, "2");
  PP_CHECK(strstr(err, "$V") != NULL && strstr(err, "c d") != NULL);
  PP_CHECK_INT(otlp_parse_headers("HOST=h", "--otlp-header", 1, &h, &n, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "set by pushprof itself") != NULL);
  /* With one = 1 a comma belongs to the value. */
  PP_CHECK_INT(otlp_parse_headers("k=a,b", "--otlp-header", 1, &h, &n, err, sizeof err), ==, 0);
  PP_CHECK_INT(n, ==, 5);
  PP_CHECK_STR(h[4].value, "a,b");
  static char name[300];
  memset(name, 'n', 257);
  name[257] = '=';
  name[258] = 'v';
  PP_CHECK_INT(otlp_parse_headers(name, "$V", 1, &h, &n, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "longer than 256") != NULL);
  name[1] = '=';
  PP_CHECK_INT(otlp_parse_headers(name, "$V", 1, &h, &n, err, sizeof err), ==, 0); /* "n" */
  PP_CHECK_INT(n, ==, 6);
  char entry[32];
  int added = 0;
  while (n < OTLP_HEADERS_MAX) {
    snprintf(entry, sizeof entry, "h%d=v", added++);
    if (otlp_parse_headers(entry, "$V", 1, &h, &n, err, sizeof err) != 0)
      break;
  }
  PP_CHECK_INT(n, ==, OTLP_HEADERS_MAX);
  PP_CHECK_INT(otlp_parse_headers("one-more=v", "$V", 1, &h, &n, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "more than 64 headers") != NULL);
  /* Replacing an existing one is still allowed at the limit. */
  PP_CHECK_INT(otlp_parse_headers("X=new", "$V", 1, &h, &n, err, sizeof err), ==, 0);
  PP_CHECK_STR(h[0].value, "new");
  PP_CHECK_INT(n, ==, OTLP_HEADERS_MAX);
  otlp_headers_free(h, n);
}

int main(void) {
  PP_RUN(test_otlp_endpoint_rules);
  PP_RUN(test_otlp_header_syntax);
  PP_RUN(test_otlp_header_escapes_limits_and_partial_errors);
  PP_DONE();
}
