/* AWS credential sources for the S3 exporter; see aws_creds.h. */
#include "aws_creds.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "exporter.h"
#include "log.h"

#define TOKEN_FILE_MAX (64u << 10)
#define REFRESH_MARGIN_S 300

enum src { SRC_ENV, SRC_IRSA, SRC_POD, SRC_STATIC };

struct aws_creds {
  enum src src;
  http_client *http;
  char *role_arn, *token_file, *sts_url, *session_name; /* IRSA */
  char *full_uri, *auth_token_file, *auth_token;        /* pod identity (auth_token: secret) */
  aws_credentials cur;
  bool have;
  time_t refresh_at;
};

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static void wipe(void *p, size_t n) {
  if (p)
    explicit_bzero(p, n);
}

static void free_secret(char *s) {
  if (s) {
    wipe(s, strlen(s));
    free(s);
  }
}

int aws_parse_iso8601(const char *s, time_t *out) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (!s)
    return -1;
  while (isspace((unsigned char)*s))
    s++;
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end)
    return -1;
  if (*end == '.') {
    end++;
    while (isdigit((unsigned char)*end))
      end++;
  }
  long off = 0;
  if (*end == 'Z' || *end == 'z') {
    end++;
  } else if ((*end == '+' || *end == '-') && isdigit((unsigned char)end[1]) &&
             isdigit((unsigned char)end[2]) && end[3] == ':' && isdigit((unsigned char)end[4]) &&
             isdigit((unsigned char)end[5])) {
    off =
        ((end[1] - '0') * 10 + (end[2] - '0')) * 3600 + ((end[4] - '0') * 10 + (end[5] - '0')) * 60;
    if (*end == '-')
      off = -off;
    end += 6;
  } else {
    return -1;
  }
  while (isspace((unsigned char)*end))
    end++;
  if (*end)
    return -1;
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *out = t - off;
  return 0;
}

time_t aws_creds_refresh_at(time_t now, time_t exp) {
  if (exp <= 0)
    return 0;
  time_t life = exp - now;
  if (life <= 0)
    return now;
  time_t margin = life / 2 < REFRESH_MARGIN_S ? life / 2 : REFRESH_MARGIN_S;
  return exp - margin;
}

static int copy_field(char *dst, size_t dstlen, const char *src, const char *what, char *err,
                      size_t errlen) {
  size_t l = src ? strlen(src) : 0;
  if (l == 0 || l >= dstlen) {
    snprintf(err, errlen, "%s %s", what, l ? "too long" : "missing");
    return -1;
  }
  for (size_t i = 0; i < l; i++)
    if ((unsigned char)src[i] < 0x21 || (unsigned char)src[i] > 0x7e) {
      snprintf(err, errlen, "%s holds a character that cannot go in a header", what);
      return -1;
    }
  memcpy(dst, src, l + 1);
  return 0;
}

/* First element named name (any namespace) below n, depth-first. */
static xmlNode *find_elem(xmlNode *n, const char *name) {
  for (; n; n = n->next) {
    if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0)
      return n;
    xmlNode *c = find_elem(n->children, name);
    if (c)
      return c;
  }
  return NULL;
}

static char *elem_text(xmlNode *parent, const char *name) {
  xmlNode *n = parent ? find_elem(parent->children, name) : NULL;
  if (!n)
    return NULL;
  xmlChar *t = xmlNodeGetContent(n);
  if (!t)
    return NULL;
  char *s = strdup((const char *)t);
  wipe(t, strlen((const char *)t));
  xmlFree(t);
  if (s) { /* trim */
    size_t l = strlen(s);
    while (l && isspace((unsigned char)s[l - 1]))
      s[--l] = '\0';
    size_t lead = strspn(s, " \t\r\n");
    memmove(s, s + lead, l - lead + 1);
  }
  return s;
}

