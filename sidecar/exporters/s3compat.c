/* The S3-compatible core shared by s3:// (exporter_s3.c) and gs:// with
 * HMAC keys (exporter_gcs.c): each batch is one PUT Object of
 *   PREFIX/<subdir...>/<node>/<service>/<UTC start time>-<hash16>.pb.gz
 * signed with SigV4 by libcurl (CURLOPT_AWS_SIGV4, provider given in full).
 * The key holds the batch's content hash, so a retried PUT rewrites the same
 * object with the same bytes: retries are idempotent. libcurl 7.88 does not
 * send x-amz-content-sha256 itself, so we hash the payload and send it (S3
 * requires it); the body goes with a Content-Length, never chunked, and no
 * empty-valued header is ever set (7.88 signs those wrongly).
 * Each backend only resolves its URL, endpoint, region and credentials and
 * calls s3compat_exporter_new(). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aws_creds.h"
#include "exporter.h"
#include "exporter_backends.h"
#include "http_common.h"
#include "log.h"

#define KEY_MAX 1024

typedef struct s3_exporter {
  exporter base;
  http_client *http;
  aws_creds *creds;
  char *bucket, *prefix;
  char *base_url;    /* scheme://host[:port]/BUCKET or scheme://BUCKET.host[:port] */
  char *provider;    /* "aws:amz:REGION:s3" */
  char *scheme_name; /* "s3" or "gs" for messages */
  bool gcs;          /* x-goog-if-generation-match: 0; 412 means already stored */
} s3_exporter;

int exporter_object_key(const char *prefix, const export_object *obj, char *out, size_t outlen) {
  char seg[256];
  size_t o = 0;
  out[0] = '\0';
#define APPEND(...)                                                                                \
  do {                                                                                             \
    int n_ = snprintf(out + o, outlen - o, __VA_ARGS__);                                           \
    if (n_ < 0 || (size_t)n_ >= outlen - o)                                                        \
      return -1;                                                                                   \
    o += (size_t)n_;                                                                               \
  } while (0)
  /* prefix and subdir may be nested ("team/prod"): sanitize each component. */
  const char *parts[2] = {prefix ? prefix : "", obj->subdir ? obj->subdir : ""};
  for (int i = 0; i < 2; i++) {
    const char *s = parts[i];
    while (*s) {
      size_t l = strcspn(s, "/");
      if (l > 0) {
        char raw[256];
        snprintf(raw, sizeof raw, "%.*s", (int)(l < sizeof raw - 1 ? l : sizeof raw - 1), s);
        APPEND("%s/", exporter_sanitize(raw, seg, sizeof seg));
      }
      s += l;
      while (*s == '/')
        s++;
    }
  }
  APPEND("%s/", exporter_sanitize(obj->node, seg, sizeof seg));
  APPEND("%s/", exporter_sanitize(obj->service, seg, sizeof seg));
  if (exporter_object_name(obj, out + o, outlen - o) != 0)
    return -1;
#undef APPEND
  return 0;
}

