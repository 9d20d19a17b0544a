/* Sidecar settings: one table drives the flags, the INI keys, the checks
 * and the --help text, so a setting cannot exist in one place only. */
#include "config.h"
#include "log.h"

#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum opt_type { T_STR, T_SECONDS, T_SIZE, T_BOOL, T_UIDS, T_COUNT, T_TIMEOUT, T_LIST };

typedef struct opt_def {
  const char *flag;  /* long option, without "--" */
  const char *key;   /* INI key */
  const char *alias; /* a second INI key accepted (the flag's own name), may be NULL */
  enum opt_type type;
  size_t offset;
  int64_t min, max; /* numeric bounds (seconds, bytes, counts; ms for T_TIMEOUT) */
  const char *help;
} opt_def;

#define OFF(f) offsetof(sidecar_config, f)
static const opt_def opts[] = {
    {"socket", "socket", NULL, T_STR, OFF(socket_path), 0, 0,
     "Unix socket to listen on (default $PUSHPROF_SOCKET, else " CONFIG_DEFAULT_SOCKET ")"},
    {"spool", "spool", "spool_dir", T_STR, OFF(spool_dir), 0, 0,
     "spool directory (default " CONFIG_DEFAULT_SPOOL ")"},
    {"export", "export_to", "export", T_LIST, OFF(exports), 1, CONFIG_MAX_EXPORTS,
     "where batches go: file:///DIR, s3://B/P, gs://B/P, pyroscope+http(s)://H:P, "
     "otlp+http(s)://H:P[/PATH] or otlp (default " CONFIG_DEFAULT_EXPORT "); repeat it (or list "
     "several in the file, space-separated) to send every batch to each target"},
    {"batch-window", "dump_duration_seconds", "batch_window", T_SECONDS, OFF(batch_window_s), 1,
     86400, "seconds of pushes merged into one profile (default 60)"},
    {"max-spool-bytes", "max_spool_bytes", NULL, T_SIZE, OFF(max_spool_bytes), 4096, INT64_MAX,
     "spool size limit, e.g. 512MiB (default 512MiB)"},
    {"spool-drop-oldest", "spool_drop_oldest", NULL, T_BOOL, OFF(spool_drop_oldest), 0, 0,
     "when the spool is full drop the oldest pending batch, else push, instead of refusing new "
     "ones"},
    {"journal-bytes", "journal_bytes", NULL, T_SIZE, OFF(journal_bytes), 0, 1ll << 32,
     "write-ahead journal pushes are acked from, e.g. 64MiB (default 64MiB; 0 = off)"},
    {"max-memory", "max_memory", NULL, T_SIZE, OFF(max_memory), 16 << 20, 1ll << 40,
     "resident memory limit: the sidecar's own part (measured at start) plus frames, merges and "
     "batches; near it new pushes wait, then are told to retry (default 48MiB)"},
    {"metrics-addr", "metrics_addr", NULL, T_STR, OFF(metrics_addr), 0, 0,
     "HOST:PORT for /metrics, /healthz and the on-demand /profile/cpu and /profile/heap, e.g. "
     "127.0.0.1:9464 (default: off)"},
    {"http-token-file", "http_token_file", NULL, T_STR, OFF(http_token_file), 0, 0,
     "file holding the bearer token /profile/ requires (needed when --metrics-addr is not a "
     "loopback address: profiles reveal code and labels)"},
    {"node-name", "node_name", NULL, T_STR, OFF(node_name), 0, 0,
     "node name in export paths (default $NODE_NAME, else the host name)"},
    {"log-level", "log_level", NULL, T_STR, OFF(log_level), 0, 0,
     "debug, info, warn or error: the least severe events written to stderr (default info; "
     "debug adds a line per push)"},
    {"allow-uid", "allow_uid", NULL, T_UIDS, OFF(allow_uids), 0, 0,
     "comma-separated uids or user names allowed to push (default: any)"},
    {"shutdown-grace", "shutdown_grace", NULL, T_SECONDS, OFF(shutdown_grace_s), 0, 3600,
     "seconds to export open batches on SIGTERM (default 10)"},
    {"bucket-subdirectory", "bucket_subdirectory", NULL, T_STR, OFF(bucket_subdir), 0, 0,
     "path prefix inside the export target (default none)"},
    {"max-dumps-retained", "max_dumps_retained", NULL, T_COUNT, OFF(max_dumps_retained), 0, 1000000,
     "file export: keep at most N profiles per service (default 0 = all)"},
    {"max-frame-bytes", "max_frame_bytes", NULL, T_SIZE, OFF(max_frame_bytes), 4096, UINT32_MAX,
     "largest frame accepted (default 16MiB)"},
    {"max-connections", "max_connections", NULL, T_COUNT, OFF(max_connections), 1, 65536,
     "open connections at most (default 256)"},
    {"read-timeout", "read_timeout", NULL, T_TIMEOUT, OFF(read_timeout_ms), 100, 3600 * 1000,
     "seconds a client has to send one whole frame (default 10)"},
    {"rescan-interval", "rescan_interval", NULL, T_SECONDS, OFF(rescan_interval_s), 1, 3600,
     "seconds between scans of the spool for SDK drop-in files (default 5)"},
    {"max-batch-age", "max_batch_age", NULL, T_SECONDS, OFF(max_batch_age_s), 60, 86400 * 365,
     "give up (counted) on pushes that could not be exported for this long (default 86400)"},
    /* HTTP exporters (s3://, gs://, pyroscope+http(s)://). */
    {"ca-file", "ca_file", NULL, T_STR, OFF(ca_file), 0, 0,
     "PEM CA certificate(s) trusted in addition to the system store"},
    {"tls-insecure-skip-verify", "tls_insecure_skip_verify", NULL, T_BOOL,
     OFF(tls_insecure_skip_verify), 0, 0,
     "do not verify TLS certificates or host names (unsafe; logged at start)"},
    {"http-timeout", "http_timeout", NULL, T_TIMEOUT, OFF(http_timeout_ms), 500, 3600 * 1000,
     "seconds one upload may take before it is retried (default 60)"},
    {"s3-region", "s3_region", NULL, T_STR, OFF(s3_region), 0, 0,
     "S3 region (default $AWS_REGION, else $AWS_DEFAULT_REGION, else us-east-1)"},
    {"s3-endpoint", "s3_endpoint", NULL, T_STR, OFF(s3_endpoint), 0, 0,
     "S3-compatible endpoint URL (default $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else AWS)"},
    {"s3-path-style", "s3_path_style", NULL, T_BOOL, OFF(s3_path_style), 0, 0,
     "address buckets as ENDPOINT/BUCKET (automatic for IP and localhost endpoints)"},
    {"gcs-endpoint", "gcs_endpoint", NULL, T_STR, OFF(gcs_endpoint), 0, 0,
     "GCS endpoint URL (default $STORAGE_EMULATOR_HOST, else https://storage.googleapis.com)"},
    /* Grafana Pyroscope (pyroscope+http(s)://). */
    {"pyroscope-api", "pyroscope_api", NULL, T_STR, OFF(pyroscope_api), 0, 0,
     "push (POST /push.v1.PusherService/Push, default) or ingest (older POST /ingest)"},
    {"pyroscope-tenant", "pyroscope_tenant", NULL, T_STR, OFF(pyroscope_tenant), 0, 0,
     "X-Scope-OrgID tenant (default $PYROSCOPE_TENANT_ID, else none)"},
    {"pyroscope-max-profile-bytes", "pyroscope_max_profile_bytes", NULL, T_SIZE,
     OFF(pyroscope_max_profile_bytes), 65536, 1ll << 30,
     "split profiles above this uncompressed size (the server's limit; default 4MiB)"},
    {"pyroscope-max-samples", "pyroscope_max_samples", NULL, T_COUNT, OFF(pyroscope_max_samples), 1,
     1000000000, "split profiles with more samples (the server's limit; default 16000)"},
    /* OpenTelemetry (otlp+http(s)://, otlp). */
    {"otlp-header", "otlp_header", NULL, T_LIST, OFF(otlp_headers), 1, CONFIG_MAX_OTLP_HEADERS,
     "KEY=VALUE header sent with every OTLP request, repeatable (after "
     "$OTEL_EXPORTER_OTLP_HEADERS; values are never logged)"},
};
#define NOPTS (sizeof opts / sizeof opts[0])
#define OPT_CONFIG 1000
#define OPT_HELP 1001
#define OPT_VERSION 1002

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return CONFIG_ERROR;
}

