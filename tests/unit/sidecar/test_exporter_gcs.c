/* Unit tests for sidecar/exporters/exporter_gcs.c: the endpoint, the three
 * ways to credentials (a token in the environment, the metadata server,
 * HMAC keys) and the upload each sends, seen by loopback servers. */
#include <curl/curl.h>

#include "exporter.h"
#include "http_capture_util.h"
#include "pp_test.h"

static const char *const vars[] = {
    "STORAGE_EMULATOR_HOST",       "GOOGLE_OAUTH_ACCESS_TOKEN", "GCE_METADATA_HOST",
    "PUSHPROF_GCS_HMAC_ACCESS_ID", "PUSHPROF_GCS_HMAC_SECRET",
};

static void env_clear(void) {
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);
}

static const uint8_t data[] = "not really gzip";
static const export_object obj = {.service = "svc",
                                  .node = "n1",
                                  .subdir = "",
                                  .start_ns = 1700000000LL * 1000000000LL,
                                  .data = data,
                                  .len = sizeof data - 1,
                                  .content_hash = "0123456789abcdef0123"};

#define NAME "20231114T221320Z-0123456789abcdef.pb.gz"

/* The request's line and header name (e.g. "Authorization: "), or "". */
static void header(const char *req, const char *name, char *out, size_t outlen) {
  const char *h = strstr(req, name);
  snprintf(out, outlen, "%.*s", h ? (int)strcspn(h, "\r\n") : 0, h ? h : "");
}

static void test_exporter_gcs_token_from_environment(void) {
  char err[512] = "", line[512], auth[256];
  http_capture up;
  env_clear();
  PP_CHECK_INT(http_capture_start(&up, 200, "{}"), ==, 0);
  setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.tok", 1);
  /* host:port without a scheme is plain http, as the emulators give it. */
  char ep[64];
  snprintf(ep, sizeof ep, "127.0.0.1:%d/", up.port);
  setenv("STORAGE_EMULATOR_HOST", ep, 1);
  exporter_options o = {.http_timeout_ms = 5000};
  exporter *ex = exporter_create("gs://bkt/pre", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_STR(ex->scheme, "gs");
    PP_CHECK_INT(ex->put(ex, &obj, err, sizeof err), ==, EXPORT_OK);
    PP_CHECK_STR(err, "gs://bkt/pre/n1/svc/" NAME);
    exporter_destroy(ex);
  }
  http_capture_wait(&up);
  header(up.req, "POST ", line, sizeof line);
  PP_CHECK_STR(line, "POST /upload/storage/v1/b/bkt/o?uploadType=media&name=pre%2Fn1%2Fsvc%2F" NAME
                     "&ifGenerationMatch=0 HTTP/1.1");
  header(up.req, "Authorization: ", auth, sizeof auth);
  PP_CHECK_STR(auth, "Authorization: Bearer ya29.tok");
  PP_CHECK(strstr(up.req, "\r\n\r\nnot really gzip") != NULL);

  /* --gcs-endpoint wins over the variable (here a closed port); a 412 to
   * the generation-match condition means stored already. */
  PP_CHECK_INT(http_capture_start(&up, 412, NULL), ==, 0);
  setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:1", 1);
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", up.port);
  o.gcs_endpoint = ep;
  ex = exporter_create("gs://bkt", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_INT(ex->put(ex, &obj, err, sizeof err), ==, EXPORT_OK);
    PP_CHECK_STR(err, "gs://bkt/n1/svc/" NAME " (already stored)");
    exporter_destroy(ex);
  }
  http_capture_wait(&up);
  PP_CHECK(strncmp(up.req, "POST /upload/storage/v1/b/bkt/o?", 32) == 0);

  /* A refused token is permanent and the error never shows it. */
  PP_CHECK_INT(http_capture_start(&up, 401, NULL), ==, 0);
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", up.port);
  ex = exporter_create("gs://bkt", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_INT(ex->put(ex, &obj, err, sizeof err), ==, EXPORT_PERMANENT);
    PP_CHECK(strstr(err, "GOOGLE_OAUTH_ACCESS_TOKEN refused") != NULL);
    PP_CHECK(strstr(err, "ya29.tok") == NULL);
    exporter_destroy(ex);
  }
  http_capture_wait(&up);

  setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "two words", 1);
  PP_CHECK(exporter_create("gs://bkt", &o, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "GOOGLE_OAUTH_ACCESS_TOKEN") != NULL);
  env_clear();
}