/* "s3://bucket/some/prefix/" -> bucket, "some/prefix". */
int exporter_parse_bucket_url(const char *url, const char *scheme, char **bucket, char **prefix,
                              char *err, size_t errlen) {
  size_t sl = strlen(scheme);
  *bucket = *prefix = NULL;
  if (strncasecmp(url, scheme, sl) != 0 || strncmp(url + sl, "://", 3) != 0) {
    snprintf(err, errlen, "export URL \"%.200s\" is not %s://BUCKET/PREFIX", url, scheme);
    return -1;
  }
  const char *b = url + sl + 3;
  size_t bl = strcspn(b, "/?#");
  if (strpbrk(b, "?#")) {
    snprintf(err, errlen, "export URL \"%.200s\": %s:// takes no query or fragment", url, scheme);
    return -1;
  }
  if (bl < 3 || bl > 63) {
    snprintf(err, errlen,
             "export URL \"%.200s\": bucket name must be 3 to 63 characters (write "
             "%s://BUCKET/PREFIX)",
             url, scheme);
    return -1;
  }
  for (size_t i = 0; i < bl; i++) {
    char c = b[i];
    if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '.' || c == '-' ||
          c == '_')) {
      snprintf(err, errlen,
               "export URL \"%.200s\": bucket names hold only a-z, 0-9, '.', '-' (and '_' on "
               "GCS)",
               url);
      return -1;
    }
  }
  const char *p = b + bl;
  while (*p == '/')
    p++;
  size_t pl = strlen(p);
  while (pl && p[pl - 1] == '/')
    pl--;
  for (size_t i = 0; i < pl; i++) {
    char c = p[i];
    if (!(isalnum((unsigned char)c) || strchr("._-~/", c))) {
      snprintf(err, errlen, "export URL \"%.200s\": the prefix may hold only A-Z a-z 0-9 . _ - ~ /",
               url);
      return -1;
    }
  }
  *bucket = strndup(b, bl);
  *prefix = strndup(p, pl);
  if (!*bucket || !*prefix) {
    free(*bucket);
    free(*prefix);
    *bucket = *prefix = NULL;
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

/* Splits an endpoint URL into scheme and authority; -1 unless it is
 * http(s)://HOST[:PORT][/]. host gets the bare host (no brackets/port). */
static int split_endpoint(const char *ep, char *scheme, size_t sl, char *auth, size_t al,
                          char *host, size_t hl) {
  const char *sep = strstr(ep, "://");
  if (!sep)
    return -1;
  size_t n = (size_t)(sep - ep);
  if (n >= sl)
    return -1;
  memcpy(scheme, ep, n);
  scheme[n] = '\0';
  if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)
    return -1;
  const char *a = sep + 3;
  size_t an = strcspn(a, "/?#");
  if (an == 0 || an >= al || strchr(a, '@'))
    return -1;
  const char *rest = a + an;
  if (*rest && strcmp(rest, "/") != 0)
    return -1;
  memcpy(auth, a, an);
  auth[an] = '\0';
  if (auth[0] == '[') {
    size_t e = strcspn(auth, "]");
    if (!auth[e] || e - 1 >= hl)
      return -1;
    memcpy(host, auth + 1, e - 1);
    host[e - 1] = '\0';
  } else {
    size_t e = strcspn(auth, ":");
    if (e >= hl)
      return -1;
    memcpy(host, auth, e);
    host[e] = '\0';
  }
  return 0;
}

static bool host_is_ip_or_local(const char *host) {
  struct in_addr a4;
  struct in6_addr a6;
  if (strcasecmp(host, "localhost") == 0)
    return true;
  size_t l = strlen(host);
  if (l > 10 && strcasecmp(host + l - 10, ".localhost") == 0)
    return true;
  return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
}

static bool is_token_error(const http_response *rs) {
  if (rs->status != 400 && rs->status != 403)
    return false;
  if (!rs->body)
    return false;
  return strstr(rs->body, "<Code>ExpiredToken</Code>") ||
         strstr(rs->body, "<Code>TokenRefreshRequired</Code>") ||
         strstr(rs->body, "<Code>InvalidToken</Code>");
}

static int s3_put(exporter *ex, const export_object *obj, char *err, size_t errlen) {
  s3_exporter *se = ex->impl;
  const aws_credentials *cr = NULL;
  char key[KEY_MAX], ekey[KEY_MAX * 3], *url = NULL, hash[65];
  char h_sha[128], *h_tok = NULL;
  int rc = aws_creds_get(se->creds, &cr, err, errlen);
  if (rc != EXPORT_OK)
    return rc;
  if (exporter_object_key(se->prefix, obj, key, sizeof key) != 0 ||
      http_uri_encode(key, true, ekey, sizeof ekey) != 0) {
    snprintf(err, errlen, "object key longer than %d bytes (shorten the prefix or names)", KEY_MAX);
    return EXPORT_PERMANENT;
  }
  if (http_sha256_hex(obj->data, obj->len, hash) != 0) {
    snprintf(err, errlen, "cannot hash the payload (libcrypto failed)");
    return EXPORT_RETRY;
  }
  size_t ul = strlen(se->base_url) + strlen(ekey) + 2;
  url = malloc(ul);
  if (!url) {
    snprintf(err, errlen, "out of memory");
    return EXPORT_RETRY;
  }
  snprintf(url, ul, "%s/%s", se->base_url, ekey);
  snprintf(h_sha, sizeof h_sha, "x-amz-content-sha256: %s", hash);
  const char *hdrs[6];
  int nh = 0;
  hdrs[nh++] = h_sha;
  hdrs[nh++] = "Content-Type: application/octet-stream";
  if (se->gcs)
    hdrs[nh++] = "x-goog-if-generation-match: 0";
  if (cr->session_token[0]) {
    size_t tl = strlen(cr->session_token) + 32;
    h_tok = malloc(tl);
    if (!h_tok) {
      snprintf(err, errlen, "out of memory");
      rc = EXPORT_RETRY;
      goto out;
    }
    snprintf(h_tok, tl, "x-amz-security-token: %s", cr->session_token);
    hdrs[nh++] = h_tok;
  }
  hdrs[nh] = NULL;
  http_request rq = {.method = "PUT",
                     .url = url,
                     .headers = hdrs,
                     .body = obj->data,
                     .body_len = obj->len,
                     .aws_sigv4 = se->provider,
                     .username = cr->access_key_id,
                     .password = cr->secret_access_key};
  http_response rs;
  (void)http_perform(se->http, &rq, &rs); /* a transport error is classified below */
  rc = http_classify(&rs);
  if (se->gcs && rs.status == 412) {
    rc = EXPORT_OK; /* ifGenerationMatch=0: an earlier try already stored it */
  } else if (rc != EXPORT_OK && is_token_error(&rs) && aws_creds_temporary(se->creds)) {
    aws_creds_invalidate(se->creds);
    rc = EXPORT_RETRY;
  }
  if (rc == EXPORT_OK) {
    snprintf(err, errlen, "%s://%s/%s%s", se->scheme_name, se->bucket, key,
             rs.status == 412 ? " (already stored)" : "");
  } else {
    http_describe("PUT", url, &rs, err, errlen);
    if (rc == EXPORT_RETRY)
      ex->retry_after_s = rs.retry_after_s;
  }
  http_response_free(&rs);
out:
  /* A server may echo request data; keep secrets out of the reason. */
  http_scrub(err, cr->secret_access_key);
  http_scrub(err, cr->session_token);
  if (h_tok) {
    explicit_bzero(h_tok, strlen(h_tok));
    free(h_tok);
  }
  free(url);
  return rc;
}

