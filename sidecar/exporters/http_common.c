/* libcurl plumbing shared by the HTTP exporters; see http_common.h. */
#include "http_common.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "exporter.h"
#include "log.h"
#include "metrics.h"

#define DEFAULT_MAX_RESPONSE (64u << 10)

struct http_client {
  CURL *curl;
  char *who;
  char *ca_file;
  bool insecure;
  bool ca_via_ctx; /* OpenSSL backend: add ca_file to the default store */
  long connect_timeout_ms, timeout_ms;
  /* Per-request state used by the callbacks. */
  http_response *rs;
  size_t max_body;
  char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init(void) {
  global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  xmlInitParser();
}

static bool curl_is_openssl(void) {
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  return v && v->ssl_version && strncasecmp(v->ssl_version, "OpenSSL", 7) == 0;
}

http_client *http_client_new(const http_options *o, const char *who, char *err, size_t errlen) {
  static const http_options defaults = {0};
  if (!o)
    o = &defaults;
  pthread_once(&global_once, global_init);
  if (global_rc != CURLE_OK) {
    snprintf(err, errlen, "cannot initialise libcurl: %s", curl_easy_strerror(global_rc));
    return NULL;
  }
  http_client *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory creating the %s HTTP client", who);
    return NULL;
  }
  c->who = strdup(who ? who : "http");
  c->curl = curl_easy_init();
  if (!c->who || !c->curl) {
    snprintf(err, errlen, "cannot create a libcurl handle for %s (out of memory?)", who);
    goto fail;
  }
  if (o->ca_file && *o->ca_file) {
    FILE *f = fopen(o->ca_file, "r");
    if (!f) {
      snprintf(err, errlen, "--ca-file %s: cannot read: %s (give a readable PEM file)", o->ca_file,
               strerror(errno));
      goto fail;
    }
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (!x) {
      snprintf(err, errlen, "--ca-file %s: no PEM certificate in it (give a PEM CA bundle)",
               o->ca_file);
      goto fail;
    }
    X509_free(x);
    c->ca_file = strdup(o->ca_file);
    if (!c->ca_file) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    c->ca_via_ctx = curl_is_openssl();
    if (!c->ca_via_ctx)
      log_event(LOG_WARN, "libcurl is not built on OpenSSL: --ca-file replaces the system CAs",
                "exporter=%s", c->who);
  }
  c->insecure = o->insecure_skip_verify;
  if (c->insecure)
    log_event(LOG_WARN,
              "TLS certificate and host name verification is OFF (--tls-insecure-skip-verify); "
              "anyone on the path can read and change uploads",
              "exporter=%s", c->who);
  c->connect_timeout_ms =
      o->connect_timeout_ms > 0 ? o->connect_timeout_ms : HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
  c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : HTTP_DEFAULT_TIMEOUT_MS;
  if (c->connect_timeout_ms > c->timeout_ms)
    c->connect_timeout_ms = c->timeout_ms;
  return c;
fail:
  http_client_free(c);
  return NULL;
}

void http_client_free(http_client *c) {
  if (!c)
    return;
  if (c->curl)
    curl_easy_cleanup(c->curl);
  free(c->who);
  free(c->ca_file);
  free(c);
}

void http_response_free(http_response *rs) {
  if (!rs)
    return;
  free(rs->body);
  rs->body = NULL;
  rs->body_len = 0;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *user) {
  http_client *c = user;
  http_response *rs = c->rs;
  size_t n = size * nmemb;
  size_t room = rs->body_len < c->max_body ? c->max_body - rs->body_len : 0;
  size_t take = n < room ? n : room;
  if (take) {
    char *nb = realloc(rs->body, rs->body_len + take + 1);
    if (!nb)
      return 0; /* aborts the transfer: counted as a transport error */
    memcpy(nb + rs->body_len, ptr, take);
    rs->body = nb;
    rs->body_len += take;
    rs->body[rs->body_len] = '\0';
  }
  return n;
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *user) {
  http_client *c = user;
  size_t n = size * nitems;
  if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
    /* A new response (e.g. after "100 Continue"): forget earlier headers. */
    c->rs->retry_after_s = -1;
    return n;
  }
  if (n > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
    char v[128];
    size_t l = n - 12 < sizeof v - 1 ? n - 12 : sizeof v - 1;
    memcpy(v, buf + 12, l);
    v[l] = '\0';
    c->rs->retry_after_s = http_parse_retry_after(v, time(NULL));
  }
  return n;
}