static void test_exporter_gcs_token_from_the_metadata_server(void) {
  char err[512] = "", line[512], ep[64], mh[64];
  http_capture meta, up;
  env_clear();
  PP_CHECK_INT(
      http_capture_start(&meta, 200, "{\"access_token\":\"meta.tok\",\"expires_in\":3599}"), ==, 0);
  PP_CHECK_INT(http_capture_start(&up, 200, NULL), ==, 0);
  snprintf(mh, sizeof mh, "127.0.0.1:%d", meta.port);
  setenv("GCE_METADATA_HOST", mh, 1);
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", up.port);
  exporter_options o = {.http_timeout_ms = 5000, .gcs_endpoint = ep};
  exporter *ex = exporter_create("gs://bkt", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_INT(ex->put(ex, &obj, err, sizeof err), ==, EXPORT_OK);
    exporter_destroy(ex);
  }
  http_capture_wait(&meta);
  http_capture_wait(&up);
  header(meta.req, "GET ", line, sizeof line);
  PP_CHECK_STR(line, "GET /computeMetadata/v1/instance/service-accounts/default/token HTTP/1.1");
  header(meta.req, "Metadata-Flavor: ", line, sizeof line);
  PP_CHECK_STR(line, "Metadata-Flavor: Google");
  header(up.req, "Authorization: ", line, sizeof line);
  PP_CHECK_STR(line, "Authorization: Bearer meta.tok");

  /* An answer without expires_in: retry, nothing uploaded. */
  PP_CHECK_INT(http_capture_start(&meta, 200, "{\"access_token\":\"meta.tok\"}"), ==, 0);
  PP_CHECK_INT(http_capture_start(&up, 200, NULL), ==, 0);
  snprintf(mh, sizeof mh, "127.0.0.1:%d", meta.port);
  setenv("GCE_METADATA_HOST", mh, 1);
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", up.port);
  ex = exporter_create("gs://bkt", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_INT(ex->put(ex, &obj, err, sizeof err), ==, EXPORT_RETRY);
    PP_CHECK(strstr(err, "expires_in") != NULL);
    exporter_destroy(ex);
  }
  http_capture_wait(&meta);
  http_capture_wait(&up);
  PP_CHECK_STR(up.req, "");
  env_clear();
}

static void test_exporter_gcs_hmac_keys_sign_for_region_auto(void) {
  char err[512] = "", line[512], ep[64];
  http_capture up;
  env_clear();
  setenv("PUSHPROF_GCS_HMAC_ACCESS_ID", "GOOG1ID", 1);
  exporter_options o = {.http_timeout_ms = 5000};
  PP_CHECK(exporter_create("gs://bkt", &o, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "PUSHPROF_GCS_HMAC_SECRET") != NULL);
  setenv("PUSHPROF_GCS_HMAC_SECRET", "hmacsecret", 1);
  /* HMAC keys win over a token. */
  setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.tok", 1);
  PP_CHECK_INT(http_capture_start(&up, 200, NULL), ==, 0);
  snprintf(ep, sizeof ep, "http://localhost:%d", up.port);
  o.gcs_endpoint = ep;
  exporter *ex = exporter_create("gs://bkt/p", &o, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (ex) {
    PP_CHECK_INT(ex->put(ex, &obj, err, sizeof err), ==, EXPORT_OK);
    exporter_destroy(ex);
  }
  http_capture_wait(&up);
  header(up.req, "PUT ", line, sizeof line);
  PP_CHECK_STR(line, "PUT /bkt/p/n1/svc/" NAME " HTTP/1.1");
  PP_CHECK(strstr(up.req, "Credential=GOOG1ID/") != NULL);
  PP_CHECK(strstr(up.req, "/auto/s3/aws4_request") != NULL);
  PP_CHECK(strcasestr(up.req, "\r\nx-goog-if-generation-match: 0\r\n") != NULL);
  PP_CHECK(strstr(up.req, "Bearer") == NULL);
  env_clear();
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  PP_RUN(test_exporter_gcs_token_from_environment);
  PP_RUN(test_exporter_gcs_token_from_the_metadata_server);
  PP_RUN(test_exporter_gcs_hmac_keys_sign_for_region_auto);
  curl_global_cleanup();
  PP_DONE();
}
