/* gs://BUCKET/PREFIX, object names as for S3 (exporter_object_key).
 * Two ways in:
 *  - HMAC keys (PUSHPROF_GCS_HMAC_ACCESS_ID + PUSHPROF_GCS_HMAC_SECRET):
 *    the XML API's S3-compatible SigV4 signing, the core s3:// uses too
 *    (s3compat.c)
 *    (region "auto"), with x-goog-if-generation-match: 0.
 *  - A bearer token: GOOGLE_OAUTH_ACCESS_TOKEN, else the metadata server's
 *    token endpoint (GKE Workload Identity, GCE; host from GCE_METADATA_HOST,
 *    else metadata.google.internal), cached and refreshed before expires_in
 *    runs out; JSON API simple upload (uploadType=media).
 * Both ask for ifGenerationMatch=0, so a retry never overwrites: a 412 on a
 * retry means an earlier attempt stored the object, which counts as done.
 * The endpoint is --gcs-endpoint, else STORAGE_EMULATOR_HOST, else
 * https://storage.googleapis.com. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "aws_creds.h"
#include "exporter.h"
#include "exporter_backends.h"
#include "http_common.h"
#include "log.h"

#define KEY_MAX 1024
#define TOKEN_MAX 8192
#define REFRESH_MARGIN_S 300

typedef struct gcs_exporter {
  exporter base;
  http_client *http; /* uploads */
  http_client *meta; /* metadata server */
  char *bucket, *prefix, *endpoint, *meta_url;
  char token[TOKEN_MAX]; /* secret */
  bool static_token;
  time_t refresh_at, expires;
} gcs_exporter;

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static void wipe_token(gcs_exporter *ge) {
  explicit_bzero(ge->token, sizeof ge->token);
  ge->refresh_at = ge->expires = 0;
}

static bool token_chars_ok(const char *t) {
  for (; *t; t++)
    if ((unsigned char)*t < 0x21 || (unsigned char)*t > 0x7e)
      return false;
  return true;
}

/* Fetches a token from the metadata server. EXPORT_OK or EXPORT_RETRY. */
static int fetch_token(gcs_exporter *ge, char *err, size_t errlen) {
  static const char *const hdrs[] = {"Metadata-Flavor: Google", "Accept: application/json", NULL};
  http_request rq = {.method = "GET", .url = ge->meta_url, .headers = hdrs};
  http_response rs;
  int rc = EXPORT_RETRY;
  json_t *j = NULL;
  if (http_perform(ge->meta, &rq, &rs) != 0 || rs.status != 200) {
    char d[512];
    http_describe("GET", ge->meta_url, &rs, d, sizeof d);
    snprintf(err, errlen,
             "cannot get a GCS access token from the metadata server: %s (on GKE enable "
             "Workload Identity, or set GOOGLE_OAUTH_ACCESS_TOKEN or HMAC keys)",
             d);
    goto out;
  }
  json_error_t je;
  j = json_loadb(rs.body, rs.body_len, 0, &je);
  const char *tok = json_string_value(json_object_get(j, "access_token"));
  json_t *ei = json_object_get(j, "expires_in");
  if (!tok || !*tok || strlen(tok) >= sizeof ge->token || !token_chars_ok(tok) ||
      !json_is_integer(ei) || json_integer_value(ei) <= 0) {
    snprintf(err, errlen, "metadata server token answer lacks a usable access_token/expires_in");
    goto out;
  }
  time_t now = time(NULL);
  long long life = json_integer_value(ei);
  if (life > 86400)
    life = 86400; /* tokens live an hour; a huge value must not overflow time_t maths */
  wipe_token(ge);
  snprintf(ge->token, sizeof ge->token, "%s", tok);
  ge->expires = now + (time_t)life;
  ge->refresh_at = aws_creds_refresh_at(now, ge->expires);
  log_event(LOG_INFO, "GCS access token obtained",
            "source=metadata expires_in_s=%lld refresh_in_s=%lld", life,
            (long long)(ge->refresh_at - now));
  rc = EXPORT_OK;
out:
  if (j) {
    /* jansson owns its copy of the token; scrub it before it is freed. */
    const char *t = json_string_value(json_object_get(j, "access_token"));
    if (t)
      explicit_bzero((char *)t, strlen(t));
    json_decref(j);
  }
  if (rs.body)
    explicit_bzero(rs.body, rs.body_len);
  http_response_free(&rs);
  return rc;
}