static void s3_destroy(exporter *ex) {
  s3_exporter *se = ex->impl;
  http_client_free(se->http);
  aws_creds_free(se->creds);
  free(se->bucket);
  free(se->prefix);
  free(se->base_url);
  free(se->provider);
  free(se->scheme_name);
  free(se);
}

int exporter_bucket_base_url(const char *endpoint, const char *bucket, bool path_style, char *out,
                             size_t outlen) {
  char sch[16], auth[512], host[512];
  if (split_endpoint(endpoint, sch, sizeof sch, auth, sizeof auth, host, sizeof host) != 0)
    return -1;
  /* Virtual-hosted style cannot work for IP/localhost endpoints, and breaks
   * TLS host checks for dotted bucket names. */
  if (host_is_ip_or_local(host) || strchr(bucket, '.'))
    path_style = true;
  int n = path_style ? snprintf(out, outlen, "%s://%s/%s", sch, auth, bucket)
                     : snprintf(out, outlen, "%s://%s.%s", sch, bucket, auth);
  return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

exporter *s3compat_exporter_new(const char *scheme, const char *bucket, const char *prefix,
                                const char *endpoint, const char *region, bool path_style,
                                aws_creds *creds, bool gcs, const exporter_options *opts, char *err,
                                size_t errlen) {
  char base[1200];
  s3_exporter *se = NULL;
  if (exporter_bucket_base_url(endpoint, bucket, path_style, base, sizeof base) != 0) {
    snprintf(err, errlen,
             "endpoint \"%.200s\" is not http(s)://HOST[:PORT] (no path, no user:password@)",
             endpoint);
    goto fail;
  }
  path_style = strstr(base, "://") && strchr(strstr(base, "://") + 3, '/');
  for (const char *c = region; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '-') {
      snprintf(err, errlen, "region \"%.64s\" is not a region name (e.g. eu-west-1)", region);
      goto fail;
    }
  se = calloc(1, sizeof *se);
  if (!se) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  se->base_url = strdup(base);
  size_t pl = strlen(region) + 16;
  se->provider = malloc(pl);
  se->bucket = strdup(bucket);
  se->prefix = strdup(prefix);
  se->scheme_name = strdup(scheme);
  if (!se->base_url || !se->provider || !se->bucket || !se->prefix || !se->scheme_name) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  snprintf(se->provider, pl, "aws:amz:%s:s3", region);
  http_options ho = {.ca_file = opts->ca_file,
                     .insecure_skip_verify = opts->tls_insecure_skip_verify,
                     .timeout_ms = opts->http_timeout_ms};
  se->http = http_client_new(&ho, scheme, err, errlen);
  if (!se->http)
    goto fail;
  se->creds = creds;
  se->gcs = gcs;
  se->base.scheme = se->scheme_name;
  se->base.put = s3_put;
  se->base.destroy = s3_destroy;
  se->base.impl = se;
  se->base.retry_after_s = -1;
  char q1[600];
  log_event(LOG_INFO, "object store exporter ready",
            "scheme=%s bucket=%s base_url=%s region=%s path_style=%s credentials=%s", scheme,
            bucket, log_quote(se->base_url, q1, sizeof q1), region, path_style ? "true" : "false",
            aws_creds_source(creds));
  return &se->base;
fail:
  if (se) {
    se->creds = NULL; /* the caller still owns creds on failure */
    s3_destroy(&se->base);
  }
  return NULL;
}
