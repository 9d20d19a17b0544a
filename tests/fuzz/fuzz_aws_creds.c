/* Credential and HTTP answers from the network: every input goes through the
 * STS AssumeRoleWithWebIdentity XML parser and the container-credentials JSON
 * parser (libxml2 and jansson underneath), and, cut at its first NUL, through
 * the ISO 8601 and Retry-After parsers. Accepted credentials must be
 * header-safe and complete; refused ones must leave nothing behind. */
#include <string.h>

#include "aws_creds.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