int aws_creds_parse_sts(const char *xml, size_t len, aws_credentials *out, char *err,
                        size_t errlen) {
  int rc = -1;
  char *ak = NULL, *sk = NULL, *tok = NULL, *exp = NULL;
  memset(out, 0, sizeof *out);
  if (!xml || len == 0 || len > (1u << 20)) {
    snprintf(err, errlen, "empty or oversized STS answer");
    return -1;
  }
  xmlDoc *doc = xmlReadMemory(xml, (int)len, "sts.xml", NULL,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) {
    snprintf(err, errlen, "STS answer is not XML");
    return -1;
  }
  xmlNode *root = xmlDocGetRootElement(doc);
  xmlNode *cred = root ? find_elem(root, "Credentials") : NULL;
  if (!cred) {
    snprintf(err, errlen, "STS answer has no Credentials element");
    goto out;
  }
  ak = elem_text(cred, "AccessKeyId");
  sk = elem_text(cred, "SecretAccessKey");
  tok = elem_text(cred, "SessionToken");
  exp = elem_text(cred, "Expiration");
  if (copy_field(out->access_key_id, sizeof out->access_key_id, ak, "STS AccessKeyId", err,
                 errlen) != 0 ||
      copy_field(out->secret_access_key, sizeof out->secret_access_key, sk, "STS SecretAccessKey",
                 err, errlen) != 0 ||
      copy_field(out->session_token, sizeof out->session_token, tok, "STS SessionToken", err,
                 errlen) != 0)
    goto out;
  if (!exp || aws_parse_iso8601(exp, &out->expiration) != 0) {
    snprintf(err, errlen, "STS Expiration missing or not ISO 8601");
    goto out;
  }
  rc = 0;
out:
  free_secret(ak);
  free_secret(sk);
  free_secret(tok);
  free(exp);
  xmlFreeDoc(doc);
  if (rc != 0)
    wipe(out, sizeof *out);
  return rc;
}

int aws_creds_parse_container(const char *json, size_t len, aws_credentials *out, char *err,
                              size_t errlen) {
  memset(out, 0, sizeof *out);
  json_error_t je;
  json_t *j = json && len ? json_loadb(json, len, 0, &je) : NULL;
  if (!j || !json_is_object(j)) {
    snprintf(err, errlen, "credentials answer is not a JSON object");
    json_decref(j);
    return -1;
  }
  int rc = -1;
  const char *exp = json_string_value(json_object_get(j, "Expiration"));
  if (copy_field(out->access_key_id, sizeof out->access_key_id,
                 json_string_value(json_object_get(j, "AccessKeyId")), "AccessKeyId", err,
                 errlen) != 0 ||
      copy_field(out->secret_access_key, sizeof out->secret_access_key,
                 json_string_value(json_object_get(j, "SecretAccessKey")), "SecretAccessKey", err,
                 errlen) != 0 ||
      copy_field(out->session_token, sizeof out->session_token,
                 json_string_value(json_object_get(j, "Token")), "Token", err, errlen) != 0)
    goto out;
  if (!exp || aws_parse_iso8601(exp, &out->expiration) != 0) {
    snprintf(err, errlen, "credentials Expiration missing or not ISO 8601");
    goto out;
  }
  rc = 0;
out:
  /* jansson keeps its own copies; they go with the object. */
  json_decref(j);
  if (rc != 0)
    wipe(out, sizeof *out);
  return rc;
}

/* Reads a small token file, trimmed; malloc'ed secret or NULL with err. */
static char *read_token_file(const char *path, const char *var, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "%s %s: cannot open: %s (is the token volume mounted?)", var, path,
             strerror(errno));
    return NULL;
  }
  char *buf = malloc(TOKEN_FILE_MAX + 1);
  size_t n = 0;
  if (!buf) {
    close(fd);
    snprintf(err, errlen, "out of memory reading %s", var);
    return NULL;
  }
  for (;;) {
    ssize_t r = read(fd, buf + n, TOKEN_FILE_MAX - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      snprintf(err, errlen, "%s %s: cannot read: %s", var, path, strerror(errno));
      goto fail;
    }
    if (r == 0)
      break;
    n += (size_t)r;
    if (n == TOKEN_FILE_MAX) {
      snprintf(err, errlen, "%s %s: larger than %u bytes", var, path, TOKEN_FILE_MAX);
      goto fail;
    }
  }
  close(fd);
  fd = -1;
  buf[n] = '\0';
  while (n && isspace((unsigned char)buf[n - 1]))
    buf[--n] = '\0';
  if (n == 0) {
    snprintf(err, errlen, "%s %s is empty", var, path);
    goto fail;
  }
  return buf;
fail:
  if (fd >= 0)
    close(fd);
  wipe(buf, TOKEN_FILE_MAX + 1);
  free(buf);
  return NULL;
}

