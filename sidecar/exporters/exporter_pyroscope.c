/* pyroscope+http://HOST:PORT[/PREFIX] and pyroscope+https://...: ships each
 * merged profile to Grafana Pyroscope.
 *
 * Push API (default): POST PREFIX/push.v1.PusherService/Push, a Connect
 * unary call with an application/proto body (proto/pyroscope_push.proto).
 * The exporter interface hands over one merged profile per put(), so each
 * request carries one series (its labels: __name__=process_cpu, or memory,
 * block or mutex with __delta__=false for a heap, off-CPU or lock profile,
 * service_name and the process labels) whose samples are that profile, or
 * its pieces when it is above Pyroscope's per-profile limits
 * (validation.max-profile-size-bytes, 4 MiB uncompressed, and
 * validation.max-profile-stacktrace-samples, 16000, by default; over either
 * the server rejects the profile): it is split by sample, never cut. Pieces go in as few requests
 * as keep each body under the same size; if a later request of a split profile fails, the retry
 * resumes after the requests already accepted (remembered by content hash, so at-least-once across
 * sidecar restarts only).
 *
 * Ingest API (--pyroscope-api=ingest): POST PREFIX/ingest?name=SERVICE{labels}
 * &from=&until=&format=pprof&spyName=pushprof[&sampleRate=] with a
 * multipart/form-data field "profile", one request per piece, for servers
 * without the push API.
 *
 * Credentials come from the environment only (never the URL) and are never
 * logged: PYROSCOPE_BASIC_AUTH_USER + PYROSCOPE_BASIC_AUTH_PASSWORD[_FILE],
 * or PYROSCOPE_BEARER_TOKEN[_FILE] (files re-read on every request, so a
 * rotated token is picked up). The tenant (X-Scope-OrgID) is
 * --pyroscope-tenant, else $PYROSCOPE_TENANT_ID. */
#include "exporter_pyroscope.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exporter.h"
#include "exporter_backends.h"
#include "http_common.h"
#include "log.h"
#include "pp_deflate.h"
#include "pp_parse.h"
#include "pyroscope_push.pb-c.h"

#define PPROF_PARSE_MAX ((size_t)1 << 30)
#define SECRET_MAX 4096
#define TENANT_MAX 150
#define PUSH_PATH "/push.v1.PusherService/Push"
#define INGEST_PATH "/ingest"

/* ------------------------------------------------------------------ */
/* Series labels                                                      */
/* ------------------------------------------------------------------ */

int pyroscope_label_name_valid(const char *name) {
  if (!name || !*name)
    return 0;
  for (const char *s = name; *s; s++) {
    char ch = *s;
    bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
    bool digit = ch >= '0' && ch <= '9';
    if (!alpha && !(digit && s != name))
      return 0;
  }
  return 1;
}

/* Name rule above; NULL if nothing usable remains or on ENOMEM. */
static char *sanitize_name(const char *in) {
  size_t n = strlen(in);
  if (n == 0)
    return NULL;
  if (n > PYROSCOPE_MAX_LABEL_NAME - 1)
    n = PYROSCOPE_MAX_LABEL_NAME - 1;
  char *out = malloc(n + 2);
  if (!out)
    return NULL;
  size_t o = 0;
  if (in[0] >= '0' && in[0] <= '9')
    out[o++] = '_';
  for (size_t i = 0; i < n; i++) {
    char ch = in[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_';
    out[o++] = ok ? ch : '_';
  }
  out[o] = '\0';
  /* "__" names are Pyroscope's own (__name__, __session_id__, ...). */
  if (o >= 2 && out[0] == '_' && out[1] == '_') {
    size_t skip = 0;
    while (out[skip] == '_')
      skip++;
    memmove(out + 1, out + skip, o - skip + 1);
    if (out[1] == '\0') { /* only underscores */
      free(out);
      return NULL;
    }
  }
  return out;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t avail) {
  unsigned char c = s[0];
  size_t n;
  uint32_t cp;
  if (c < 0x80)
    return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (n > avail)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

/* Valid UTF-8 (bad bytes become '_'), cut at a character boundary to the
 * value limit. NULL on ENOMEM. */
static char *sanitize_value(const char *in, bool *changed) {
  size_t n = strlen(in);
  char *out = malloc((n < PYROSCOPE_MAX_LABEL_VALUE ? n : PYROSCOPE_MAX_LABEL_VALUE) + 1);
  if (!out)
    return NULL;
  size_t o = 0;
  const unsigned char *s = (const unsigned char *)in;
  for (size_t i = 0; i < n;) {
    size_t l = utf8_len(s + i, n - i);
    size_t take = l ? l : 1;
    if (o + take > PYROSCOPE_MAX_LABEL_VALUE) {
      *changed = true;
      break;
    }
    if (l) {
      memcpy(out + o, s + i, l);
    } else {
      out[o] = '_';
      *changed = true;
    }
    o += take;
    i += take;
  }
  out[o] = '\0';
  return out;
}

static int cmp_plabel(const void *a, const void *b) {
  return strcmp(((const pyroscope_label *)a)->name, ((const pyroscope_label *)b)->name);
}

void pyroscope_labels_free(pyroscope_label *l, size_t n) {
  for (size_t i = 0; l && i < n; i++) {
    free(l[i].name);
    free(l[i].value);
  }
  free(l);
}

static void note(char *notes, size_t noteslen, const char *fmt, const char *a, const char *b) {
  size_t used = strlen(notes);
  if (used + 1 >= noteslen)
    return;
  snprintf(notes + used, noteslen - used, "%s", used ? "; " : "");
  used = strlen(notes);
  snprintf(notes + used, noteslen - used, fmt, a, b);
}

static bool name_taken(const pyroscope_label *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].name, name) == 0)
      return true;
  return false;
}

