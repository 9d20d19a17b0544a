/* Credential and HTTP answers from the network: every input goes through the
 * STS AssumeRoleWithWebIdentity XML parser and the container-credentials JSON
 * parser (libxml2 and jansson underneath), and, cut at its first NUL, through
 * the ISO 8601 and Retry-After parsers. Accepted credentials must be
 * header-safe and complete; refused ones must leave nothing behind. The input
 * is also an HTTP error body for http_describe (one printable line that never
 * shows the URL's password or query), its first line a URL for
 * exporter_redact_url and its second a secret for http_scrub. */
#include <string.h>

#include "aws_creds.h"
#include "exporter.h"
#include "fuzz_target.h"
#include "http_common.h"

static void check_header_safe(const char *s, size_t cap, const char *what) {
  size_t n = strnlen(s, cap);
  FUZZ_CHECK(n > 0 && n < cap, "%s of %zu bytes", what, n);
  for (size_t i = 0; i < n; i++)
    FUZZ_CHECK((unsigned char)s[i] >= 0x21 && (unsigned char)s[i] <= 0x7e, "%s holds byte %#x",
               what, (unsigned)(unsigned char)s[i]);
}

static void check_result(int rc, const aws_credentials *c, const char *err, const char *parser) {
  if (rc == 0) {
    check_header_safe(c->access_key_id, sizeof c->access_key_id, "access key id");
    check_header_safe(c->secret_access_key, sizeof c->secret_access_key, "secret");
    check_header_safe(c->session_token, sizeof c->session_token, "session token");
    return;
  }
  FUZZ_CHECK(rc == -1, "%s returned %d", parser, rc);
  FUZZ_CHECK(err[0] != '\0', "%s refused without a reason", parser);
  static const aws_credentials zero;
  FUZZ_CHECK(memcmp(c, &zero, sizeof zero) == 0, "%s left credentials behind on failure", parser);
}

#define URL_SECRET "s3cr3tPassw0rd"
#define URL_SIG "deadbeefsig0123"

static void check_http(const uint8_t *data, size_t size) {
  char *body = malloc(size + 1); /* http_perform NUL-terminates bodies */
  FUZZ_CHECK(body != NULL, "out of memory");
  memcpy(body, data, size);
  body[size] = '\0';
  http_response rs = {.status = 403, .retry_after_s = -1, .body = body, .body_len = size};
  char err[512];
  http_describe(
      "PUT", "https://AKIDEXAMPLE:" URL_SECRET "@bucket.s3.example.com/k?X-Amz-Signature=" URL_SIG,
      &rs, err, sizeof err);
  size_t n = strnlen(err, sizeof err);
  FUZZ_CHECK(n < sizeof err, "http_describe left err unterminated");
  for (size_t i = 0; i < n; i++)
    FUZZ_CHECK((unsigned char)err[i] >= 0x20 && (unsigned char)err[i] < 0x7f,
               "byte %#x in the error line", (unsigned)(unsigned char)err[i]);
  /* The body may spell anything (entities, escapes); the URL part may not. */
  char *status = strstr(err, ": HTTP 403");
  FUZZ_CHECK(status != NULL, "no status in \"%s\"", err);
  *status = '\0';
  FUZZ_CHECK(!strstr(err, URL_SECRET) && !strstr(err, URL_SIG), "URL not redacted: \"%s\"", err);

  /* First line: a URL to redact. */
  const char *nl = memchr(body, '\n', size);
  char *url = strndup(body, nl ? (size_t)(nl - body) : size);
  FUZZ_CHECK(url != NULL, "out of memory");
  char out[256];
  memset(out, 'x', sizeof out);
  exporter_redact_url(url, out, sizeof out);
  FUZZ_CHECK(strnlen(out, sizeof out) < sizeof out, "redacted URL unterminated");
  const char *sep = strstr(out, "://");
  if (sep && strstr(url, "://")) {
    const char *host = sep + 3;
    size_t hl = strcspn(host, "/");
    FUZZ_CHECK(!memchr(host, '@', hl), "userinfo left in \"%s\"", out);
    FUZZ_CHECK(!strpbrk(host, "?#"), "query or fragment left in \"%s\"", out);
  }

  /* Second line: a secret to scrub from the body (secrets never hold '*'). */
  if (nl) {
    const char *s2 = nl + 1, *nl2 = strchr(s2, '\n');
    char *secret = strndup(s2, nl2 ? (size_t)(nl2 - s2) : strlen(s2));
    char *text = strdup(body);
    FUZZ_CHECK(secret && text, "out of memory");
    http_scrub(text, secret);
    if (strlen(secret) >= 4 && !strchr(secret, '*'))
      FUZZ_CHECK(strstr(text, secret) == NULL, "secret \"%s\" survived http_scrub", secret);
    free(secret);
    free(text);
  }
  free(url);
  free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_http(data, size);
  aws_credentials c;
  char err[256] = "";
  int rc = aws_creds_parse_sts((const char *)data, size, &c, err, sizeof err);
  check_result(rc, &c, err, "aws_creds_parse_sts");
  err[0] = '\0';
  rc = aws_creds_parse_container((const char *)data, size, &c, err, sizeof err);
  check_result(rc, &c, err, "aws_creds_parse_container");

  char *s = strndup((const char *)data, size);
  FUZZ_CHECK(s != NULL, "out of memory");
  const time_t now = 1700000000;
  time_t t;
  if (aws_parse_iso8601(s, &t) == 0) {
    time_t at = aws_creds_refresh_at(now, t);
    if (t > now)
      FUZZ_CHECK(at >= now && at <= t, "refresh at %lld for expiry %lld", (long long)at,
                 (long long)t);
  }
  int ra = http_parse_retry_after(s, now);
  FUZZ_CHECK(ra >= -1 && ra <= HTTP_MAX_RETRY_AFTER_S, "Retry-After \"%s\" gave %d", s, ra);
  free(s);
  return 0;
}