/* Appends "&name=" + encoded value to a growing buffer; -1 on ENOMEM. */
static int form_add(char **buf, size_t *len, size_t *cap, const char *name, const char *value) {
  size_t need = *len + strlen(name) + 2 + strlen(value) * 3 + 1;
  if (need > *cap) {
    size_t ncap = need * 2;
    char *nb = malloc(ncap);
    if (!nb)
      return -1;
    if (*buf) {
      memcpy(nb, *buf, *len + 1);
      wipe(*buf, *cap);
      free(*buf);
    }
    *buf = nb;
    *cap = ncap;
  }
  *len += (size_t)snprintf(*buf + *len, *cap - *len, "%s%s=", *len ? "&" : "", name);
  if (http_uri_encode(value, false, *buf + *len, *cap - *len) != 0)
    return -1;
  *len += strlen(*buf + *len);
  return 0;
}

/* Classifies a failed credentials fetch: always RETRY (the batch is fine;
 * an operator fixes the role or agent and nothing is lost), described. */
static int fetch_failed(const char *what, const char *method, const char *url,
                        const http_response *rs, char *err, size_t errlen) {
  char d[512];
  http_describe(method, url, rs, d, sizeof d);
  snprintf(err, errlen, "cannot get AWS credentials from %s: %s", what, d);
  return EXPORT_RETRY;
}

static int fetch_irsa(aws_creds *p, aws_credentials *out, char *err, size_t errlen) {
  char *tok = read_token_file(p->token_file, "AWS_WEB_IDENTITY_TOKEN_FILE", err, errlen);
  if (!tok)
    return EXPORT_RETRY;
  char *body = NULL;
  size_t len = 0, cap = 0;
  int rc = EXPORT_RETRY;
  if (form_add(&body, &len, &cap, "Action", "AssumeRoleWithWebIdentity") != 0 ||
      form_add(&body, &len, &cap, "Version", "2011-06-15") != 0 ||
      form_add(&body, &len, &cap, "RoleArn", p->role_arn) != 0 ||
      form_add(&body, &len, &cap, "RoleSessionName", p->session_name) != 0 ||
      form_add(&body, &len, &cap, "WebIdentityToken", tok) != 0) {
    snprintf(err, errlen, "out of memory building the STS request");
    goto out;
  }
  static const char *const hdrs[] = {"Content-Type: application/x-www-form-urlencoded",
                                     "Accept: application/xml", NULL};
  http_request rq = {
      .method = "POST", .url = p->sts_url, .headers = hdrs, .body = body, .body_len = len};
  http_response rs;
  if (http_perform(p->http, &rq, &rs) != 0 || rs.status != 200) {
    rc = fetch_failed("STS AssumeRoleWithWebIdentity (IRSA)", "POST", p->sts_url, &rs, err, errlen);
    http_scrub(err, tok);
    http_response_free(&rs);
    goto out;
  }
  char why[256];
  if (aws_creds_parse_sts(rs.body, rs.body_len, out, why, sizeof why) != 0) {
    snprintf(err, errlen, "STS AssumeRoleWithWebIdentity (IRSA) at %s: %s", p->sts_url, why);
  } else {
    rc = EXPORT_OK;
  }
  wipe(rs.body, rs.body_len);
  http_response_free(&rs);
out:
  if (body) {
    wipe(body, cap);
    free(body);
  }
  wipe(tok, strlen(tok));
  free(tok);
  return rc;
}