int pyroscope_series_labels(const char *service, const char *profile_type,
                            Pushprof__V1__Label *const *labels, size_t nlabels,
                            pyroscope_label **out, size_t *nout, char *notes, size_t noteslen) {
  *out = NULL;
  *nout = 0;
  if (notes && noteslen)
    notes[0] = '\0';
  /* Go's names for the layouts ours follow: memory (heap), block
   * (off-CPU), mutex (lock); everything else is CPU. */
  static const struct {
    const char *type, *name;
  } names[] = {{"heap", "memory"}, {"offcpu", "block"}, {"lock", "mutex"}};
  const char *pname = "process_cpu";
  for (size_t i = 0; profile_type && i < sizeof names / sizeof *names; i++)
    if (strcmp(profile_type, names[i].type) == 0)
      pname = names[i].name;
  bool windowed = strcmp(pname, "process_cpu") != 0;
  pyroscope_label *v = calloc(nlabels + 3, sizeof *v);
  size_t n = 0;
  bool changed = false;
  if (!v)
    return -1;
  v[0].name = strdup("__name__");
  v[0].value = strdup(pname);
  v[1].name = strdup("service_name");
  v[1].value = sanitize_value(service && *service ? service : "unknown_service", &changed);
  n = 2;
  if (!v[0].name || !v[0].value || !v[1].name || !v[1].value)
    goto oom;
  if (windowed) {
    /* Pyroscope takes these layouts' counters (alloc_*, contentions, delay)
     * for totals since the process started, as Go's runtime keeps them, and
     * stores the difference to the series' previous profile unless told
     * otherwise; a batch's are its window's. */
    v[n].name = strdup("__delta__");
    v[n].value = strdup("false");
    n++;
    if (!v[n - 1].name || !v[n - 1].value)
      goto oom;
  }
  for (size_t i = 0; i < nlabels; i++) {
    const char *key = labels[i] && labels[i]->key ? labels[i]->key : "";
    const char *val = labels[i] && labels[i]->value ? labels[i]->value : "";
    char *name = sanitize_name(key);
    if (!name) {
      if (*key)
        note(notes, noteslen, "label \"%.64s\" dropped: no usable name%s", key, "");
      continue;
    }
    if (!*val) {
      free(name);
      continue; /* Prometheus-style labels: empty means absent */
    }
    if (name_taken(v, n, name)) {
      note(notes, noteslen, "label \"%.64s\" dropped: its name %.64s is already set", key, name);
      free(name);
      continue;
    }
    if (n >= PYROSCOPE_MAX_LABELS) {
      note(notes, noteslen, "label \"%.64s\" dropped: over %s labels per series", key, "30");
      free(name);
      continue;
    }
    bool vchanged = false;
    char *value = sanitize_value(val, &vchanged);
    if (!value) {
      free(name);
      goto oom;
    }
    if (vchanged)
      note(notes, noteslen, "label %.64s: value made valid UTF-8 of at most 2048 bytes%s", name,
           "");
    v[n].name = name;
    v[n].value = value;
    n++;
  }
  qsort(v, n, sizeof *v, cmp_plabel);
  *out = v;
  *nout = n;
  return 0;
oom:
  pyroscope_labels_free(v, n);
  return -1;
}

/* ------------------------------------------------------------------ */
/* The exporter                                                       */
/* ------------------------------------------------------------------ */