static int suffix_is(const char *s, const char *suf) {
  return strcasecmp(s, suf) == 0;
}

int config_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+')
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s)
    return -1;
  while (*end == ' ')
    end++;
  uint64_t mult = 1;
  if (!*end || suffix_is(end, "B"))
    mult = 1;
  else if (suffix_is(end, "K") || suffix_is(end, "KiB"))
    mult = 1ull << 10;
  else if (suffix_is(end, "M") || suffix_is(end, "MiB"))
    mult = 1ull << 20;
  else if (suffix_is(end, "G") || suffix_is(end, "GiB"))
    mult = 1ull << 30;
  else if (suffix_is(end, "KB"))
    mult = 1000ull;
  else if (suffix_is(end, "MB"))
    mult = 1000ull * 1000;
  else if (suffix_is(end, "GB"))
    mult = 1000ull * 1000 * 1000;
  else
    return -1;
  if (v > UINT64_MAX / mult)
    return -1;
  *out = (uint64_t)v * mult;
  return 0;
}

int config_parse_duration_ms(const char *s, int64_t *out_ms) {
  if (!s || !*s || *s == '-' || *s == '+')
    return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || v < 0)
    return -1;
  int64_t mult = 1000;
  if (!*end || suffix_is(end, "s"))
    mult = 1000;
  else if (suffix_is(end, "ms"))
    mult = 1;
  else if (suffix_is(end, "m"))
    mult = 60 * 1000;
  else if (suffix_is(end, "h"))
    mult = 3600 * 1000;
  else
    return -1;
  if (v > INT64_MAX / mult)
    return -1;
  *out_ms = v * mult;
  return 0;
}

