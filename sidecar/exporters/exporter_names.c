/* Naming helpers every exporter and the sidecar's core share; no I/O and
 * no libraries, so both pushprof-sidecar and its HTTP module compile them. */
#include "exporter.h"

#include <stdbool.h>
#include <string.h>

const char *exporter_sanitize(const char *in, char *out, size_t outlen) {
  if (!out || outlen == 0)
    return "";
  size_t o = 0;
  if (in) {
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 1 < outlen; p++) {
      unsigned char c = *p;
      bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
      out[o++] = ok ? (char)c : '_';
    }
  }
  out[o] = '\0';
  /* Segments that would mean something to a path resolver. */
  if (o == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
    if (outlen >= 2) {
      out[0] = '_';
      out[1] = '\0';
    }
  }
  return out;
}

void exporter_redact_url(const char *url, char *out, size_t outlen) {
  if (!out || !outlen)
    return;
  out[0] = '\0';
  if (!url)
    return;
  const char *p = url, *sep = strstr(url, "://");
  size_t o = 0;
  if (sep) {
    size_t sl = (size_t)(sep - url) + 3;
    o = sl < outlen - 1 ? sl : outlen - 1;
    memcpy(out, url, o);
    p = sep + 3;
    /* userinfo ends at the last '@' before the path. */
    size_t auth = strcspn(p, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < auth; i++)
      if (p[i] == '@')
        at = p + i;
    if (at)
      p = at + 1;
  }
  size_t rest = strcspn(p, "?#");
  if (rest > outlen - 1 - o)
    rest = outlen - 1 - o;
  memcpy(out + o, p, rest);
  out[o + rest] = '\0';
}
