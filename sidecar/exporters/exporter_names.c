/* Naming helpers every exporter and the sidecar's core share; no I/O and
 * no libraries, so both pushprof-sidecar and its HTTP module compile them. */
#include "exporter.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define HASH_PREFIX 16 /* hex digits of the content hash in a name */

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

const char *exporter_profile_type(const Perftools__Profiles__Profile *p) {
  for (size_t i = 0; p && i < p->n_sample_type; i++) {
    int64_t t = p->sample_type[i]->type;
    const char *name = t >= 0 && (size_t)t < p->n_string_table ? p->string_table[t] : "";
    if (strncmp(name, "alloc_", 6) == 0 || strncmp(name, "inuse_", 6) == 0)
      return "heap";
  }
  return "";
}

int exporter_object_name(const export_object *obj, char *out, size_t outlen) {
  int64_t t = obj->start_ns;
  if (t <= 0) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  }
  time_t secs = (time_t)(t / 1000000000);
  struct tm tm;
  if (!gmtime_r(&secs, &tm))
    return -1;
  char hash[HASH_PREFIX + 1], type[32] = "";
  exporter_sanitize(obj->content_hash && *obj->content_hash ? obj->content_hash : "nohash", hash,
                    sizeof hash);
  if (obj->profile_type && *obj->profile_type) {
    type[0] = '-';
    exporter_sanitize(obj->profile_type, type + 1, sizeof type - 1);
  }
  int n = snprintf(out, outlen, "%04d%02d%02dT%02d%02d%02dZ%s-%s.pb.gz", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, type, hash);
  return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