static int gcs_put(exporter *ex, const export_object *obj, char *err, size_t errlen) {
  gcs_exporter *ge = ex->impl;
  char key[KEY_MAX], ename[KEY_MAX * 3], *url = NULL, *auth = NULL;
  int rc;
  if (!ge->static_token && (!ge->token[0] || time(NULL) >= ge->refresh_at)) {
    rc = fetch_token(ge, err, errlen);
    if (rc != EXPORT_OK) {
      if (!ge->token[0] || time(NULL) + 10 >= ge->expires)
        return rc;
      char q[600];
      log_event(LOG_WARN, "cannot refresh the GCS token; using the current one until it expires",
                "reason=%s", log_quote(err, q, sizeof q));
    }
  }
  if (exporter_object_key(ge->prefix, obj, key, sizeof key) != 0 ||
      http_uri_encode(key, false, ename, sizeof ename) != 0) {
    snprintf(err, errlen, "object name longer than %d bytes (shorten the prefix or names)",
             KEY_MAX);
    return EXPORT_PERMANENT;
  }
  size_t ul = strlen(ge->endpoint) + strlen(ge->bucket) + strlen(ename) + 96;
  size_t al = strlen(ge->token) + 32;
  url = malloc(ul);
  auth = malloc(al);
  if (!url || !auth) {
    snprintf(err, errlen, "out of memory");
    rc = EXPORT_RETRY;
    goto out;
  }
  snprintf(url, ul, "%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s&ifGenerationMatch=0",
           ge->endpoint, ge->bucket, ename);
  snprintf(auth, al, "Authorization: Bearer %s", ge->token);
  const char *hdrs[] = {auth, "Content-Type: application/octet-stream", NULL};
  http_request rq = {
      .method = "POST", .url = url, .headers = hdrs, .body = obj->data, .body_len = obj->len};
  http_response rs;
  (void)http_perform(ge->http, &rq, &rs); /* a transport error is classified below */
  rc = http_classify(&rs);
  if (rs.status == 412) {
    rc = EXPORT_OK;
  } else if (rs.status == 401 && !ge->static_token) {
    wipe_token(ge); /* revoked or expired early: fetch a new one next time */
    rc = EXPORT_RETRY;
  }
  if (rc == EXPORT_OK) {
    snprintf(err, errlen, "gs://%s/%s%s", ge->bucket, key,
             rs.status == 412 ? " (already stored)" : "");
  } else {
    http_describe("POST", url, &rs, err, errlen);
    if (rs.status == 401 && ge->static_token)
      snprintf(err + strlen(err), errlen - strlen(err),
               " (GOOGLE_OAUTH_ACCESS_TOKEN refused: refresh it)");
    if (rc == EXPORT_RETRY)
      ex->retry_after_s = rs.retry_after_s;
  }
  http_response_free(&rs);
out:
  http_scrub(err, ge->token);
  if (auth) {
    explicit_bzero(auth, al);
    free(auth);
  }
  free(url);
  return rc;
}

static void gcs_destroy(exporter *ex) {
  gcs_exporter *ge = ex->impl;
  http_client_free(ge->http);
  http_client_free(ge->meta);
  free(ge->bucket);
  free(ge->prefix);
  free(ge->endpoint);
  free(ge->meta_url);
  wipe_token(ge);
  free(ge);
}

/* "host:port" or a full URL -> URL without a trailing '/'. */
static char *as_url(const char *v) {
  size_t l = strlen(v);
  while (l && v[l - 1] == '/')
    l--;
  bool has_scheme = strstr(v, "://") != NULL;
  size_t n = l + 8;
  char *u = malloc(n + 1);
  if (u)
    snprintf(u, n + 1, "%s%.*s", has_scheme ? "" : "http://", (int)l, v);
  return u;
}