typedef struct pyro_exporter {
  exporter base;
  http_client *http;
  char *base_url;  /* http(s)://host:port[/prefix], no trailing slash */
  char *shown_url; /* for messages */
  bool ingest;
  char *tenant;
  size_t max_profile_bytes;
  size_t max_samples;
  /* Resume point of a split profile whose later requests failed. */
  char done_hash[65];
  size_t done_requests;
} pyro_exporter;

/* Reads a secret from the environment variable name, or from the file
 * named by name_FILE. 1 found, 0 absent, -1 error (err says which
 * variable, never the value). */
static int read_secret(const char *name, char *out, size_t outlen, char *err, size_t errlen) {
  char fname[128];
  const char *v = getenv(name);
  out[0] = '\0';
  if (v && *v) {
    if (strlen(v) >= outlen) {
      snprintf(err, errlen, "$%s is longer than %zu bytes", name, outlen - 1);
      return -1;
    }
    for (const char *s = v; *s; s++)
      if ((unsigned char)*s < 0x20 || *s == 0x7f) {
        snprintf(err, errlen, "$%s holds control characters (one line expected)", name);
        return -1;
      }
    snprintf(out, outlen, "%s", v);
    return 1;
  }
  snprintf(fname, sizeof fname, "%s_FILE", name);
  const char *path = getenv(fname);
  if (!path || !*path)
    return 0;
  FILE *f = fopen(path, "re");
  if (!f) {
    snprintf(err, errlen, "cannot read $%s file %s: %s (fix the path or its permissions)", fname,
             path, strerror(errno));
    return -1;
  }
  size_t got = fread(out, 1, outlen - 1, f);
  bool more = got == outlen - 1 && fgetc(f) != EOF;
  bool bad = ferror(f);
  fclose(f);
  if (bad || more) {
    explicit_bzero(out, outlen);
    snprintf(err, errlen, "cannot read $%s file %s: %s", fname, path,
             more ? "longer than 4095 bytes" : "read error");
    return -1;
  }
  out[got] = '\0';
  while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == '\r' || out[got - 1] == ' '))
    out[--got] = '\0';
  for (size_t i = 0; i < got; i++)
    if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) {
      explicit_bzero(out, outlen);
      snprintf(err, errlen, "$%s file %s holds control characters (one line expected)", fname,
               path);
      return -1;
    }
  return got ? 1 : 0;
}

typedef struct creds {
  char user[SECRET_MAX], pass[SECRET_MAX], bearer[SECRET_MAX + 32];
  bool basic, has_bearer;
} creds;

static int load_creds(creds *c, char *err, size_t errlen) {
  char tok[SECRET_MAX];
  memset(c, 0, sizeof *c);
  int u = read_secret("PYROSCOPE_BASIC_AUTH_USER", c->user, sizeof c->user, err, errlen);
  if (u < 0)
    return -1;
  int p = read_secret("PYROSCOPE_BASIC_AUTH_PASSWORD", c->pass, sizeof c->pass, err, errlen);
  if (p < 0)
    return -1;
  int t = read_secret("PYROSCOPE_BEARER_TOKEN", tok, sizeof tok, err, errlen);
  if (t < 0)
    return -1;
  if (u > 0 && t > 0) {
    explicit_bzero(tok, sizeof tok);
    snprintf(err, errlen,
             "both basic auth ($PYROSCOPE_BASIC_AUTH_USER) and a bearer token "
             "($PYROSCOPE_BEARER_TOKEN[_FILE]) are set; set only one");
    return -1;
  }
  if (p > 0 && u == 0) {
    snprintf(err, errlen,
             "$PYROSCOPE_BASIC_AUTH_PASSWORD[_FILE] is set without $PYROSCOPE_BASIC_AUTH_USER");
    return -1;
  }
  c->basic = u > 0;
  if (t > 0) {
    snprintf(c->bearer, sizeof c->bearer, "Authorization: Bearer %s", tok);
    c->has_bearer = true;
  }
  explicit_bzero(tok, sizeof tok);
  return 0;
}

static void creds_wipe(creds *c) {
  explicit_bzero(c, sizeof *c);
}

/* A UUID (version 8: custom) derived from the batch hash and the piece
 * number, so a retried request carries the same profile ids. */
