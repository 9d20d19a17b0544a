/* Unit tests for sidecar/exporters/exporter_s3.c: which region and endpoint
 * an s3:// URL gets from the flags and the AWS_* environment, seen in the
 * request a put sends to a loopback server (its path, and the region in
 * its SigV4 credential scope). */
#include <curl/curl.h>

#include "exporter.h"
#include "exporter_backends.h"
#include "http_capture_util.h"
#include "pp_test.h"

static const char *const vars[] = {
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
};

static void env_reset(void) {
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);
  setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
}

/* Creates an exporter for url with opts, puts one object through it to a
 * loopback server and copies the request's first line and the region of
 * its credential scope. EXPORT_OK, or the put's or create's failure. */
static int put_one(const char *url, exporter_options *opts, const char *endpoint_var, char *line,
                   size_t linelen, char *region, size_t regionlen) {
  http_capture c;
  char ep[64], err[512] = "";
  line[0] = region[0] = '\0';
  if (http_capture_start(&c, 200, NULL) != 0)
    return -1;
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", c.port);
  if (endpoint_var)
    setenv(endpoint_var, ep, 1);
  else
    opts->s3_endpoint = ep;
  int rc = EXPORT_PERMANENT;
  exporter *ex = exporter_create(url, opts, err, sizeof err);
  if (ex) {
    static const uint8_t data[] = "not really gzip";
    export_object o = {.service = "svc",
                       .node = "n1",
                       .subdir = "",
                       .start_ns = 1700000000LL * 1000000000LL,
                       .data = data,
                       .len = sizeof data - 1,
                       .content_hash = "0123456789abcdef0123"};
    rc = ex->put(ex, &o, err, sizeof err);
    exporter_destroy(ex);
  }
  http_capture_wait(&c);
  if (rc != EXPORT_OK)
    fprintf(stderr, "put: %s\n", err);
  snprintf(line, linelen, "%.*s", (int)strcspn(c.req, "\r\n"), c.req);
  const char *cred = strstr(c.req, "Credential=AKIDTEST/");
  if (cred) {
    const char *r = strchr(cred + 20, '/'); /* past the date */
    if (r)
      snprintf(region, regionlen, "%.*s", (int)strcspn(r + 1, "/"), r + 1);
  }
  return rc;
}

static void test_exporter_s3_region_from_flag_then_environment(void) {
  char line[256], region[64];
  exporter_options o = {.http_timeout_ms = 5000};
  env_reset();
  PP_CHECK_INT(put_one("s3://bkt/pre", &o, NULL, line, sizeof line, region, sizeof region), ==,
               EXPORT_OK);
  PP_CHECK_STR(region, "us-east-1");
  /* An IP endpoint is path style: the bucket leads the path. */
  PP_CHECK_STR(line, "PUT /bkt/pre/n1/svc/20231114T221320Z-0123456789abcdef.pb.gz HTTP/1.1");
  setenv("AWS_DEFAULT_REGION", "ap-south-1", 1);
  PP_CHECK_INT(put_one("s3://bkt/pre", &o, NULL, line, sizeof line, region, sizeof region), ==,
               EXPORT_OK);
  PP_CHECK_STR(region, "ap-south-1");
  setenv("AWS_REGION", "eu-west-1", 1);
  PP_CHECK_INT(put_one("s3://bkt/pre", &o, NULL, line, sizeof line, region, sizeof region), ==,
               EXPORT_OK);
  PP_CHECK_STR(region, "eu-west-1");
  o.s3_region = "ca-central-1";
  PP_CHECK_INT(put_one("s3://bkt/pre", &o, NULL, line, sizeof line, region, sizeof region), ==,
               EXPORT_OK);
  PP_CHECK_STR(region, "ca-central-1");
  o.s3_region = ""; /* empty flag: as if not given */
  PP_CHECK_INT(put_one("s3://bkt/pre", &o, NULL, line, sizeof line, region, sizeof region), ==,
               EXPORT_OK);
  PP_CHECK_STR(region, "eu-west-1");
  env_reset();
}

static void test_exporter_s3_endpoint_from_flag_then_environment(void) {
  char line[256], region[64], err[512] = "";
  exporter_options o = {.http_timeout_ms = 5000};
  env_reset();
  /* The flag wins over both variables, which here could not work. */
  setenv("AWS_ENDPOINT_URL_S3", "ftp://nowhere", 1);
  setenv("AWS_ENDPOINT_URL", "ftp://nowhere", 1);
  PP_CHECK_INT(put_one("s3://bkt", &o, NULL, line, sizeof line, region, sizeof region), ==,
               EXPORT_OK);
  PP_CHECK_STR(line, "PUT /bkt/n1/svc/20231114T221320Z-0123456789abcdef.pb.gz HTTP/1.1");
  /* Then AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL. */
  o.s3_endpoint = NULL;
  PP_CHECK_INT(
      put_one("s3://bkt", &o, "AWS_ENDPOINT_URL_S3", line, sizeof line, region, sizeof region), ==,
      EXPORT_OK);
  PP_CHECK(strncmp(line, "PUT /bkt/", 9) == 0);
  unsetenv("AWS_ENDPOINT_URL_S3");
  PP_CHECK_INT(
      put_one("s3://bkt", &o, "AWS_ENDPOINT_URL", line, sizeof line, region, sizeof region), ==,
      EXPORT_OK);
  PP_CHECK(strncmp(line, "PUT /bkt/", 9) == 0);
  /* A bad endpoint is refused at creation, naming the flags to set. */
  o.s3_endpoint = NULL;
  setenv("AWS_ENDPOINT_URL", "ftp://nowhere", 1);
  PP_CHECK(exporter_create("s3://bkt", &o, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "--s3-endpoint") != NULL);
  /* No credentials: refused, naming the variables. */
  env_reset();
  unsetenv("AWS_SECRET_ACCESS_KEY");
  PP_CHECK(exporter_create("s3://bkt", &o, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "AWS_SECRET_ACCESS_KEY") != NULL);
  /* A bad bucket URL: refused before anything else. */
  env_reset();
  PP_CHECK(exporter_create("s3://B_A_D", &o, err, sizeof err) == NULL);
  env_reset();
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  PP_RUN(test_exporter_s3_region_from_flag_then_environment);
  PP_RUN(test_exporter_s3_endpoint_from_flag_then_environment);
  curl_global_cleanup();
  PP_DONE();
}
