/* otlp+http://HOST:PORT[/PATH], otlp+https://..., or plain "otlp" (the
 * endpoint from the OTEL_EXPORTER_OTLP_* environment): ships each merged
 * profile as an OTLP ExportProfilesServiceRequest (otlp_convert.h does the
 * conversion), POSTed with Content-Type application/x-protobuf and
 * Content-Encoding gzip.
 *
 * Headers: $OTEL_EXPORTER_OTLP_HEADERS, then
 * $OTEL_EXPORTER_OTLP_PROFILES_HEADERS, then each --otlp-header, a later
 * one replacing an earlier one of the same name. Their values are
 * credentials: never logged, and scrubbed from anything a server echoes.
 *
 * Answers (the OTLP/HTTP rules):
 *   2xx  accepted; a partial_success with rejected_profiles is counted
 *        (pushprof_drops_total{reason="otlp_rejected_profiles"}) and logged,
 *        never retried (the server will not take them either);
 *   408, 429, 5xx, transport errors  retried, honouring Retry-After;
 *   other 4xx  permanent: the batch moves to failed/ with the server's
 *        google.rpc.Status message as the reason. */
#include "exporter_otlp.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exporter.h"
#include "exporter_backends.h"
#include "http_common.h"
#include "log.h"
#include "metrics.h"
#include "otlp_profiles.pb-c.h"
#include "pp_deflate.h"
#include "pp_hex.h"
#include "otlp_convert.h"
#include "pp_parse.h"

#define PPROF_PARSE_MAX ((size_t)1 << 30)
#define HEADER_NAME_MAX 256
#define HEADER_VALUE_MAX 8192
#define SCOPE_NAME "pushprof"
#define SCOPE_VERSION "0.1.0"

/* in (at most max bytes) with control bytes shown as '?': settings are
 * echoed in error lines, which must stay one printable line. */
static const char *printable(const char *in, size_t max, char *out, size_t outlen) {
  size_t o = 0;
  for (size_t i = 0; in && in[i] && i < max && o + 1 < outlen; i++)
    out[o++] = (unsigned char)in[i] < 0x20 || in[i] == 0x7f ? '?' : in[i];
  out[o] = '\0';
  return out;
}

/* ---- endpoint ---- */

static char *endpoint_from(const char *base, bool add_path, const char *what, char *err,
                           size_t errlen) {
  char sb[208];
  const char *shown = printable(base, 200, sb, sizeof sb);
  bool https = strncasecmp(base, "https://", 8) == 0;
  if (!https && strncasecmp(base, "http://", 7) != 0) {
    snprintf(err, errlen, "%s \"%s\": expected http://HOST:PORT[/PATH] or https://...", what,
             shown);
    return NULL;
  }
  const char *host = base + (https ? 8 : 7);
  size_t hostlen = strcspn(host, "/?#");
  for (const char *s = base; *s; s++)
    if ((unsigned char)*s <= 0x20 || *s == 0x7f) {
      snprintf(err, errlen, "%s \"%s\" holds spaces or control characters", what, shown);
      return NULL;
    }
  if (hostlen == 0) {
    snprintf(err, errlen, "%s \"%s\" names no host (write http://HOST:PORT)", what, shown);
    return NULL;
  }
  if (memchr(host, '@', hostlen)) {
    snprintf(err, errlen,
             "%s must not hold credentials; pass them as a header instead "
             "(--otlp-header Authorization=... or $OTEL_EXPORTER_OTLP_HEADERS)",
             what);
    return NULL;
  }
  if (strpbrk(host, "?#")) {
    snprintf(err, errlen, "%s \"%s\": OTLP endpoints take no query or fragment", what, shown);
    return NULL;
  }
  const char *path = host + hostlen;
  size_t len = strlen(base);
  bool has_path = *path && strcmp(path, "/") != 0;
  /* OTEL_EXPORTER_OTLP_ENDPOINT is a base: the signal's path goes after
   * whatever path it has. A URL without a path gets the default too. */
  bool append = add_path || !has_path;
  while (append && len > 0 && base[len - 1] == '/')
    len--;
  size_t cap = len + (append ? sizeof OTLP_DEFAULT_PATH : 1);
  char *out = malloc(cap);
  if (!out) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(out, cap, "%.*s%s", (int)len, base, append ? OTLP_DEFAULT_PATH : "");
  for (size_t i = 0; i < (https ? 5u : 4u); i++) /* scheme in lower case for libcurl */
    out[i] = (char)(out[i] | 0x20);
  return out;
}