static void piece_uuid(const char *hash, size_t i, char out[37]) {
  char in[96], hex[65];
  snprintf(in, sizeof in, "%s:%zu", hash ? hash : "", i);
  if (http_sha256_hex(in, strlen(in), hex) != 0)
    snprintf(hex, sizeof hex, "%064zx", i);
  hex[12] = '8';
  static const char variant[] = "89ab";
  char *end;
  char nib[2] = {hex[16], 0};
  hex[16] = variant[strtoul(nib, &end, 16) & 3];
  snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

typedef struct gz_piece {
  uint8_t *data; /* gzip */
  size_t len;
  bool owned;
} gz_piece;

static void gz_free(gz_piece *g, size_t n) {
  for (size_t i = 0; g && i < n; i++)
    if (g[i].owned)
      free(g[i].data);
  free(g);
}

/* The profile as gzip pieces within the server's per-profile limits. */
static int make_pieces(pyro_exporter *pe, const export_object *obj, gz_piece **out, size_t *nout,
                       char *err, size_t errlen) {
  *out = NULL;
  *nout = 0;
  long nsamples = obj->pprof ? pp_count_samples(obj->pprof, obj->pprof_len) : 0;
  if (!obj->pprof || (obj->pprof_len <= pe->max_profile_bytes && nsamples >= 0 &&
                      (size_t)nsamples <= pe->max_samples)) {
    gz_piece *g = calloc(1, sizeof *g);
    if (!g) {
      snprintf(err, errlen, "out of memory");
      return EXPORT_RETRY;
    }
    g[0] = (gz_piece){(uint8_t *)obj->data, obj->len, false};
    *out = g;
    *nout = 1;
    return EXPORT_OK;
  }
  pp_piece *pieces = NULL;
  size_t n = 0;
  char why[512];
  if (pp_split_limits(obj->pprof, obj->pprof_len, pe->max_profile_bytes, pe->max_samples, &pieces,
                      &n, why, sizeof why) != 0) {
    snprintf(err, errlen, "cannot split the %zu byte profile for Pyroscope: %s", obj->pprof_len,
             why);
    return strstr(why, "out of memory") ? EXPORT_RETRY : EXPORT_PERMANENT;
  }
  gz_piece *g = calloc(n, sizeof *g);
  if (!g)
    goto oom;
  for (size_t i = 0; i < n; i++) {
    if (pp_gzip_fast(pieces[i].data, pieces[i].len, &g[i].data, &g[i].len) != 0) {
      gz_free(g, i);
      g = NULL;
      goto oom;
    }
    g[i].owned = true;
  }
  pp_pieces_free(pieces, n);
  log_event(LOG_INFO, "profile split for Pyroscope's per-profile limits",
            "bytes=%zu samples=%ld pieces=%zu max_profile_bytes=%zu max_samples=%zu",
            obj->pprof_len, nsamples, n, pe->max_profile_bytes, pe->max_samples);
  *out = g;
  *nout = n;
  return EXPORT_OK;
oom:
  pp_pieces_free(pieces, n);
  snprintf(err, errlen, "out of memory compressing profile pieces");
  return EXPORT_RETRY;
}

/* Headers common to both APIs; hdr has room for 4 entries + NULL. */
static size_t base_headers(pyro_exporter *pe, const creds *c, const char **hdr, char *tenant_hdr,
                           size_t tlen) {
  size_t n = 0;
  if (pe->tenant) {
    snprintf(tenant_hdr, tlen, "X-Scope-OrgID: %s", pe->tenant);
    hdr[n++] = tenant_hdr;
  }
  if (c->has_bearer)
    hdr[n++] = c->bearer;
  return n;
}

/* Pyroscope's answer to a profile older than its ingestion window
 * (validation.reject-older-than, 1 h by default; pkg/validation's
 * NotInIngestionWindow): retrying can only make it older. */
#define TOO_OLD_MARK "outside of ingestion window"

/* obj's series labels for Pyroscope (free with pyroscope_labels_free);
 * what had to be adjusted is logged. 0, or -1 (ENOMEM) with err set. */
static int series_labels(const export_object *obj, pyroscope_label **lab, size_t *nlab, char *err,
                         size_t errlen) {
  char notes[1024];
  if (pyroscope_series_labels(obj->service, obj->profile_type, obj->labels, obj->nlabels, lab, nlab,
                              notes, sizeof notes) != 0) {
    snprintf(err, errlen, "out of memory building Pyroscope labels");
    return -1;
  }
  if (notes[0]) {
    char q[1100];
    log_event(LOG_WARN, "process labels adjusted for Pyroscope", "notes=%s",
              log_quote(notes, q, sizeof q));
  }
  return 0;
}

static int do_request(pyro_exporter *pe, http_request *rq, const char *what, char *err,
                      size_t errlen) {
  http_response rs;
  memset(&rs, 0, sizeof rs);
  int prc = http_perform(pe->http, rq, &rs);
  int rc = prc == 0 ? http_classify(&rs) : EXPORT_RETRY;
  bool too_old = prc == 0 && rc != EXPORT_OK && rs.body && strstr(rs.body, TOO_OLD_MARK);
  if (too_old) {
    rc = EXPORT_PERMANENT; /* whatever the status: it will never be accepted */
    pe->base.drop_reason = "too_old";
  }
  if (rc == EXPORT_RETRY && rs.retry_after_s > 0)
    pe->base.retry_after_s = rs.retry_after_s;
  if (rc != EXPORT_OK) {
    char d[768];
    http_describe("POST", rq->url, &rs, d, sizeof d);
    snprintf(err, errlen, "%s%s: %s",
             too_old ? "refused for age (older than the server's ingestion window): " : "", what,
             d);
  }
  http_response_free(&rs);
  return rc;
}

static int push_connect(pyro_exporter *pe, const export_object *obj, const gz_piece *g, size_t n,
                        const creds *c, char *err, size_t errlen) {
  pyroscope_label *lab = NULL;
  size_t nlab = 0;
  char url[2048], tenant_hdr[TENANT_MAX + 32];
  int rc = EXPORT_RETRY;
  Pushprof__Pyroscope__LabelPair *lp = NULL, **lpp = NULL;
  Pushprof__Pyroscope__RawSample *rs = NULL, **rsp = NULL;
  char(*ids)[37] = NULL;
  uint8_t *body = NULL;

  if (series_labels(obj, &lab, &nlab, err, errlen) != 0)
    return EXPORT_RETRY;
  lp = calloc(nlab, sizeof *lp);
  lpp = calloc(nlab, sizeof *lpp);
  rs = calloc(n, sizeof *rs);
  rsp = calloc(n, sizeof *rsp);
  ids = calloc(n, sizeof *ids);
  if (!lp || !lpp || !rs || !rsp || !ids) {
    snprintf(err, errlen, "out of memory building the Pyroscope request");
    goto out;
  }
  for (size_t i = 0; i < nlab; i++) {
    pushprof__pyroscope__label_pair__init(&lp[i]);
    lp[i].name = lab[i].name;
    lp[i].value = lab[i].value;
    lpp[i] = &lp[i];
  }
  for (size_t i = 0; i < n; i++) {
    pushprof__pyroscope__raw_sample__init(&rs[i]);
    rs[i].raw_profile.data = g[i].data;
    rs[i].raw_profile.len = g[i].len;
    piece_uuid(obj->content_hash, i, ids[i]);
    rs[i].id = ids[i];
    rsp[i] = &rs[i];
  }
  snprintf(url, sizeof url, "%s%s", pe->base_url, PUSH_PATH);
  /* Pieces in as few requests as keep each body within the per-profile
   * size too (the server's ingestion burst limit counts whole requests). */
  bool resume = obj->content_hash && strcmp(pe->done_hash, obj->content_hash) == 0;
  size_t req_no = 0, first = 0, sent = 0;
  while (first < n) {
    size_t last = first + 1, bytes = g[first].len;
    while (last < n && bytes + g[last].len <= pe->max_profile_bytes)
      bytes += g[last++].len;
    if (resume && req_no < pe->done_requests) {
      req_no++;
      first = last;
      continue;
    }
    Pushprof__Pyroscope__RawProfileSeries series = PUSHPROF__PYROSCOPE__RAW_PROFILE_SERIES__INIT;
    Pushprof__Pyroscope__RawProfileSeries *sp = &series;
    Pushprof__Pyroscope__PushRequest req = PUSHPROF__PYROSCOPE__PUSH_REQUEST__INIT;
    series.n_labels = nlab;
    series.labels = lpp;
    series.n_samples = last - first;
    series.samples = rsp + first;
    req.n_series = 1;
    req.series = &sp;
    size_t blen = pushprof__pyroscope__push_request__get_packed_size(&req);
    body = malloc(blen ? blen : 1);
    if (!body) {
      snprintf(err, errlen, "out of memory encoding the Pyroscope request");
      goto out;
    }
    pushprof__pyroscope__push_request__pack(&req, body);
    const char *hdr[8];
    size_t nh = base_headers(pe, c, hdr, tenant_hdr, sizeof tenant_hdr);
    hdr[nh++] = "Content-Type: application/proto";
    hdr[nh++] = "Connect-Protocol-Version: 1";
    hdr[nh] = NULL;
    http_request rq = {.method = "POST",
                       .url = url,
                       .headers = hdr,
                       .body = body,
                       .body_len = blen,
                       .username = c->basic ? c->user : NULL,
                       .password = c->basic ? c->pass : NULL};
    char what[128];
    snprintf(what, sizeof what, "Pyroscope push (request %zu, %zu profiles)", req_no + 1,
             last - first);
    rc = do_request(pe, &rq, what, err, errlen);
    free(body);
    body = NULL;
    if (rc != EXPORT_OK) {
      if (rc == EXPORT_RETRY && req_no > 0 && obj->content_hash) {
        snprintf(pe->done_hash, sizeof pe->done_hash, "%s", obj->content_hash);
        pe->done_requests = req_no;
      }
      goto out;
    }
    sent += last - first;
    req_no++;
    first = last;
  }
  pe->done_hash[0] = '\0';
  pe->done_requests = 0;
  snprintf(err, errlen, "%s%s profiles=%zu requests=%zu", pe->shown_url, PUSH_PATH, n, req_no);
  (void)sent;
  rc = EXPORT_OK;
out:
  free(body);
  free(lp);
  free(lpp);
  free(rs);
  free(rsp);
  free(ids);
  pyroscope_labels_free(lab, nlab);
  return rc;
}

/* For the ingest API's name= key: no characters its key parser splits on. */
static void ingest_clean(const char *in, char *out, size_t outlen) {
  size_t o = 0;
  for (; in && *in && o + 1 < outlen; in++) {
    char ch = *in;
    out[o++] =
        (ch == '{' || ch == '}' || ch == ',' || ch == '=' || (unsigned char)ch < 0x20) ? '_' : ch;
  }
  out[o] = '\0';
}

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

/* sampleRate for the ingest API: samples per second from a CPU period. */
static long sample_rate(const export_object *obj) {
  char why[128];
  if (!obj->pprof)
    return 0;
  pp_pprof *parsed = pp_pprof_parse(obj->pprof, obj->pprof_len, PPROF_PARSE_MAX, why, sizeof why);
  if (!parsed)
    return 0;
  const Perftools__Profiles__Profile *p = pp_pprof_profile(parsed);
  long hz = 0;
  if (p->period_type && p->period > 0 && strcmp(pstr(p, p->period_type->unit), "nanoseconds") == 0)
    hz = (long)(1000000000LL / p->period);
  pp_pprof_free(parsed);
  return hz;
}

static int push_ingest(pyro_exporter *pe, const export_object *obj, const gz_piece *g, size_t n,
                       const creds *c, char *err, size_t errlen) {
  pyroscope_label *lab = NULL;
  size_t nlab = 0;
  char tenant_hdr[TENANT_MAX + 32];
  char *enc = NULL, *key = NULL, *url = NULL;
  int rc = EXPORT_RETRY;
  if (series_labels(obj, &lab, &nlab, err, errlen) != 0)
    return EXPORT_RETRY;
  /* name=SERVICE{k=v,...}: the service is implied, and the server names
   * the profile and sets __delta__ itself (from its sample types). */
  const char *svc = obj->service && *obj->service ? obj->service : "unknown_service";
  size_t keycap = strlen(svc) + 3;
  for (size_t i = 0; i < nlab; i++)
    keycap += strlen(lab[i].name) + strlen(lab[i].value) + 2;
  if (!(key = malloc(keycap))) {
    snprintf(err, errlen, "out of memory building the ingest name");
    goto out;
  }
  ingest_clean(svc, key, keycap);
  size_t kl = strlen(key), nin = 0;
  for (size_t i = 0; i < nlab; i++) {
    if (strncmp(lab[i].name, "__", 2) == 0 || strcmp(lab[i].name, "service_name") == 0)
      continue;
    kl += (size_t)snprintf(key + kl, keycap - kl, "%s%s=", nin++ ? "," : "{", lab[i].name);
    ingest_clean(lab[i].value, key + kl, keycap - kl);
    kl += strlen(key + kl);
  }
  if (nin)
    snprintf(key + kl, keycap - kl, "}");
  enc = curl_easy_escape(NULL, key, 0);
  size_t urlcap = strlen(pe->base_url) + (enc ? strlen(enc) : 0) + 256;
  if (!enc || !(url = malloc(urlcap))) {
    snprintf(err, errlen, "out of memory encoding the ingest name");
    goto out;
  }
  int64_t from = obj->start_ns > 0 ? obj->start_ns / 1000000000 : 0;
  int64_t until = obj->end_ns > 0 ? obj->end_ns / 1000000000 : from;
  if (until < from)
    until = from;
  long hz = sample_rate(obj);
  int ul = snprintf(url, urlcap,
                    "%s%s?name=%s&from=%" PRId64 "&until=%" PRId64 "&format=pprof&spyName=pushprof",
                    pe->base_url, INGEST_PATH, enc, from, until);
  if (hz > 0 && ul > 0 && (size_t)ul < urlcap)
    snprintf(url + ul, urlcap - (size_t)ul, "&sampleRate=%ld", hz);
  bool resume = obj->content_hash && strcmp(pe->done_hash, obj->content_hash) == 0;
  for (size_t i = resume ? pe->done_requests : 0; i < n; i++) {
    const char *hdr[4];
    size_t nh = base_headers(pe, c, hdr, tenant_hdr, sizeof tenant_hdr);
    hdr[nh] = NULL;
    http_request rq = {.method = "POST",
                       .url = url,
                       .headers = hdr,
                       .body = g[i].data,
                       .body_len = g[i].len,
                       .form_field = "profile",
                       .form_filename = "profile.pprof",
                       .username = c->basic ? c->user : NULL,
                       .password = c->basic ? c->pass : NULL};
    char what[96];
    snprintf(what, sizeof what, "Pyroscope ingest (profile %zu of %zu)", i + 1, n);
    rc = do_request(pe, &rq, what, err, errlen);
    if (rc != EXPORT_OK) {
      if (rc == EXPORT_RETRY && i > 0 && obj->content_hash) {
        snprintf(pe->done_hash, sizeof pe->done_hash, "%s", obj->content_hash);
        pe->done_requests = i;
      }
      goto out;
    }
  }
  pe->done_hash[0] = '\0';
  pe->done_requests = 0;
  snprintf(err, errlen, "%s%s profiles=%zu", pe->shown_url, INGEST_PATH, n);
  rc = EXPORT_OK;
out:
  curl_free(enc);
  free(key);
  free(url);
  pyroscope_labels_free(lab, nlab);
  return rc;
}

static int pyro_put(exporter *ex, const export_object *obj, char *err, size_t errlen) {
  pyro_exporter *pe = ex->impl;
  gz_piece *g = NULL;
  size_t n = 0;
  creds c;
  int rc = load_creds(&c, err, errlen);
  if (rc != 0) {
    creds_wipe(&c);
    return EXPORT_RETRY; /* a token file may be mid-rotation */
  }
  rc = make_pieces(pe, obj, &g, &n, err, errlen);
  if (rc == EXPORT_OK)
    rc = pe->ingest ? push_ingest(pe, obj, g, n, &c, err, errlen)
                    : push_connect(pe, obj, g, n, &c, err, errlen);
  if (c.user[0])
    http_scrub(err, c.user);
  if (c.pass[0])
    http_scrub(err, c.pass);
  if (c.has_bearer)
    http_scrub(err, c.bearer + strlen("Authorization: Bearer "));
  creds_wipe(&c);
  gz_free(g, n);
  return rc;
}

static void pyro_destroy(exporter *ex) {
  pyro_exporter *pe = ex->impl;
  http_client_free(pe->http);
  free(pe->base_url);
  free(pe->shown_url);
  free(pe->tenant);
  free(pe);
}

/* Dskit's tenant id rule: 1..150 of [a-zA-Z0-9!-_.*'()], not "." or "..". */
static bool tenant_valid(const char *t) {
  size_t n = strlen(t);
  if (n == 0 || n > TENANT_MAX || strcmp(t, ".") == 0 || strcmp(t, "..") == 0)
    return false;
  for (; *t; t++) {
    char ch = *t;
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          strchr("!-_.*'()", ch)))
      return false;
  }
  return true;
}