int config_parse_uids(const char *s, uid_t *out, size_t max, size_t *n) {
  *n = 0;
  if (!s)
    return -1;
  const char *p = s;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    while (len && *p == ' ')
      p++, len--;
    while (len && p[len - 1] == ' ')
      len--;
    if (len == 0 || len >= 64 || *n == max)
      return -1;
    char tok[64];
    memcpy(tok, p, len);
    tok[len] = 0;
    char *end;
    errno = 0;
    unsigned long v = strtoul(tok, &end, 10);
    if (tok[0] >= '0' && tok[0] <= '9') {
      if (errno || *end || v >= (unsigned long)(uid_t)-1)
        return -1;
      out[(*n)++] = (uid_t)v;
    } else {
      struct passwd pw, *res = NULL;
      char buf[4096];
      if (getpwnam_r(tok, &pw, buf, sizeof buf, &res) != 0 || !res)
        return -1;
      out[(*n)++] = res->pw_uid;
    }
    if (!comma)
      break;
    p = comma + 1;
    if (!*p)
      return -1;
  }
  return *n ? 0 : -1;
}

static const char *accepted(const opt_def *o, char *buf, size_t len) {
  switch (o->type) {
  case T_STR:
    return "a non-empty string";
  case T_BOOL:
    return "true, false, yes, no, 1 or 0";
  case T_UIDS:
    return "comma-separated numeric uids or existing user names";
  case T_SECONDS:
    snprintf(buf, len, "whole seconds from %lld to %lld, optionally suffixed s, m or h",
             (long long)o->min, (long long)o->max);
    return buf;
  case T_TIMEOUT:
    snprintf(buf, len, "a duration from %lldms to %llds, e.g. 10 or 10s or 500ms",
             (long long)o->min, (long long)o->max / 1000);
    return buf;
  case T_SIZE:
    snprintf(buf, len, "bytes from %lld to %llu, optionally suffixed KiB, MiB or GiB",
             (long long)o->min, (unsigned long long)o->max);
    return buf;
  case T_COUNT:
    snprintf(buf, len, "an integer from %lld to %lld", (long long)o->min, (long long)o->max);
    return buf;
  case T_LIST:
    snprintf(buf, len, "a non-empty value, given at most %lld times", (long long)o->max);
    return buf;
  }
  return "?";
}

static int list_add(config_list *l, const char *v, size_t len) {
  char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
  if (!nv)
    return -1;
  l->v = nv;
  if (!(nv[l->n] = strndup(v, len)))
    return -1;
  l->n++;
  return 0;
}

static void list_free(config_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    explicit_bzero(l->v[i], strlen(l->v[i])); /* header values are credentials */
    free(l->v[i]);
  }
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* A list value: the first flag replaces what the file gave; export targets
 * may be several per value (whitespace-separated), headers are one each. */