static int fetch_pod(aws_creds *p, aws_credentials *out, char *err, size_t errlen) {
  char *tok = NULL;
  if (p->auth_token_file) {
    tok =
        read_token_file(p->auth_token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", err, errlen);
    if (!tok)
      return EXPORT_RETRY;
  } else if (p->auth_token) {
    tok = strdup(p->auth_token);
    if (!tok) {
      snprintf(err, errlen, "out of memory");
      return EXPORT_RETRY;
    }
  }
  int rc = EXPORT_RETRY;
  size_t hlen = tok ? strlen(tok) + 32 : 0;
  char *auth = tok ? malloc(hlen) : NULL;
  if (tok && !auth) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  if (auth)
    snprintf(auth, hlen, "Authorization: %s", tok);
  const char *hdrs[] = {"Accept: application/json", auth, NULL};
  http_request rq = {.method = "GET", .url = p->full_uri, .headers = hdrs};
  http_response rs;
  if (http_perform(p->http, &rq, &rs) != 0 || rs.status != 200) {
    rc = fetch_failed("the EKS Pod Identity agent (AWS_CONTAINER_CREDENTIALS_FULL_URI)", "GET",
                      p->full_uri, &rs, err, errlen);
    http_scrub(err, tok);
    http_response_free(&rs);
    goto out;
  }
  char why[256];
  if (aws_creds_parse_container(rs.body, rs.body_len, out, why, sizeof why) != 0)
    snprintf(err, errlen, "EKS Pod Identity agent answer: %s", why);
  else
    rc = EXPORT_OK;
  wipe(rs.body, rs.body_len);
  http_response_free(&rs);
out:
  if (auth) {
    wipe(auth, hlen);
    free(auth);
  }
  if (tok) {
    wipe(tok, strlen(tok));
    free(tok);
  }
  return rc;
}

/* The container credentials URI must be https, or http to a loopback or
 * the ECS/EKS link-local agent addresses (what the AWS SDKs accept). */
static bool container_uri_ok(const char *uri) {
  if (strncasecmp(uri, "https://", 8) == 0)
    return true;
  if (strncasecmp(uri, "http://", 7) != 0)
    return false;
  const char *h = uri + 7;
  char host[128];
  size_t l;
  if (*h == '[') {
    h++;
    l = strcspn(h, "]");
  } else {
    l = strcspn(h, ":/");
  }
  if (l == 0 || l >= sizeof host)
    return false;
  memcpy(host, h, l);
  host[l] = '\0';
  if (strcasecmp(host, "localhost") == 0 || strcmp(host, "169.254.170.2") == 0 ||
      strcmp(host, "169.254.170.23") == 0 || strcasecmp(host, "fd00:ec2::23") == 0)
    return true;
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

aws_creds *aws_creds_new(const http_options *ho, const char *region, char *err, size_t errlen) {
  aws_creds *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
  const char *role = env("AWS_ROLE_ARN"), *tokf = env("AWS_WEB_IDENTITY_TOKEN_FILE");
  const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (ak || sk) {
    if (!ak || !sk) {
      snprintf(err, errlen,
               "%s is set but %s is not (set both, or neither to use IRSA or EKS Pod Identity)",
               ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
               ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
      goto fail;
    }
    p->src = SRC_ENV;
    const char *tok = env("AWS_SESSION_TOKEN");
    if (copy_field(p->cur.access_key_id, sizeof p->cur.access_key_id, ak, "AWS_ACCESS_KEY_ID", err,
                   errlen) != 0 ||
        copy_field(p->cur.secret_access_key, sizeof p->cur.secret_access_key, sk,
                   "AWS_SECRET_ACCESS_KEY", err, errlen) != 0 ||
        (tok && copy_field(p->cur.session_token, sizeof p->cur.session_token, tok,
                           "AWS_SESSION_TOKEN", err, errlen) != 0))
      goto fail;
    p->have = true;
    return p;
  }
  if (role || tokf) {
    if (!role || !tokf) {
      snprintf(err, errlen,
               "IRSA needs both AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE; only %s is set",
               role ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE");
      goto fail;
    }
    p->src = SRC_IRSA;
    char url[512], host[256] = "";
    const char *ep = env("AWS_ENDPOINT_URL_STS");
    if (ep) {
      snprintf(url, sizeof url, "%s", ep);
    } else {
      if (region && *region)
        snprintf(host, sizeof host, "sts.%s.amazonaws.com", region);
      else
        snprintf(host, sizeof host, "sts.amazonaws.com");
      snprintf(url, sizeof url, "https://%s/", host);
    }
    char node[256] = "";
    const char *sn = env("AWS_ROLE_SESSION_NAME");
    if (!sn) {
      char hn[200] = "";
      if (gethostname(hn, sizeof hn - 1) != 0)
        hn[0] = '\0';
      snprintf(node, sizeof node, "pushprof-%s", hn);
      /* STS: [\w+=,.@-]{2,64} */
      for (char *c = node; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("+=,.@-_", *c))
          *c = '-';
      node[64] = '\0';
      sn = node;
    }
    p->role_arn = strdup(role);
    p->token_file = strdup(tokf);
    p->sts_url = strdup(url);
    p->session_name = strdup(sn);
    if (!p->role_arn || !p->token_file || !p->sts_url || !p->session_name) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
  } else if (full) {
    if (!container_uri_ok(full)) {
      snprintf(err, errlen,
               "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback or the "
               "EKS/ECS agent address");
      goto fail;
    }
    p->src = SRC_POD;
    p->full_uri = strdup(full);
    const char *tf = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    const char *t = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    if (tf)
      p->auth_token_file = strdup(tf);
    else if (t)
      p->auth_token = strdup(t);
    if (!p->full_uri || (tf && !p->auth_token_file) || (!tf && t && !p->auth_token)) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
  } else {
    snprintf(err, errlen,
             "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use IRSA "
             "(AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE) or EKS Pod Identity "
             "(AWS_CONTAINER_CREDENTIALS_FULL_URI)");
    goto fail;
  }
  p->http = http_client_new(ho, p->src == SRC_IRSA ? "s3-sts" : "s3-pod-identity", err, errlen);
  if (!p->http)
    goto fail;
  return p;
fail:
  aws_creds_free(p);
  return NULL;
}

aws_creds *aws_creds_new_static(const char *access_key_id, const char *secret, char *err,
                                size_t errlen) {
  aws_creds *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  p->src = SRC_STATIC;
  if (copy_field(p->cur.access_key_id, sizeof p->cur.access_key_id, access_key_id, "access key id",
                 err, errlen) != 0 ||
      copy_field(p->cur.secret_access_key, sizeof p->cur.secret_access_key, secret, "secret", err,
                 errlen) != 0) {
    aws_creds_free(p);
    return NULL;
  }
  p->have = true;
  return p;
}

void aws_creds_free(aws_creds *p) {
  if (!p)
    return;
  http_client_free(p->http);
  free(p->role_arn);
  free(p->token_file);
  free(p->sts_url);
  free(p->session_name);
  free(p->full_uri);
  free(p->auth_token_file);
  free_secret(p->auth_token);
  wipe(&p->cur, sizeof p->cur);
  free(p);
}

const char *aws_creds_source(const aws_creds *p) {
  switch (p->src) {
  case SRC_ENV:
    return "env";
  case SRC_IRSA:
    return "irsa";
  case SRC_POD:
    return "pod-identity";
  case SRC_STATIC:
    return "static";
  }
  return "?";
}

bool aws_creds_temporary(const aws_creds *p) {
  return p->src == SRC_IRSA || p->src == SRC_POD;
}

void aws_creds_invalidate(aws_creds *p) {
  if (aws_creds_temporary(p))
    p->refresh_at = 0, p->have = false;
}

int aws_creds_get(aws_creds *p, const aws_credentials **out, char *err, size_t errlen) {
  time_t now = time(NULL);
  if (!aws_creds_temporary(p) || (p->have && now < p->refresh_at)) {
    *out = &p->cur;
    return EXPORT_OK;
  }
  aws_credentials fresh;
  int rc =
      p->src == SRC_IRSA ? fetch_irsa(p, &fresh, err, errlen) : fetch_pod(p, &fresh, err, errlen);
  if (rc != EXPORT_OK) {
    /* Old credentials still valid for a while: keep going on them. */
    if (p->have && p->cur.expiration > now + 10) {
      char q[600];
      log_event(LOG_WARN,
                "cannot refresh AWS credentials; using the current ones until they expire",
                "source=%s expires_in_s=%lld reason=%s", aws_creds_source(p),
                (long long)(p->cur.expiration - now), log_quote(err, q, sizeof q));
      *out = &p->cur;
      return EXPORT_OK;
    }
    return rc;
  }
  wipe(&p->cur, sizeof p->cur);
  p->cur = fresh;
  wipe(&fresh, sizeof fresh);
  p->have = true;
  p->refresh_at = aws_creds_refresh_at(now, p->cur.expiration);
  log_event(LOG_INFO, "AWS credentials obtained", "source=%s expires_in_s=%lld refresh_in_s=%lld",
            aws_creds_source(p), (long long)(p->cur.expiration - now),
            (long long)(p->refresh_at - now));
  *out = &p->cur;
  return EXPORT_OK;
}