/* "pyroscope+https://host:port/prefix" -> "https://host:port/prefix". */
static int parse_url(const char *url, char **base, char *err, size_t errlen) {
  const char *p = url + strlen("pyroscope+");
  bool https = strncasecmp(p, "https://", 8) == 0;
  if (!https && strncasecmp(p, "http://", 7) != 0) {
    snprintf(err, errlen,
             "export URL \"%.200s\": write pyroscope+http://HOST:PORT or "
             "pyroscope+https://HOST:PORT",
             url);
    return -1;
  }
  const char *host = p + (https ? 8 : 7);
  size_t hostlen = strcspn(host, "/?#");
  if (hostlen == 0) {
    snprintf(err, errlen, "export URL \"%.200s\" names no host (write pyroscope+http://HOST:PORT)",
             url);
    return -1;
  }
  if (memchr(host, '@', hostlen)) {
    snprintf(err, errlen,
             "export URL for Pyroscope must not hold credentials; set "
             "PYROSCOPE_BASIC_AUTH_USER/PYROSCOPE_BASIC_AUTH_PASSWORD or "
             "PYROSCOPE_BEARER_TOKEN[_FILE] instead");
    return -1;
  }
  if (strpbrk(host, "?#")) {
    snprintf(err, errlen, "export URL \"%.200s\": Pyroscope URLs take no query or fragment", url);
    return -1;
  }
  for (const char *s = p; *s; s++)
    if ((unsigned char)*s <= 0x20 || *s == 0x7f) {
      snprintf(err, errlen, "export URL \"%.200s\" holds spaces or control characters", url);
      return -1;
    }
  size_t len = strlen(p);
  while (len > 0 && p[len - 1] == '/')
    len--;
  *base = strndup(p, len);
  if (!*base) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* Scheme in lower case for libcurl. */
  for (size_t i = 0; i < (https ? 5u : 4u); i++)
    (*base)[i] = (char)((*base)[i] | 0x20);
  return 0;
}