static int apply_list(sidecar_config *c, const opt_def *o, const char *value, const char *where,
                      char *err, size_t errlen) {
  config_list *l = (config_list *)(void *)((char *)c + o->offset);
  bool flag = where[0] == '-';
  bool split = o->offset == OFF(exports);
  if (flag && !l->from_flags) {
    list_free(l);
    l->from_flags = true;
  }
  if (strlen(value) > 4096)
    return fail(err, errlen, "%s: value longer than 4096 bytes", where);
  const char *p = value;
  size_t added = 0;
  while (*p) {
    size_t len = split ? strcspn(p, " \t") : strlen(p);
    if (len) {
      if (l->n >= (size_t)o->max)
        return fail(err, errlen, "%s: given more than %lld times", where, (long long)o->max);
      if (split)
        for (size_t i = 0; i < l->n; i++)
          if (strlen(l->v[i]) == len && strncmp(l->v[i], p, len) == 0)
            return fail(err, errlen, "%s: \"%.*s\" is given twice; give each target once", where,
                        (int)(len > 200 ? 200 : len), p);
      if (list_add(l, p, len) != 0)
        return fail(err, errlen, "%s: out of memory", where);
      added++;
    }
    p += len;
    while (split && (*p == ' ' || *p == '\t'))
      p++;
  }
  if (!added)
    return fail(err, errlen, "%s: empty value; expected %s", where,
                split ? "an export URL such as file:///var/lib/pushprof/profiles"
                      : "KEY=VALUE, e.g. Authorization=Bearer TOKEN");
  return CONFIG_OK;
}

/* Applies one value; where names the source ("--batch-window" or "key
 * dump_duration_seconds in FILE") for the error line. */
static int apply(sidecar_config *c, const opt_def *o, const char *value, const char *where,
                 char *err, size_t errlen) {
  char *field = (char *)c + o->offset;
  char acc[160];
  if (!value)
    value = "";
  switch (o->type) {
  case T_STR: {
    /* metrics_addr and bucket_subdirectory may be set empty to turn them off. */
    bool may_be_empty = o->offset == OFF(metrics_addr) || o->offset == OFF(bucket_subdir);
    if (!*value && !may_be_empty)
      return fail(err, errlen, "%s: empty value; expected %s", where, accepted(o, acc, sizeof acc));
    if (strlen(value) > 4096)
      return fail(err, errlen, "%s: value longer than 4096 bytes", where);
    enum log_level lv;
    if (o->offset == OFF(log_level) && log_level_parse(value, &lv) != 0)
      return fail(err, errlen,
                  "%s: \"%.100s\" is not a log level; expected debug, info, warn or error", where,
                  value);
    char *dup = strdup(value);
    if (!dup)
      return fail(err, errlen, "%s: out of memory", where);
    char **slot = (char **)(void *)field;
    free(*slot);
    *slot = dup;
    return CONFIG_OK;
  }
  case T_BOOL: {
    bool v;
    if (!*value || !strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1") ||
        !strcasecmp(value, "on"))
      v = true;
    else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0") ||
             !strcasecmp(value, "off"))
      v = false;
    else
      return fail(err, errlen, "%s: \"%s\" is not a boolean; expected %s", where, value,
                  accepted(o, acc, sizeof acc));
    *(bool *)(void *)field = v;
    return CONFIG_OK;
  }
  case T_UIDS: {
    if (config_parse_uids(value, c->allow_uids, CONFIG_MAX_UIDS, &c->n_allow_uids) != 0) {
      c->n_allow_uids = 0;
      return fail(err, errlen, "%s: \"%s\" is not a uid list; expected %s (at most %d)", where,
                  value, accepted(o, acc, sizeof acc), CONFIG_MAX_UIDS);
    }
    return CONFIG_OK;
  }
  case T_SECONDS:
  case T_TIMEOUT: {
    int64_t ms;
    if (config_parse_duration_ms(value, &ms) != 0 ||
        (o->type == T_SECONDS && (ms % 1000 != 0 || ms / 1000 < o->min || ms / 1000 > o->max)) ||
        (o->type == T_TIMEOUT && (ms < o->min || ms > o->max)))
      return fail(err, errlen, "%s: \"%s\" is not valid; expected %s", where, value,
                  accepted(o, acc, sizeof acc));
    *(int *)(void *)field = (int)(o->type == T_SECONDS ? ms / 1000 : ms);
    return CONFIG_OK;
  }
  case T_SIZE: {
    uint64_t v;
    if (config_parse_size(value, &v) != 0 || v < (uint64_t)o->min || v > (uint64_t)o->max)
      return fail(err, errlen, "%s: \"%s\" is not valid; expected %s", where, value,
                  accepted(o, acc, sizeof acc));
    if (o->offset == OFF(max_frame_bytes))
      c->max_frame_bytes = (uint32_t)v;
    else
      *(uint64_t *)(void *)field = v;
    return CONFIG_OK;
  }
  case T_COUNT: {
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!*value || errno || *end || v < o->min || v > o->max)
      return fail(err, errlen, "%s: \"%s\" is not valid; expected %s", where, value,
                  accepted(o, acc, sizeof acc));
    *(int *)(void *)field = (int)v;
    return CONFIG_OK;
  }
  case T_LIST:
    return apply_list(c, o, value, where, err, errlen);
  }
  return fail(err, errlen, "%s: unhandled setting type", where);
}