/* Adds --ca-file to the default verify store (OpenSSL backend). */
static CURLcode sslctx_cb(CURL *curl, void *sslctx, void *user) {
  (void)curl;
  http_client *c = user;
  X509_STORE *st = SSL_CTX_get_cert_store((SSL_CTX *)sslctx);
  if (!st || X509_STORE_load_file(st, c->ca_file) != 1)
    return CURLE_SSL_CACERT_BADFILE;
  return CURLE_OK;
}

#define SETOPT(opt, val)                                                                           \
  do {                                                                                             \
    if ((cc = curl_easy_setopt(h, opt, val)) != CURLE_OK)                                          \
      goto curl_fail;                                                                              \
  } while (0)

int http_perform(http_client *c, const http_request *rq, http_response *rs) {
  memset(rs, 0, sizeof *rs);
  rs->retry_after_s = -1;
  CURL *h = c->curl;
  struct curl_slist *hdrs = NULL;
  curl_mime *mime = NULL;
  CURLcode cc = CURLE_OK;
  c->rs = rs;
  c->max_body = rq->max_response_bytes ? rq->max_response_bytes : DEFAULT_MAX_RESPONSE;

  curl_easy_reset(h); /* keeps the connection cache */
  for (const char *const *p = rq->headers; p && *p; p++) {
    struct curl_slist *n = curl_slist_append(hdrs, *p);
    if (!n) {
      cc = CURLE_OUT_OF_MEMORY;
      goto curl_fail;
    }
    hdrs = n;
  }
  c->errbuf[0] = '\0';
  SETOPT(CURLOPT_ERRORBUFFER, c->errbuf);
  SETOPT(CURLOPT_URL, rq->url);
  SETOPT(CURLOPT_NOSIGNAL, 1L);
  SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
  SETOPT(CURLOPT_FOLLOWLOCATION, 0L); /* never carry credentials elsewhere */
  SETOPT(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
  SETOPT(CURLOPT_TIMEOUT_MS, c->timeout_ms);
  SETOPT(CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
  SETOPT(CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
  if (c->ca_file) {
    if (c->ca_via_ctx) {
      SETOPT(CURLOPT_SSL_CTX_FUNCTION, sslctx_cb);
      SETOPT(CURLOPT_SSL_CTX_DATA, c);
    } else {
      SETOPT(CURLOPT_CAINFO, c->ca_file);
    }
  }
  SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
  SETOPT(CURLOPT_WRITEDATA, c);
  SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
  SETOPT(CURLOPT_HEADERDATA, c);
  SETOPT(CURLOPT_USERAGENT, "pushprof-sidecar/0.1");
  if (strcmp(rq->method, "GET") == 0) {
    SETOPT(CURLOPT_HTTPGET, 1L);
  } else if (rq->form_field) {
    curl_mimepart *part;
    if (!(mime = curl_mime_init(h)) || !(part = curl_mime_addpart(mime)) ||
        curl_mime_name(part, rq->form_field) != CURLE_OK ||
        curl_mime_filename(part, rq->form_filename) != CURLE_OK ||
        curl_mime_type(part, "application/octet-stream") != CURLE_OK ||
        curl_mime_data(part, rq->body ? rq->body : "", rq->body_len) != CURLE_OK) {
      cc = CURLE_OUT_OF_MEMORY;
      goto curl_fail;
    }
    SETOPT(CURLOPT_MIMEPOST, mime);
  } else {
    /* POSTFIELDS with an explicit size: a Content-Length, never chunked, and
     * the bytes libcurl hashes for SigV4 are the bytes it sends. */
    static const char empty[1] = "";
    SETOPT(CURLOPT_POST, 1L);
    SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    SETOPT(CURLOPT_POSTFIELDS, rq->body ? rq->body : empty);
    if (strcmp(rq->method, "POST") != 0)
      SETOPT(CURLOPT_CUSTOMREQUEST, rq->method);
  }
  if (rq->username)
    SETOPT(CURLOPT_USERNAME, rq->username);
  if (rq->password)
    SETOPT(CURLOPT_PASSWORD, rq->password);
  if (rq->aws_sigv4) {
    SETOPT(CURLOPT_AWS_SIGV4, rq->aws_sigv4);
  } else if (rq->username) {
    SETOPT(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
  }
  if (hdrs)
    SETOPT(CURLOPT_HTTPHEADER, hdrs);

  cc = curl_easy_perform(h);
  curl_slist_free_all(hdrs);
  hdrs = NULL;
  if (mime) {
    (void)curl_easy_setopt(h, CURLOPT_MIMEPOST, NULL);
    curl_mime_free(mime);
    mime = NULL;
  }
  if (cc != CURLE_OK)
    goto curl_fail;
  long status = 0;
  if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status <= 0) {
    rs->transport_error = true;
    snprintf(rs->detail, sizeof rs->detail, "no HTTP status in the answer");
    goto out_err;
  }
  rs->status = status;
  c->rs = NULL;
  if (status >= 500)
    metrics_export_failure("http_5xx");
  else if (status == 429)
    metrics_export_failure("http_429");
  else if (status == 408)
    metrics_export_failure("http_408");
  else if (status >= 400)
    metrics_export_failure(status == 412 ? "http_412" : "http_4xx");
  else if (status < 200 || status >= 300)
    metrics_export_failure("http_other");
  return 0;

curl_fail:
  curl_slist_free_all(hdrs);
  if (mime) {
    (void)curl_easy_setopt(h, CURLOPT_MIMEPOST, NULL);
    curl_mime_free(mime);
  }
  rs->transport_error = true;
  rs->timed_out = cc == CURLE_OPERATION_TIMEDOUT;
  /* libcurl's texts name hosts and TLS problems, never the credentials. */
  const char *hint = "";
  if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
      cc == CURLE_SSL_CONNECT_ERROR)
    hint = " (check the endpoint's certificate; add its CA with --ca-file)";
  else if (cc == CURLE_OPERATION_TIMEDOUT)
    hint = " (raise --http-timeout if uploads are large or the link slow)";
  snprintf(rs->detail, sizeof rs->detail, "%s%s%.200s%s", curl_easy_strerror(cc),
           c->errbuf[0] ? ": " : "", c->errbuf, hint);
  metrics_export_failure(cc == CURLE_OPERATION_TIMEDOUT ? "timeout"
                         : hint[0]                      ? "tls"
                                                        : "connection");
out_err:
  rs->status = 0;
  c->rs = NULL;
  return -1;
}

int http_classify_status(long status) {
  if (status >= 200 && status < 300)
    return EXPORT_OK;
  if (status == 408 || status == 429 || (status >= 500 && status < 600))
    return EXPORT_RETRY;
  if (status <= 0)
    return EXPORT_RETRY;
  return EXPORT_PERMANENT;
}

int http_classify(const http_response *rs) {
  if (rs->transport_error || rs->status == 0)
    return EXPORT_RETRY;
  return http_classify_status(rs->status);
}

int http_parse_retry_after(const char *value, time_t now) {
  if (!value)
    return -1;
  while (*value == ' ' || *value == '\t')
    value++;
  char v[128];
  size_t l = strcspn(value, "\r\n");
  if (l == 0 || l >= sizeof v)
    return -1;
  memcpy(v, value, l);
  while (l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\t'))
    l--;
  v[l] = '\0';
  if (l == 0)
    return -1;
  bool digits = true;
  for (size_t i = 0; i < l; i++)
    if (!isdigit((unsigned char)v[i]))
      digits = false;
  if (digits) {
    if (l > 9)
      return HTTP_MAX_RETRY_AFTER_S;
    long s = strtol(v, NULL, 10);
    return s > HTTP_MAX_RETRY_AFTER_S ? HTTP_MAX_RETRY_AFTER_S : (int)s;
  }
  time_t t = curl_getdate(v, NULL);
  if (t == (time_t)-1)
    return -1;
  if (t <= now)
    return 0;
  return t - now > HTTP_MAX_RETRY_AFTER_S ? HTTP_MAX_RETRY_AFTER_S : (int)(t - now);
}

void http_scrub(char *s, const char *secret) {
  if (!s || !secret)
    return;
  size_t sl = strlen(secret);
  if (sl < 4)
    return;
  for (char *p = strstr(s, secret); p; p = strstr(p + sl, secret))
    memset(p, '*', sl);
}

/* Copies printable text, collapsing whitespace, at most outlen-1 bytes. */
static void printable(const char *in, size_t inlen, char *out, size_t outlen) {
  size_t o = 0;
  bool space = false;
  for (size_t i = 0; i < inlen && o + 1 < outlen; i++) {
    unsigned char ch = (unsigned char)in[i];
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
      space = o > 0;
      continue;
    }
    if (space && o + 2 < outlen)
      out[o++] = ' ';
    space = false;
    out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
  }
  out[o] = '\0';
}

static const char *xml_child_text(xmlNode *parent, const char *name, char *buf, size_t len) {
  for (xmlNode *n = parent ? parent->children : NULL; n; n = n->next) {
    if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0) {
      xmlChar *t = xmlNodeGetContent(n);
      if (!t)
        return NULL;
      printable((const char *)t, strlen((const char *)t), buf, len);
      xmlFree(t);
      return buf;
    }
  }
  return NULL;
}

/* "Code: Message" from an S3/GCS XML error, "message" from a JSON error,
 * else the first printable bytes of the body. */
static void summarize_body(const http_response *rs, char *out, size_t outlen) {
  out[0] = '\0';
  if (!rs->body || !rs->body_len)
    return;
  const char *b = rs->body;
  while (*b == ' ' || *b == '\n' || *b == '\r' || *b == '\t')
    b++;
  if (*b == '<') {
    xmlDoc *doc = xmlReadMemory(rs->body, (int)rs->body_len, "error.xml", NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (doc) {
      char code[96] = "", msg[200] = "";
      xmlNode *root = xmlDocGetRootElement(doc);
      bool c = xml_child_text(root, "Code", code, sizeof code) != NULL;
      bool m = xml_child_text(root, "Message", msg, sizeof msg) != NULL;
      xmlFreeDoc(doc);
      if (c || m) {
        snprintf(out, outlen, "%s%s%s", code, c && m ? ": " : "", msg);
        return;
      }
    }
  } else if (*b == '{') {
    json_error_t je;
    json_t *j = json_loadb(rs->body, rs->body_len, 0, &je);
    if (j) {
      json_t *e = json_object_get(j, "error");
      const char *m = json_string_value(json_object_get(e, "message"));
      if (!m)
        m = json_string_value(e);
      if (!m)
        m = json_string_value(json_object_get(j, "message"));
      if (m)
        printable(m, strlen(m), out, outlen);
      json_decref(j);
      if (out[0])
        return;
    }
  }
  printable(rs->body, rs->body_len < 160 ? rs->body_len : 160, out, outlen);
}

void http_describe(const char *method, const char *url, const http_response *rs, char *err,
                   size_t errlen) {
  char u[512], body[256];
  exporter_redact_url(url, u, sizeof u);
  if (rs->transport_error || rs->status == 0) {
    snprintf(err, errlen, "%s %s: %s", method, u, rs->detail[0] ? rs->detail : "no answer");
    return;
  }
  summarize_body(rs, body, sizeof body);
  snprintf(err, errlen, "%s %s: HTTP %ld%s%s", method, u, rs->status, body[0] ? ": " : "", body);
}

int http_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
    unsigned char ch = *p;
    bool keep = isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' ||
                (keep_slash && ch == '/');
    if (keep) {
      if (o + 1 >= outlen)
        return -1;
      out[o++] = (char)ch;
    } else {
      if (o + 3 >= outlen)
        return -1;
      out[o++] = '%';
      out[o++] = hex[ch >> 4];
      out[o++] = hex[ch & 15];
    }
  }
  if (o >= outlen)
    return -1;
  out[o] = '\0';
  return 0;
}

int http_sha256_hex(const void *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  static const char hex[] = "0123456789abcdef";
  if (EVP_Digest(data ? data : "", len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
    return -1;
  for (unsigned i = 0; i < 32; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[64] = '\0';
  return 0;
}