char *otlp_endpoint(const char *url, char *err, size_t errlen) {
  if (!url) {
    snprintf(err, errlen, "no OTLP endpoint given");
    return NULL;
  }
  if (strcasecmp(url, "otlp") == 0) {
    const char *e = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
    if (e && *e)
      return endpoint_from(e, false, "$OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", err, errlen);
    e = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (e && *e)
      return endpoint_from(e, true, "$OTEL_EXPORTER_OTLP_ENDPOINT", err, errlen);
    return endpoint_from(OTLP_DEFAULT_ENDPOINT, true, "the default OTLP endpoint", err, errlen);
  }
  if (strncasecmp(url, "otlp+", 5) != 0) {
    char sb[208];
    snprintf(err, errlen,
             "export URL \"%s\": write otlp+http://HOST:PORT[/PATH], otlp+https://... or "
             "otlp (endpoint from $OTEL_EXPORTER_OTLP_ENDPOINT)",
             printable(url, 200, sb, sizeof sb));
    return NULL;
  }
  return endpoint_from(url + 5, false, "--export", err, errlen);
}

/* ---- headers ---- */

void otlp_headers_free(otlp_header *h, size_t n) {
  for (size_t i = 0; h && i < n; i++) {
    if (h[i].value)
      explicit_bzero(h[i].value, strlen(h[i].value));
    free(h[i].name);
    free(h[i].value);
  }
  free(h);
}

/* RFC 9110 token characters. */
static bool tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Headers pushprof sets itself: a configured one would clash. */
static bool reserved_header(const char *name) {
  static const char *const r[] = {"content-type", "content-encoding", "content-length", "host",
                                  "transfer-encoding"};
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
    if (strcasecmp(name, r[i]) == 0)
      return true;
  return false;
}