typedef struct ini_ctx {
  sidecar_config *c;
  const char *file;
  char *err;
  size_t errlen;
  int status;
} ini_ctx;

static int ini_handler_cb(void *user, const char *section, const char *name, const char *value) {
  ini_ctx *x = user;
  if (x->status != CONFIG_OK)
    return 0;
  char where[512];
  if (section[0] && strcmp(section, "sidecar") != 0) {
    x->status = fail(x->err, x->errlen,
                     "%s: unknown section [%s]; put keys before any section or under [sidecar]",
                     x->file, section);
    return 0;
  }
  for (size_t i = 0; i < NOPTS; i++) {
    if (strcmp(name, opts[i].key) == 0 || (opts[i].alias && strcmp(name, opts[i].alias) == 0)) {
      snprintf(where, sizeof where, "%s: key %s", x->file, name);
      x->status = apply(x->c, &opts[i], value, where, x->err, x->errlen);
      return x->status == CONFIG_OK;
    }
  }
  char known[1024] = "";
  size_t used = 0;
  for (size_t i = 0; i < NOPTS && used < sizeof known; i++)
    used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", opts[i].key);
  x->status =
      fail(x->err, x->errlen, "%s: unknown key \"%s\"; known keys: %s", x->file, name, known);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: pushprof-sidecar [--config FILE] [flags]\n"
             "Receives pprof pushes on a Unix socket, spools them durably, merges and exports "
             "them.\nEvery flag is also a key in the --config INI file (shown in brackets); "
             "flags override the file.\n\n");
  for (size_t i = 0; i < NOPTS; i++)
    fprintf(f, "  --%-22s [%s] %s\n", opts[i].flag, opts[i].key, opts[i].help);
  fprintf(f, "  --%-22s read settings from this INI file\n", "config FILE");
  fprintf(f, "  --%-22s this text\n  --%-22s print the version\n", "help", "version");
}

static int set_defaults(sidecar_config *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  const char *env_sock = getenv("PUSHPROF_SOCKET");
  const char *env_node = getenv("NODE_NAME");
  char host[256] = "";
  if (!env_node || !*env_node) {
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
      snprintf(host, sizeof host, "unknown");
    env_node = host;
  }
  c->socket_path = strdup(env_sock && *env_sock ? env_sock : CONFIG_DEFAULT_SOCKET);
  c->spool_dir = strdup(CONFIG_DEFAULT_SPOOL);
  c->metrics_addr = strdup("");
  c->node_name = strdup(env_node);
  c->log_level = strdup("info");
  c->bucket_subdir = strdup("");
  c->batch_window_s = 60;
  c->max_spool_bytes = 512ull << 20;
  c->journal_bytes = 64ull << 20;
  c->max_memory = 48ull << 20;
  c->shutdown_grace_s = 10;
  c->max_frame_bytes = 16u << 20;
  c->max_connections = 256;
  c->read_timeout_ms = 10 * 1000;
  c->rescan_interval_s = 5;
  c->max_batch_age_s = 86400;
  if (!c->socket_path || !c->spool_dir || !c->metrics_addr || !c->node_name || !c->bucket_subdir ||
      !c->log_level)
    return fail(err, errlen, "out of memory");
  return CONFIG_OK;
}