exporter *exporter_gcs_create(const char *url, const exporter_options *opts, char *err,
                              size_t errlen) {
  char *bucket = NULL, *prefix = NULL, *endpoint = NULL, why[700];
  exporter *ex = NULL;
  gcs_exporter *ge = NULL;
  if (exporter_parse_bucket_url(url, "gs", &bucket, &prefix, err, errlen) != 0)
    return NULL;
  const char *ep = opts->gcs_endpoint && *opts->gcs_endpoint ? opts->gcs_endpoint
                   : env("STORAGE_EMULATOR_HOST")            ? env("STORAGE_EMULATOR_HOST")
                                                             : "https://storage.googleapis.com";
  endpoint = as_url(ep);
  if (!endpoint) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  const char *hid = env("PUSHPROF_GCS_HMAC_ACCESS_ID"), *hsec = env("PUSHPROF_GCS_HMAC_SECRET");
  if (hid || hsec) {
    if (!hid || !hsec) {
      snprintf(err, errlen,
               "GCS HMAC needs both PUSHPROF_GCS_HMAC_ACCESS_ID and "
               "PUSHPROF_GCS_HMAC_SECRET");
      goto out;
    }
    aws_creds *cr = aws_creds_new_static(hid, hsec, why, sizeof why);
    if (!cr) {
      snprintf(err, errlen, "GCS HMAC key: %s", why);
      goto out;
    }
    ex = s3compat_exporter_new("gs", bucket, prefix, endpoint, "auto", true, cr, true, opts, why,
                               sizeof why);
    if (!ex) {
      aws_creds_free(cr);
      snprintf(err, errlen, "%s (fix --gcs-endpoint)", why);
    }
    goto out;
  }
  ge = calloc(1, sizeof *ge);
  if (!ge) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  ge->base.impl = ge; /* gcs_destroy, on the failures below too, finds ge here */
  http_options ho = {.ca_file = opts->ca_file,
                     .insecure_skip_verify = opts->tls_insecure_skip_verify,
                     .timeout_ms = opts->http_timeout_ms};
  ge->http = http_client_new(&ho, "gs", err, errlen);
  if (!ge->http)
    goto fail;
  const char *tok = env("GOOGLE_OAUTH_ACCESS_TOKEN");
  if (tok) {
    if (strlen(tok) >= sizeof ge->token || !token_chars_ok(tok)) {
      snprintf(err, errlen, "GOOGLE_OAUTH_ACCESS_TOKEN is too long or holds spaces/control bytes");
      goto fail;
    }
    snprintf(ge->token, sizeof ge->token, "%s", tok);
    ge->static_token = true;
  } else {
    const char *mh = env("GCE_METADATA_HOST");
    char base[300];
    snprintf(base, sizeof base, "%s", mh ? mh : "metadata.google.internal");
    char *mb = as_url(base);
    size_t ml = mb ? strlen(mb) + 80 : 0;
    ge->meta_url = mb ? malloc(ml) : NULL;
    if (!ge->meta_url) {
      free(mb);
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    snprintf(ge->meta_url, ml, "%s/computeMetadata/v1/instance/service-accounts/default/token", mb);
    free(mb);
    http_options mo = {.timeout_ms = 10000}; /* plain http on the node, by design */
    ge->meta = http_client_new(&mo, "gs-metadata", err, errlen);
    if (!ge->meta)
      goto fail;
  }
  ge->bucket = bucket;
  ge->prefix = prefix;
  ge->endpoint = endpoint;
  bucket = prefix = endpoint = NULL;
  ge->base.scheme = "gs";
  ge->base.put = gcs_put;
  ge->base.destroy = gcs_destroy;
  ge->base.retry_after_s = -1;
  char q[600];
  log_event(LOG_INFO, "object store exporter ready",
            "scheme=gs bucket=%s endpoint=%s credentials=%s", ge->bucket,
            log_quote(ge->endpoint, q, sizeof q),
            ge->static_token ? "GOOGLE_OAUTH_ACCESS_TOKEN" : "metadata");
  ex = &ge->base;
  goto out;
fail:
  gcs_destroy(&ge->base);
out:
  free(bucket);
  free(prefix);
  free(endpoint);
  return ex;
}
