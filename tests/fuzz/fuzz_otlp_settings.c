/* The OTLP exporter's settings parsers (sidecar/exporters/exporter_otlp.c).
 * The input is split at its first NUL: the part before goes to
 * otlp_parse_headers as an OTEL_EXPORTER_OTLP_HEADERS value (and, when it
 * holds no comma, as one --otlp-header), the part after to otlp_endpoint as
 * an --export URL. Accepted headers have token names, no control byte in a
 * value, no name twice (case-insensitively), none pushprof sets itself, at
 * most OTLP_HEADERS_MAX; a refusal is one printable line. An accepted endpoint is http(s)://HOST...
 * without credentials, spaces, control bytes, query or fragment. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "exporter_otlp.h"
#include "fuzz_target.h"

static bool tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void check_line(const char *err) {
  FUZZ_CHECK(err[0], "a refusal without a reason");
  for (const char *s = err; *s; s++)
    FUZZ_CHECK((unsigned char)*s >= 0x20 || *s == '\t', "control byte 0x%02x in \"%s\"",
               (unsigned char)*s, err);
}

static void check_headers(const char *in, int one) {
  otlp_header *h = NULL;
  size_t n = 0;
  char err[512] = "";
  int rc = otlp_parse_headers(in, "$OTEL_EXPORTER_OTLP_HEADERS", one, &h, &n, err, sizeof err);
  FUZZ_CHECK(n <= OTLP_HEADERS_MAX, "%zu headers", n);
  for (size_t i = 0; i < n; i++) {
    FUZZ_CHECK(h[i].name[0] && strlen(h[i].name) <= 256, "header name length");
    for (const char *s = h[i].name; *s; s++)
      FUZZ_CHECK(tchar((unsigned char)*s), "name byte 0x%02x", (unsigned char)*s);
    for (const char *s = h[i].value; *s; s++)
      FUZZ_CHECK((unsigned char)*s >= 0x20 && *s != 0x7f, "control byte in a value");
    FUZZ_CHECK(strcasecmp(h[i].name, "content-type") && strcasecmp(h[i].name, "content-encoding"),
               "reserved header %s accepted", h[i].name);
    for (size_t j = 0; j < i; j++)
      FUZZ_CHECK(strcasecmp(h[i].name, h[j].name) != 0, "header %s twice", h[i].name);
  }
  /* (That a refusal never echoes a value is checked where values are
   * known secrets: test_otlp and it_otlp_faults; here a name may hold any
   * value's bytes.) */
  if (rc != 0)
    check_line(err);
  otlp_headers_free(h, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 2);
  FUZZ_CHECK(buf != NULL, "out of memory");
  memcpy(buf, data, size);
  buf[size] = buf[size + 1] = '\0';
  const char *hdr = buf, *url = buf + strlen(buf) + 1;
  if ((size_t)(url - buf) > size)
    url = "";
  check_headers(hdr, 0);
  if (!strchr(hdr, ','))
    check_headers(hdr, 1);
  char err[512] = "";
  char *u = otlp_endpoint(url, err, sizeof err);
  if (u) {
    FUZZ_CHECK(!strncmp(u, "http://", 7) || !strncmp(u, "https://", 8), "endpoint %s", u);
    const char *host = u + (u[4] == 's' ? 8 : 7);
    size_t hl = strcspn(host, "/");
    FUZZ_CHECK(hl > 0 && !memchr(host, '@', hl), "endpoint host in %s", u);
    FUZZ_CHECK(!strpbrk(u, "?#"), "query or fragment in %s", u);
    for (const char *s = u; *s; s++)
      FUZZ_CHECK((unsigned char)*s > 0x20 && *s != 0x7f, "space or control byte in %s", u);
    free(u);
  } else {
    check_line(err);
  }
  free(buf);
  return 0;
}