exporter *exporter_pyroscope_create(const char *url, const exporter_options *opts, char *err,
                                    size_t errlen) {
  pyro_exporter *pe = calloc(1, sizeof *pe);
  creds c;
  if (!pe) {
    snprintf(err, errlen, "out of memory creating the Pyroscope exporter");
    return NULL;
  }
  pe->base.impl = pe;
  if (parse_url(url, &pe->base_url, err, errlen) != 0)
    goto fail;
  pe->shown_url = malloc(strlen(pe->base_url) + 1);
  if (!pe->shown_url) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  exporter_redact_url(pe->base_url, pe->shown_url, strlen(pe->base_url) + 1);
  const char *api =
      opts && opts->pyroscope_api && *opts->pyroscope_api ? opts->pyroscope_api : "push";
  if (strcmp(api, "ingest") == 0) {
    pe->ingest = true;
  } else if (strcmp(api, "push") != 0) {
    snprintf(err, errlen, "--pyroscope-api \"%.64s\": expected push (default) or ingest", api);
    goto fail;
  }
  const char *tenant = opts && opts->pyroscope_tenant && *opts->pyroscope_tenant
                           ? opts->pyroscope_tenant
                           : getenv("PYROSCOPE_TENANT_ID");
  if (tenant && *tenant) {
    if (!tenant_valid(tenant)) {
      snprintf(err, errlen,
               "tenant \"%.64s\" (--pyroscope-tenant or $PYROSCOPE_TENANT_ID) is not a valid "
               "X-Scope-OrgID: use 1..150 of A-Z a-z 0-9 ! - _ . * ' ( )",
               tenant);
      goto fail;
    }
    if (!(pe->tenant = strdup(tenant))) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
  }
  pe->max_profile_bytes = opts && opts->pyroscope_max_profile_bytes > 0
                              ? (size_t)opts->pyroscope_max_profile_bytes
                              : PYROSCOPE_MAX_PROFILE_BYTES;
  pe->max_samples = opts && opts->pyroscope_max_samples > 0 ? (size_t)opts->pyroscope_max_samples
                                                            : PYROSCOPE_MAX_SAMPLES;
  /* Refuse a bad credential setup at start rather than at the first batch. */
  if (load_creds(&c, err, errlen) != 0) {
    creds_wipe(&c);
    goto fail;
  }
  bool basic = c.basic, bearer = c.has_bearer;
  creds_wipe(&c);
  http_options ho = {0};
  if (opts) {
    ho.ca_file = opts->ca_file;
    ho.insecure_skip_verify = opts->tls_insecure_skip_verify != 0;
    ho.timeout_ms = opts->http_timeout_ms;
  }
  pe->http = http_client_new(&ho, "pyroscope", err, errlen);
  if (!pe->http)
    goto fail;
  pe->base.scheme = "pyroscope";
  pe->base.wants_pprof = true;
  pe->base.put = pyro_put;
  pe->base.destroy = pyro_destroy;
  pe->base.impl = pe;
  char q[600];
  log_event(LOG_INFO, "pyroscope exporter ready",
            "url=%s api=%s tenant=%s auth=%s max_profile_bytes=%zu max_samples=%zu",
            log_quote(pe->shown_url, q, sizeof q), pe->ingest ? "ingest" : "push",
            pe->tenant ? "set" : "none",
            basic    ? "basic"
            : bearer ? "bearer"
                     : "none",
            pe->max_profile_bytes, pe->max_samples);
  return &pe->base;
fail:
  pyro_destroy(&pe->base);
  return NULL;
}
