/* Unit tests for sidecar/exporters/aws_creds.c: ISO 8601 times, the STS
 * and container-agent answers, refresh timing, and the choice of source
 * from the environment (the fetches themselves run in the S3 integration
 * tests against a fake STS and agent). */
#include <stdlib.h>
#include <string.h>

#include "aws_creds.h"
#include "exporter.h"
#include "http_common.h"
#include "pp_test.h"

static void test_aws_creds_parsers_and_refresh_timing(void) {
  time_t t;
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T22:13:20Z", &t), ==, 0);
  PP_CHECK_INT(t, ==, 1700000000);
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T23:13:20.123+01:00", &t), ==, 0);
  PP_CHECK_INT(t, ==, 1700000000);
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14 22:13:20", &t), ==, -1);
  aws_credentials c;
  char err[256];
  const char *xml =
      "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
      "<AssumeRoleWithWebIdentityResult><Credentials><SessionToken>TOK</SessionToken>"
      "<SecretAccessKey>SEC</SecretAccessKey><Expiration>2023-11-14T22:13:20Z</Expiration>"
      "<AccessKeyId>ASIA1</AccessKeyId></Credentials></AssumeRoleWithWebIdentityResult>"
      "</AssumeRoleWithWebIdentityResponse>";
  PP_CHECK_INT(aws_creds_parse_sts(xml, strlen(xml), &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.access_key_id, "ASIA1");
  PP_CHECK_STR(c.secret_access_key, "SEC");
  PP_CHECK_STR(c.session_token, "TOK");
  PP_CHECK_INT(c.expiration, ==, 1700000000);
  const char *bad = "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>";
  PP_CHECK_INT(aws_creds_parse_sts(bad, strlen(bad), &c, err, sizeof err), ==, -1);
  PP_CHECK_INT(aws_creds_parse_sts("<x", 2, &c, err, sizeof err), ==, -1);
  const char *js = "{\"AccessKeyId\":\"ASIA2\",\"SecretAccessKey\":\"S\",\"Token\":\"T\","
                   "\"Expiration\":\"2023-11-14T22:13:20Z\"}";
  PP_CHECK_INT(aws_creds_parse_container(js, strlen(js), &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.access_key_id, "ASIA2");
  PP_CHECK_INT(c.expiration, ==, 1700000000);
  const char *js2 = "{\"AccessKeyId\":\"ASIA2\",\"SecretAccessKey\":\"S\"}";
  PP_CHECK_INT(aws_creds_parse_container(js2, strlen(js2), &c, err, sizeof err), ==, -1);
  /* Refresh 5 min before expiry, or half-way through a short lifetime. */
  PP_CHECK_INT(aws_creds_refresh_at(1000, 1000 + 3600), ==, 1000 + 3300);
  PP_CHECK_INT(aws_creds_refresh_at(1000, 1010), ==, 1005);
  PP_CHECK_INT(aws_creds_refresh_at(1000, 900), ==, 1000);
}

static void test_aws_parse_iso8601_offsets_and_refusals(void) {
  time_t t = 0;
  PP_CHECK_INT(aws_parse_iso8601(" 2023-11-14T19:43:20-02:30 ", &t), ==, 0);
  PP_CHECK_INT(t, ==, 1700000000);
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T22:13:20z", &t), ==, 0);
  PP_CHECK_INT(t, ==, 1700000000);
  t = 42;
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T22:13:20", &t), ==, -1); /* no zone */
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T22:13:20Zjunk", &t), ==, -1);
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T22:13:20+1:00", &t), ==, -1);
  PP_CHECK_INT(aws_parse_iso8601("2023-11-14T22:13:20+0100", &t), ==, -1);
  PP_CHECK_INT(aws_parse_iso8601("", &t), ==, -1);
  PP_CHECK_INT(aws_parse_iso8601(NULL, &t), ==, -1);
  PP_CHECK_INT(t, ==, 42); /* left alone on failure */
}

static void test_aws_creds_parsers_refuse_header_breaking_values(void) {
  aws_credentials c;
  char err[256] = "";
  const char *ctl = "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"S\",\"Token\":\"a\\r\\nX: y\","
                    "\"Expiration\":\"2023-11-14T22:13:20Z\"}";
  PP_CHECK_INT(aws_creds_parse_container(ctl, strlen(ctl), &c, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "Token") != NULL && strstr(err, "header") != NULL);
  PP_CHECK_STR(c.access_key_id, ""); /* nothing half-parsed is left behind */
  static char big[600];
  memset(big, 'k', sizeof big - 1);
  char js[1024];
  snprintf(js, sizeof js,
           "{\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"S\",\"Token\":\"T\","
           "\"Expiration\":\"2023-11-14T22:13:20Z\"}",
           big);
  PP_CHECK_INT(aws_creds_parse_container(js, strlen(js), &c, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "AccessKeyId too long") != NULL);
  const char *noexp = "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"S\",\"Token\":\"T\"}";
  PP_CHECK_INT(aws_creds_parse_container(noexp, strlen(noexp), &c, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "Expiration") != NULL);
  PP_CHECK_INT(aws_creds_parse_container("[1]", 3, &c, err, sizeof err), ==, -1);
  /* Whitespace around STS values is trimmed; a namespace prefix is fine. */
  const char *xml = "<r xmlns:a=\"urn:x\"><a:Credentials><a:AccessKeyId> AK \n</a:AccessKeyId>"
                    "<a:SecretAccessKey>SK</a:SecretAccessKey><a:SessionToken>T</a:SessionToken>"
                    "<a:Expiration>2023-11-14T22:13:20Z</a:Expiration></a:Credentials></r>";
  PP_CHECK_INT(aws_creds_parse_sts(xml, strlen(xml), &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.access_key_id, "AK");
  const char *notok = "<r><Credentials><AccessKeyId>AK</AccessKeyId>"
                      "<SecretAccessKey>SK</SecretAccessKey>"
                      "<Expiration>2023-11-14T22:13:20Z</Expiration></Credentials></r>";
  PP_CHECK_INT(aws_creds_parse_sts(notok, strlen(notok), &c, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "SessionToken missing") != NULL);
}

static const char *const aws_vars[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",       "AWS_SESSION_TOKEN",
    "AWS_ROLE_ARN",      "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
};

static void clear_aws_env(void) {
  for (size_t i = 0; i < sizeof aws_vars / sizeof aws_vars[0]; i++)
    unsetenv(aws_vars[i]);
}

static void test_aws_creds_new_picks_the_source_from_the_environment(void) {
  http_options ho = {.timeout_ms = 1000};
  char err[512] = "";
  const aws_credentials *got = NULL;
  clear_aws_env();
  PP_CHECK(aws_creds_new(&ho, "eu-west-1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "no AWS credentials") != NULL);

  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  PP_CHECK(aws_creds_new(&ho, "eu-west-1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not") != NULL);
  setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  setenv("AWS_SESSION_TOKEN", "tok", 1);
  /* Keys win over IRSA when both are configured. */
  setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
  aws_creds *p = aws_creds_new(&ho, "eu-west-1", err, sizeof err);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_STR(aws_creds_source(p), "env");
    PP_CHECK(!aws_creds_temporary(p));
    PP_CHECK_INT(aws_creds_get(p, &got, err, sizeof err), ==, EXPORT_OK);
    PP_CHECK_STR(got->access_key_id, "AKIDEXAMPLE");
    PP_CHECK_STR(got->secret_access_key, "secret");
    PP_CHECK_STR(got->session_token, "tok");
    aws_creds_invalidate(p); /* fixed keys are kept */
    PP_CHECK_INT(aws_creds_get(p, &got, err, sizeof err), ==, EXPORT_OK);
    PP_CHECK_STR(got->access_key_id, "AKIDEXAMPLE");
    aws_creds_free(p);
  }
  setenv("AWS_SESSION_TOKEN", "a\nb", 1);
  PP_CHECK(aws_creds_new(&ho, "eu-west-1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "AWS_SESSION_TOKEN holds a character") != NULL);

  clear_aws_env();
  setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
  PP_CHECK(aws_creds_new(&ho, "eu-west-1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "only AWS_ROLE_ARN is set") != NULL);

  clear_aws_env();
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds", 1);
  PP_CHECK(aws_creds_new(&ho, "eu-west-1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https") != NULL);
  static const char *const agents[] = {"http://169.254.170.23/v1/credentials",
                                       "http://127.0.0.1:8080/c", "http://[::1]/c",
                                       "https://creds.example/c"};
  for (size_t i = 0; i < sizeof agents / sizeof agents[0]; i++) {
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", agents[i], 1);
    p = aws_creds_new(&ho, "eu-west-1", err, sizeof err);
    PP_CHECK(p != NULL);
    if (p) {
      PP_CHECK_STR(aws_creds_source(p), "pod-identity");
      PP_CHECK(aws_creds_temporary(p));
      aws_creds_free(p);
    }
  }
  clear_aws_env();

  p = aws_creds_new_static("GOOG1", "hmac", err, sizeof err);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_STR(aws_creds_source(p), "static");
    PP_CHECK_INT(aws_creds_get(p, &got, err, sizeof err), ==, EXPORT_OK);
    PP_CHECK_STR(got->access_key_id, "GOOG1");
    PP_CHECK_STR(got->session_token, "");
    aws_creds_free(p);
  }
  PP_CHECK(aws_creds_new_static("", "hmac", err, sizeof err) == NULL);
}

int main(void) {
  PP_RUN(test_aws_creds_parsers_and_refresh_timing);
  PP_RUN(test_aws_parse_iso8601_offsets_and_refusals);
  PP_RUN(test_aws_creds_parsers_refuse_header_breaking_values);
  PP_RUN(test_aws_creds_new_picks_the_source_from_the_environment);
  PP_DONE();
}