static int add_header(const char *entry, size_t len, const char *source, otlp_header **h, size_t *n,
                      char *err, size_t errlen) {
  while (len && (*entry == ' ' || *entry == '\t'))
    entry++, len--;
  while (len && (entry[len - 1] == ' ' || entry[len - 1] == '\t'))
    len--;
  const char *eq = memchr(entry, '=', len);
  if (!eq) {
    snprintf(err, errlen,
             "%s: an entry is not KEY=VALUE (write e.g. Authorization=Bearer%%20TOKEN; "
             "percent-encode commas and spaces in values)",
             source);
    return -1;
  }
  size_t nl = (size_t)(eq - entry);
  while (nl && (entry[nl - 1] == ' ' || entry[nl - 1] == '\t'))
    nl--;
  if (nl == 0 || nl > HEADER_NAME_MAX) {
    snprintf(err, errlen, "%s: a header name is empty or longer than %d bytes", source,
             HEADER_NAME_MAX);
    return -1;
  }
  for (size_t i = 0; i < nl; i++)
    if (!tchar((unsigned char)entry[i])) {
      char sb[72];
      snprintf(err, errlen,
               "%s: header name \"%s\" holds a character HTTP does not allow in names "
               "(letters, digits and !#$%%&'*+-.^_`|~ only)",
               source, printable(entry, nl > 64 ? 64 : nl, sb, sizeof sb));
      return -1;
    }
  char name[HEADER_NAME_MAX + 1];
  memcpy(name, entry, nl);
  name[nl] = '\0';
  if (reserved_header(name)) {
    snprintf(err, errlen, "%s: header %s is set by pushprof itself; leave it out", source, name);
    return -1;
  }
  const char *v = eq + 1;
  size_t vl = len - (size_t)(v - entry);
  while (vl && (*v == ' ' || *v == '\t'))
    v++, vl--;
  if (vl > HEADER_VALUE_MAX) {
    snprintf(err, errlen, "%s: the value of header %s is longer than %d bytes", source, name,
             HEADER_VALUE_MAX);
    return -1;
  }
  char *value = malloc(vl + 1);
  if (!value) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  size_t o = 0;
  for (size_t i = 0; i < vl; i++) {
    unsigned char ch = (unsigned char)v[i];
    if (ch == '%' && i + 2 < vl && pp_hexval(v[i + 1]) >= 0 && pp_hexval(v[i + 2]) >= 0) {
      ch = (unsigned char)(pp_hexval(v[i + 1]) * 16 + pp_hexval(v[i + 2]));
      i += 2;
    }
    if (ch < 0x20 || ch == 0x7f) {
      explicit_bzero(value, vl + 1);
      free(value);
      /* The value is a secret: name the header, never show the value. */
      snprintf(err, errlen, "%s: the value of header %s holds a control character", source, name);
      return -1;
    }
    value[o++] = (char)ch;
  }
  value[o] = '\0';
  for (size_t i = 0; i < *n; i++)
    if (strcasecmp((*h)[i].name, name) == 0) {
      explicit_bzero((*h)[i].value, strlen((*h)[i].value));
      free((*h)[i].value);
      (*h)[i].value = value;
      return 0;
    }
  if (*n >= OTLP_HEADERS_MAX) {
    explicit_bzero(value, o);
    free(value);
    snprintf(err, errlen, "%s: more than %d headers", source, OTLP_HEADERS_MAX);
    return -1;
  }
  otlp_header *nh = realloc(*h, (*n + 1) * sizeof *nh);
  char *nm = strdup(name);
  if (!nh || !nm) {
    if (nh)
      *h = nh;
    free(nm);
    explicit_bzero(value, o);
    free(value);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  *h = nh;
  nh[*n].name = nm;
  nh[*n].value = value;
  (*n)++;
  return 0;
}

int otlp_parse_headers(const char *s, const char *source, int one, otlp_header **h, size_t *n,
                       char *err, size_t errlen) {
  if (!s)
    return 0;
  if (one)
    return add_header(s, strlen(s), source, h, n, err, errlen);
  while (*s) {
    size_t len = strcspn(s, ",");
    bool blank = true;
    for (size_t i = 0; i < len; i++)
      blank &= s[i] == ' ' || s[i] == '\t';
    if (!blank && add_header(s, len, source, h, n, err, errlen) != 0)
      return -1;
    s += len;
    if (*s == ',')
      s++;
  }
  return 0;
}

/* ---- the exporter ---- */

typedef struct otlp_exporter {
  exporter base;
  http_client *http;
  char *url, *shown_url;
  otlp_header *hdr;
  size_t nhdr;
  char **lines; /* "Name: value" for libcurl, NULL-terminated */
} otlp_exporter;

static void scrub_all(const otlp_exporter *oe, char *s) {
  for (size_t i = 0; i < oe->nhdr; i++)
    if (strlen(oe->hdr[i].value) >= 4)
      http_scrub(s, oe->hdr[i].value);
}

/* The process's executable: the first mapping's file, as pprof writers put
 * the main binary first (the SDK and Go's runtime do). */
static const char *exe_name(const Perftools__Profiles__Profile *p) {
  if (p->n_mapping == 0)
    return NULL;
  int64_t fi = p->mapping[0]->filename;
  if (fi <= 0 || (size_t)fi >= p->n_string_table)
    return NULL;
  const char *f = p->string_table[fi];
  if (!*f || *f == '[')
    return NULL;
  const char *slash = strrchr(f, '/');
  return slash ? slash + 1 : f;
}

/* Builds the gzip'ed request body of obj. EXPORT_OK, or an error code. */
static int build_body(const export_object *obj, uint8_t **gz, size_t *gzlen, char *err,
                      size_t errlen) {
  char why[256];
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  int rc = EXPORT_RETRY;
  pp_otlp *o = NULL;
  pp_otlp_attr *attrs = NULL;
  pp_pprof *parsed = NULL;
  if (!obj->pprof) {
    snprintf(err, errlen, "no uncompressed profile to convert (internal error)");
    return EXPORT_PERMANENT;
  }
  parsed = pp_pprof_parse(obj->pprof, obj->pprof_len, PPROF_PARSE_MAX, why, sizeof why);
  if (!parsed) {
    snprintf(err, errlen, "the merged profile does not parse: %s", why);
    return strstr(why, "memory") ? EXPORT_RETRY : EXPORT_PERMANENT;
  }
  const Perftools__Profiles__Profile *p = pp_pprof_profile(parsed);
  attrs = calloc(obj->nlabels + 4, sizeof *attrs);
  if (!attrs || !(o = pp_otlp_new())) {
    snprintf(err, errlen, "out of memory converting to OTLP");
    goto out;
  }
  size_t na = 0;
  const char *exe = exe_name(p);
  attrs[na++] =
      (pp_otlp_attr){.key = "service.name",
                     .str = obj->service && *obj->service ? obj->service : "unknown_service"};
  if (obj->node && *obj->node)
    attrs[na++] = (pp_otlp_attr){.key = "host.name", .str = obj->node};
  if (obj->pid)
    attrs[na++] = (pp_otlp_attr){.key = "process.pid", .num = obj->pid, .is_int = true};
  if (exe)
    attrs[na++] = (pp_otlp_attr){.key = "process.executable.name", .str = exe};
  for (size_t i = 0; i < obj->nlabels; i++) {
    const char *k = obj->labels[i]->key;
    bool taken = !k || !*k;
    for (size_t j = 0; j < na && !taken; j++)
      taken = strcmp(attrs[j].key, k) == 0;
    if (!taken) /* ours win: service.name is the push's service */
      attrs[na++] = (pp_otlp_attr){.key = k, .str = obj->labels[i]->value};
  }
  if (pp_otlp_add(o, p, attrs, na, SCOPE_NAME, SCOPE_VERSION, why, sizeof why) != 0 ||
      pp_otlp_pack(o, &raw, &rawlen) != 0) {
    snprintf(err, errlen, "cannot convert the profile to OTLP: %s", why);
    goto out;
  }
  if (pp_gzip_fast(raw, rawlen, gz, gzlen) != 0) {
    snprintf(err, errlen, "out of memory compressing the OTLP request");
    goto out;
  }
  rc = EXPORT_OK;
out:
  free(raw);
  free(attrs);
  pp_otlp_free(o);
  pp_pprof_free(parsed);
  return rc;
}

/* A 2xx body: ExportProfilesServiceResponse; counts a partial success. */
static void read_success(const otlp_exporter *oe, const http_response *rs) {
  if (!rs->body || rs->body_len == 0)
    return;
  Pushprof__Otlp__ExportProfilesServiceResponse *r =
      pushprof__otlp__export_profiles_service_response__unpack(NULL, rs->body_len,
                                                               (const uint8_t *)rs->body);
  if (!r) {
    log_event(LOG_WARN, "OTLP answer 2xx with a body that is not an ExportProfilesServiceResponse",
              "bytes=%zu", rs->body_len);
    return;
  }
  if (r->partial_success &&
      (r->partial_success->rejected_profiles > 0 || r->partial_success->error_message[0])) {
    char msg[512], q[600], qu[600];
    snprintf(msg, sizeof msg, "%s", r->partial_success->error_message);
    scrub_all(oe, msg);
    int64_t n = r->partial_success->rejected_profiles;
    if (n > 0)
      metrics_drop("otlp_rejected_profiles", (uint64_t)n);
    log_event(n > 0 ? LOG_ERROR : LOG_WARN, "OTLP receiver rejected part of a request",
              "url=%s rejected_profiles=%lld message=%s", log_quote(oe->shown_url, qu, sizeof qu),
              (long long)n, log_quote(msg, q, sizeof q));
  }
  pushprof__otlp__export_profiles_service_response__free_unpacked(r, NULL);
}

/* The reason of a refused request: google.rpc.Status.message when the
 * body is one, else http_describe's summary. */
static void describe_failure(const otlp_exporter *oe, const http_response *rs, char *err,
                             size_t errlen) {
  char d[768];
  http_describe("POST", oe->url, rs, d, sizeof d);
  Pushprof__Otlp__RpcStatus *st =
      rs->body && rs->body_len
          ? pushprof__otlp__rpc_status__unpack(NULL, rs->body_len, (const uint8_t *)rs->body)
          : NULL;
  if (st && st->message && st->message[0]) {
    char m[400];
    size_t o = 0;
    for (const char *s = st->message; *s && o + 1 < sizeof m; s++)
      m[o++] = (unsigned char)*s < 0x20 ? ' ' : *s;
    m[o] = '\0';
    snprintf(err, errlen, "POST %s: HTTP %ld: %s", oe->shown_url, rs->status, m);
  } else {
    snprintf(err, errlen, "%s", d);
  }
  if (st)
    pushprof__otlp__rpc_status__free_unpacked(st, NULL);
  scrub_all(oe, err);
}

static int otlp_put(exporter *ex, const export_object *obj, char *err, size_t errlen) {
  otlp_exporter *oe = ex->impl;
  uint8_t *gz = NULL;
  size_t gzlen = 0;
  int rc = build_body(obj, &gz, &gzlen, err, errlen);
  if (rc != EXPORT_OK)
    return rc;
  http_request rq = {.method = "POST",
                     .url = oe->url,
                     .headers = (const char *const *)oe->lines,
                     .body = gz,
                     .body_len = gzlen};
  http_response rs;
  memset(&rs, 0, sizeof rs);
  int prc = http_perform(oe->http, &rq, &rs);
  rc = prc == 0 ? http_classify(&rs) : EXPORT_RETRY;
  if (rc == EXPORT_OK) {
    read_success(oe, &rs);
    snprintf(err, errlen, "%s bytes=%zu", oe->shown_url, gzlen);
  } else {
    if (rc == EXPORT_RETRY && rs.retry_after_s > 0)
      ex->retry_after_s = rs.retry_after_s;
    describe_failure(oe, &rs, err, errlen);
  }
  http_response_free(&rs);
  free(gz);
  return rc;
}

static void otlp_destroy(exporter *ex) {
  otlp_exporter *oe = ex->impl;
  http_client_free(oe->http);
  for (size_t i = 0; oe->lines && oe->lines[i]; i++) {
    explicit_bzero(oe->lines[i], strlen(oe->lines[i]));
    free(oe->lines[i]);
  }
  free(oe->lines);
  otlp_headers_free(oe->hdr, oe->nhdr);
  free(oe->url);
  free(oe->shown_url);
  free(oe);
}

exporter *exporter_otlp_create(const char *url, const exporter_options *opts, char *err,
                               size_t errlen) {
  otlp_exporter *oe = calloc(1, sizeof *oe);
  if (!oe) {
    snprintf(err, errlen, "out of memory creating the OTLP exporter");
    return NULL;
  }
  oe->base.impl = oe;
  if (!(oe->url = otlp_endpoint(url, err, errlen)))
    goto fail;
  size_t ul = strlen(oe->url) + 1;
  if (!(oe->shown_url = malloc(ul))) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  exporter_redact_url(oe->url, oe->shown_url, ul);
  if (otlp_parse_headers(getenv("OTEL_EXPORTER_OTLP_HEADERS"), "$OTEL_EXPORTER_OTLP_HEADERS", 0,
                         &oe->hdr, &oe->nhdr, err, errlen) != 0 ||
      otlp_parse_headers(getenv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS"),
                         "$OTEL_EXPORTER_OTLP_PROFILES_HEADERS", 0, &oe->hdr, &oe->nhdr, err,
                         errlen) != 0)
    goto fail;
  for (size_t i = 0; opts && i < opts->n_otlp_headers; i++)
    if (otlp_parse_headers(opts->otlp_headers[i], "--otlp-header", 1, &oe->hdr, &oe->nhdr, err,
                           errlen) != 0)
      goto fail;
  if (!(oe->lines = calloc(oe->nhdr + 3, sizeof *oe->lines))) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  oe->lines[0] = strdup("Content-Type: application/x-protobuf");
  oe->lines[1] = strdup("Content-Encoding: gzip");
  if (!oe->lines[0] || !oe->lines[1]) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  char names[512] = "";
  size_t nl = 0;
  for (size_t i = 0; i < oe->nhdr; i++) {
    size_t need = strlen(oe->hdr[i].name) + strlen(oe->hdr[i].value) + 3;
    if (!(oe->lines[2 + i] = malloc(need))) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    snprintf(oe->lines[2 + i], need, "%s: %s", oe->hdr[i].name, oe->hdr[i].value);
    if (nl < sizeof names)
      nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s", i ? "," : "", oe->hdr[i].name);
  }
  http_options ho = {0};
  if (opts) {
    ho.ca_file = opts->ca_file;
    ho.insecure_skip_verify = opts->tls_insecure_skip_verify != 0;
    ho.timeout_ms = opts->http_timeout_ms;
  }
  if (!(oe->http = http_client_new(&ho, "otlp", err, errlen)))
    goto fail;
  oe->base.scheme = "otlp";
  oe->base.wants_pprof = true;
  oe->base.put = otlp_put;
  oe->base.destroy = otlp_destroy;
  char q[600], qn[600];
  /* Header names only: their values are credentials. */
  log_event(LOG_INFO, "otlp exporter ready", "url=%s headers=%s",
            log_quote(oe->shown_url, q, sizeof q), log_quote(names, qn, sizeof qn));
  return &oe->base;
fail:
  otlp_destroy(&oe->base);
  return NULL;
}