int config_load(sidecar_config *c, int argc, char **argv, char *err, size_t errlen) {
  struct option longopts[NOPTS + 4];
  int status = set_defaults(c, err, errlen);
  if (status != CONFIG_OK)
    return status;
  for (size_t i = 0; i < NOPTS; i++)
    longopts[i] = (struct option){
        opts[i].flag, opts[i].type == T_BOOL ? optional_argument : required_argument, NULL, (int)i};
  longopts[NOPTS] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
  longopts[NOPTS + 1] = (struct option){"help", no_argument, NULL, OPT_HELP};
  longopts[NOPTS + 2] = (struct option){"version", no_argument, NULL, OPT_VERSION};
  longopts[NOPTS + 3] = (struct option){NULL, 0, NULL, 0};

  /* Pass 1: collect flags (applied after the file, so they win). */
  int nflags = 0;
  int *flag_idx = calloc((size_t)argc + 1, sizeof *flag_idx);
  char **flag_val = calloc((size_t)argc + 1, sizeof *flag_val);
  if (!flag_idx || !flag_val) {
    status = fail(err, errlen, "out of memory");
    goto done;
  }
  optind = 1;
  opterr = 0;
  for (;;) {
    int longindex = -1;
    int ch = getopt_long(argc, argv, ":h", longopts, &longindex);
    if (ch == -1)
      break;
    if (ch == OPT_HELP || ch == 'h') {
      usage(stdout);
      status = CONFIG_DONE;
      goto done;
    }
    if (ch == OPT_VERSION) {
      printf("pushprof-sidecar 0.1.0\n");
      status = CONFIG_DONE;
      goto done;
    }
    if (ch == '?' || ch == ':') {
      const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
      status = fail(err, errlen,
                    ch == ':' ? "%s: missing value; see --help"
                              : "%s: unknown flag; see --help for the accepted flags",
                    arg);
      goto done;
    }
    if (ch == OPT_CONFIG) {
      free(c->config_file);
      c->config_file = strdup(optarg);
      if (!c->config_file) {
        status = fail(err, errlen, "out of memory");
        goto done;
      }
      continue;
    }
    flag_idx[nflags] = ch;
    flag_val[nflags] = optarg;
    nflags++;
  }
  if (optind < argc) {
    status = fail(err, errlen, "unexpected argument \"%s\"; every setting is a --flag (see --help)",
                  argv[optind]);
    goto done;
  }
  if (c->config_file) {
    ini_ctx x = {c, c->config_file, err, errlen, CONFIG_OK};
    int rc = ini_parse(c->config_file, ini_handler_cb, &x);
    if (x.status != CONFIG_OK) {
      status = x.status;
      goto done;
    }
    if (rc == -1) {
      status = fail(err, errlen, "--config %s: cannot open: %s", c->config_file, strerror(errno));
      goto done;
    }
    if (rc != 0) {
      status = fail(err, errlen, "--config %s: syntax error on line %d; expected key = value lines",
                    c->config_file, rc);
      goto done;
    }
  }
  for (int i = 0; i < nflags; i++) {
    char where[128];
    snprintf(where, sizeof where, "--%s", opts[flag_idx[i]].flag);
    status = apply(c, &opts[flag_idx[i]], flag_val[i], where, err, errlen);
    if (status != CONFIG_OK)
      goto done;
  }
  if (c->exports.n == 0 &&
      list_add(&c->exports, CONFIG_DEFAULT_EXPORT, strlen(CONFIG_DEFAULT_EXPORT)) != 0) {
    status = fail(err, errlen, "out of memory");
    goto done;
  }
  c->export_url = c->exports.v[0];
  for (size_t i = 0; i < c->exports.n; i++) {
    const char *u = c->exports.v[i];
    if (strstr(u, "://") == NULL && strcasecmp(u, "otlp") != 0) {
      status = fail(err, errlen,
                    "--export \"%.200s\": not a URL; expected e.g. file:///var/lib/pushprof, "
                    "otlp+http://HOST:4318 or otlp",
                    u);
      goto done;
    }
  }
  if (c->metrics_addr[0] && !strrchr(c->metrics_addr, ':')) {
    status = fail(err, errlen, "--metrics-addr \"%s\": expected HOST:PORT, e.g. 127.0.0.1:9464",
                  c->metrics_addr);
    goto done;
  }
done:
  free(flag_idx);
  free(flag_val);
  return status;
}

void config_free(sidecar_config *c) {
  free(c->socket_path);
  free(c->spool_dir);
  list_free(&c->exports);
  list_free(&c->otlp_headers);
  free(c->metrics_addr);
  free(c->http_token_file);
  free(c->node_name);
  free(c->log_level);
  free(c->bucket_subdir);
  free(c->config_file);
  free(c->ca_file);
  free(c->s3_region);
  free(c->s3_endpoint);
  free(c->gcs_endpoint);
  free(c->pyroscope_api);
  free(c->pyroscope_tenant);
  memset(c, 0, sizeof *c);
}
