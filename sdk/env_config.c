/* PUSHPROF_* configuration: options over environment over defaults. */
#include "env_config.h"
#include "pp_hex.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SIGNAL_ACCEPTED                                                                            \
  "SIGPROF, SIGVTALRM, SIGUSR1, SIGUSR2, SIGRTMIN, SIGRTMIN+n, SIGRTMAX-n or their numbers"

/* Empty values count as unset, as a shell's `VAR=` usually means "none". */
static const char *env_value(env_config_getenv_fn get, void *ctx, const char *name) {
  const char *v = get ? get(ctx, name) : NULL;
  return v && v[0] ? v : NULL;
}

/* Decimal integer, optional leading '+', nothing else; -1 if not one. */
static int parse_int(const char *s, long lo, long hi, int *out) {
  const char *p = s;
  if (*p == '+')
    p++;
  if (!isdigit((unsigned char)*p))
    return -1;
  errno = 0;
  char *end = NULL;
  long v = strtol(p, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

int env_config_signal_ok(int signo) {
  if (signo == SIGPROF || signo == SIGVTALRM || signo == SIGUSR1 || signo == SIGUSR2)
    return 1;
  return signo >= SIGRTMIN && signo <= SIGRTMAX;
}

int env_config_parse_signal(const char *s) {
  int n;
  if (!s)
    return -1;
  if (parse_int(s, 1, 1024, &n) == 0)
    return env_config_signal_ok(n) ? n : -1;
  if (strncasecmp(s, "SIG", 3) == 0)
    s += 3;
  static const struct {
    const char *name;
    int signo;
  } fixed[] = {{"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (strcasecmp(s, fixed[i].name) == 0)
      return fixed[i].signo;
  int base, sign;
  if (strncasecmp(s, "RTMIN", 5) == 0) {
    base = SIGRTMIN;
    sign = 1;
  } else if (strncasecmp(s, "RTMAX", 5) == 0) {
    base = SIGRTMAX;
    sign = -1;
  } else {
    return -1;
  }
  s += 5;
  if (*s == '\0')
    return base;
  if (*s != (sign > 0 ? '+' : '-') || parse_int(s + 1, 0, SIGRTMAX - SIGRTMIN, &n) != 0)
    return -1;
  int signo = base + sign * n;
  return env_config_signal_ok(signo) ? signo : -1;
}

unsigned env_config_parse_profiles(const char *s) {
  unsigned bits = 0;
  if (!s)
    return 0;
  for (;;) {
    while (*s == ' ' || *s == '\t')
      s++;
    const char *e = s;
    while (*e && *e != ',')
      e++;
    const char *t = e;
    while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
      t--;
    size_t n = (size_t)(t - s);
    if (n == 3 && memcmp(s, "cpu", 3) == 0)
      bits |= PUSHPROF_PROFILE_CPU;
    else if (n == 4 && memcmp(s, "heap", 4) == 0)
      bits |= PUSHPROF_PROFILE_HEAP;
    else if (n == 6 && memcmp(s, "offcpu", 6) == 0)
      bits |= PUSHPROF_PROFILE_OFFCPU;
    else if (n == 4 && memcmp(s, "lock", 4) == 0)
      bits |= PUSHPROF_PROFILE_LOCK;
    else
      return 0; /* an unknown name, or an empty item */
    if (!*e)
      return bits;
    s = e + 1;
  }
}

const char *env_config_profile_name(unsigned bit) {
  switch (bit) {
  case PUSHPROF_PROFILE_HEAP:
    return "heap";
  case PUSHPROF_PROFILE_OFFCPU:
    return "offcpu";
  case PUSHPROF_PROFILE_LOCK:
    return "lock";
  default:
    return "cpu";
  }
}

int env_config_output_for(const char *tmpl, pid_t pid, unsigned profiles, unsigned bit, char *out,
                          size_t outlen) {
  const char *type = env_config_profile_name(bit);
  if (env_config_expand_output(tmpl, pid, type, out, outlen) != 0)
    return -1;
  int has_t = 0;
  for (const char *p = tmpl; *p; p++)
    if (*p == '%') {
      has_t |= p[1] == 't';
      p++;
    }
  unsigned first = profiles & -profiles; /* the lowest type on: cpu if on */
  if (has_t || bit == first)
    return 0;
  return env_config_output_tag(out, type, outlen);
}

int env_config_output_tag(char *path, const char *tag, size_t outlen) {
  size_t n = strlen(path), tl = strlen(tag);
  static const char *const exts[] = {".pb.gz", ".pprof"};
  size_t at = n;
  for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
    size_t el = strlen(exts[i]);
    if (n > el && strcmp(path + n - el, exts[i]) == 0) {
      at = n - el;
      break;
    }
  }
  if (n + 1 + tl >= outlen)
    return -1;
  memmove(path + at + 1 + tl, path + at, n - at + 1);
  path[at] = '.';
  memcpy(path + at + 1, tag, tl);
  return 0;
}

int env_config_output_has_pid(const char *tmpl) {
  for (const char *p = tmpl; *p; p++)
    if (*p == '%') {
      if (p[1] == 'p')
        return 1;
      if (p[1])
        p++;
    }
  return 0;
}

int env_config_expand_output(const char *tmpl, pid_t pid, const char *type, char *out,
                             size_t outlen) {
  size_t o = 0;
  if (!tmpl || outlen == 0)
    return -1;
  for (const char *p = tmpl; *p; p++) {
    char num[24];
    const char *piece = num;
    size_t n;
    if (*p != '%') {
      num[0] = *p;
      n = 1;
    } else if (p[1] == '%') {
      num[0] = '%';
      n = 1;
      p++;
    } else if (p[1] == 'p') {
      int w = snprintf(num, sizeof num, "%ld", (long)pid);
      if (w < 0 || (size_t)w >= sizeof num)
        return -1;
      n = (size_t)w;
      p++;
    } else if (p[1] == 't') {
      piece = type ? type : "cpu";
      n = strlen(piece);
      p++;
    } else {
      return -1;
    }
    if (o + n >= outlen)
      return -1;
    memcpy(out + o, piece, n);
    o += n;
  }
  out[o] = '\0';
  return 0;
}

static int copy_str(char *dst, size_t dstlen, const char *src) {
  size_t n = strlen(src);
  if (n >= dstlen)
    return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

static int service_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > ENV_CONFIG_SERVICE_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return 0;
  return 1;
}

/* Where a setting came from, for the error line. */
typedef struct source {
  const char *opt_name; /* "pushprof_options.hz" */
  const char *env_name; /* "PUSHPROF_HZ" */
  int from_env;
} source;

static int fail(const source *src, const char *value, const char *accepted, char *err,
                size_t errlen) {
  if (err && errlen) {
    if (src->from_env)
      snprintf(err, errlen, "%s=\"%.200s\" is invalid (accepted: %s)", src->env_name, value,
               accepted);
    else
      snprintf(err, errlen, "%s=\"%.200s\" is invalid (accepted: %s)", src->opt_name, value,
               accepted);
  }
  return src->from_env ? PUSHPROF_ECONFIG : PUSHPROF_EINVAL;
}

static int fail_int(const source *src, long value, const char *accepted, char *err, size_t errlen) {
  char buf[32];
  snprintf(buf, sizeof buf, "%ld", value);
  return fail(src, buf, accepted, err, errlen);
}

/* An int setting: opts value (0 = unset) over the environment over def. */
static int resolve_int(int optval, const char *env, const source *src_in, long lo, long hi, int def,
                       const char *accepted, int *out, char *err, size_t errlen) {
  source src = *src_in;
  if (optval != 0) {
    if (optval < lo || optval > hi)
      return fail_int(&src, optval, accepted, err, errlen);
    *out = optval;
    return 0;
  }
  if (env) {
    src.from_env = 1;
    if (parse_int(env, lo, hi, out) != 0)
      return fail(&src, env, accepted, err, errlen);
    return 0;
  }
  *out = def;
  return 0;
}

/* A path setting: opts value over the environment; "" if neither. */
static int resolve_path(const char *optval, const char *env, const source *src_in, char *dst,
                        size_t dstlen, const char *accepted, char *err, size_t errlen) {
  source src = *src_in;
  const char *v = optval && optval[0] ? optval : NULL;
  if (!v && env) {
    v = env;
    src.from_env = 1;
  }
  dst[0] = '\0';
  if (!v)
    return 0;
  if (copy_str(dst, dstlen, v) != 0)
    return fail(&src, v, accepted, err, errlen);
  return 0;
}

/* Copies [s, s+n) trimmed of blanks into out (cap bytes with the NUL),
 * %-decoding when asked. -1 if it does not fit or a %-escape is bad. */
static int copy_part(const char *s, size_t n, int decode, char *out, size_t cap) {
  while (n && (*s == ' ' || *s == '\t'))
    s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (decode && c == '%') {
      if (i + 2 >= n)
        return -1;
      int a = pp_hexval(s[i + 1]), b = pp_hexval(s[i + 2]);
      if (a < 0 || b < 0)
        return -1;
      c = (char)(a * 16 + b);
      i += 2;
    }
    if ((unsigned char)c < 0x20 || c == 0x7f)
      return -1;
    if (o + 1 >= cap)
      return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return 0;
}

int env_config_parse_labels(const char *s, int otel, env_config_label *labels, size_t *n, char *err,
                            size_t errlen) {
  const char *p = s;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    env_config_label l;
    if (len == 0 || (!eq && strspn(p, " \t") == len)) {
      p = end ? end + 1 : NULL; /* tolerate empty items ("a=b,,c=d") */
      continue;
    }
    if (!eq) {
      snprintf(err, errlen, "item \"%.*s\" has no '=' (expected key=value,key=value)",
               (int)(len > 64 ? 64 : len), p);
      return -1;
    }
    if (copy_part(p, (size_t)(eq - p), otel, l.key, sizeof l.key) != 0 || !l.key[0]) {
      snprintf(err, errlen, "key \"%.*s\" is empty, longer than 128 bytes or has control bytes",
               (int)(eq - p > 64 ? 64 : eq - p), p);
      return -1;
    }
    if (copy_part(eq + 1, len - (size_t)(eq - p) - 1, otel, l.value, sizeof l.value) != 0) {
      snprintf(err, errlen, "the value of \"%s\" is longer than 1024 bytes, has control bytes%s",
               l.key, otel ? " or a bad %-escape" : "");
      return -1;
    }
    size_t i;
    for (i = 0; i < *n; i++)
      if (strcmp(labels[i].key, l.key) == 0)
        break;
    if (i == *n) {
      if (*n >= ENV_CONFIG_LABELS_MAX) {
        snprintf(err, errlen, "more than %d labels", ENV_CONFIG_LABELS_MAX);
        return -1;
      }
      (*n)++;
    }
    labels[i] = l;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

/* Process labels: OTEL_RESOURCE_ATTRIBUTES (%-decoded, the OpenTelemetry
 * way), then PUSHPROF_LABELS, whose keys replace the same keys; packed into
 * cfg->labels as "key\0value\0" pairs. */
static int resolve_labels(env_config_getenv_fn get, void *ctx, env_config *cfg, char *err,
                          size_t errlen) {
  char why[256];
  size_t n = 0;
  int rc = 0;
  const char *otel = env_value(get, ctx, "OTEL_RESOURCE_ATTRIBUTES");
  const char *pl = env_value(get, ctx, "PUSHPROF_LABELS");
  if (!otel && !pl)
    return 0;                                                     /* the common case pays nothing */
  env_config_label *l = calloc(ENV_CONFIG_LABELS_MAX, sizeof *l); /* 72 KiB */
  if (!l) {
    snprintf(err, errlen, "out of memory reading the process labels");
    return PUSHPROF_ENOMEM;
  }
  if (otel && env_config_parse_labels(otel, 1, l, &n, why, sizeof why) != 0) {
    snprintf(err, errlen,
             "OTEL_RESOURCE_ATTRIBUTES=\"%.64s\": %s (accepted: key=value,key=value with "
             "%%-escapes; at most 64 labels, keys 1..128 bytes, values up to 1024 bytes)",
             otel, why);
    rc = PUSHPROF_ECONFIG;
    goto out;
  }
  if (pl && env_config_parse_labels(pl, 0, l, &n, why, sizeof why) != 0) {
    snprintf(err, errlen,
             "PUSHPROF_LABELS=\"%.64s\": %s (accepted: key=value,key=value; at most "
             "64 labels, keys 1..128 bytes, values up to 1024 bytes)",
             pl, why);
    rc = PUSHPROF_ECONFIG;
    goto out;
  }
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    size_t kl = strlen(l[i].key) + 1, vl = strlen(l[i].value) + 1;
    if (off + kl + vl > sizeof cfg->labels) {
      snprintf(err, errlen,
               "%s: the process labels take more than %zu bytes in all (shorten the values)",
               pl ? "PUSHPROF_LABELS" : "OTEL_RESOURCE_ATTRIBUTES", sizeof cfg->labels);
      rc = PUSHPROF_ECONFIG;
      goto out;
    }
    memcpy(cfg->labels + off, l[i].key, kl);
    memcpy(cfg->labels + off + kl, l[i].value, vl);
    off += kl + vl;
  }
  cfg->nlabels = n;
  cfg->labels_len = off;
out:
  free(l);
  return rc;
}

int env_config_resolve(const pushprof_options *opts, env_config_getenv_fn get, void *ctx,
                       const char *prog_name, env_config *cfg, char *err, size_t errlen) {
  static const pushprof_options none;
  const pushprof_options *o = opts ? opts : &none;
  int rc;
  if (err && errlen)
    err[0] = '\0';
  memset(cfg, 0, sizeof *cfg);

  source s = {"pushprof_options.hz", "PUSHPROF_HZ", 0};
  rc = resolve_int(o->hz, env_value(get, ctx, "PUSHPROF_HZ"), &s, 1, ENV_CONFIG_HZ_MAX,
                   ENV_CONFIG_HZ_DEFAULT, "an integer 1..1000 samples per second; default 100",
                   &cfg->hz, err, errlen);
  if (rc)
    return rc;

  s = (source){"pushprof_options.signal_number", "PUSHPROF_SIGNAL", 0};
  if (o->signal_number != 0) {
    if (!env_config_signal_ok(o->signal_number))
      return fail_int(&s, o->signal_number, SIGNAL_ACCEPTED, err, errlen);
    cfg->signo = o->signal_number;
  } else {
    const char *v = env_value(get, ctx, "PUSHPROF_SIGNAL");
    cfg->signo = SIGPROF;
    if (v) {
      s.from_env = 1;
      cfg->signo = env_config_parse_signal(v);
      if (cfg->signo < 0)
        return fail(&s, v, SIGNAL_ACCEPTED "; default SIGPROF", err, errlen);
    }
  }

  /* Service: option, PUSHPROF_SERVICE, OTEL_SERVICE_NAME, program name. */
  const char *svc_accepted = "1..128 bytes without control characters; default the program name";
  s = (source){"pushprof_options.service", "PUSHPROF_SERVICE", 0};
  const char *svc = o->service && o->service[0] ? o->service : NULL;
  if (!svc && (svc = env_value(get, ctx, "PUSHPROF_SERVICE")) != NULL)
    s.from_env = 1;
  if (!svc && (svc = env_value(get, ctx, "OTEL_SERVICE_NAME")) != NULL) {
    s.from_env = 1;
    s.env_name = "OTEL_SERVICE_NAME";
  }
  if (svc) {
    if (!service_ok(svc))
      return fail(&s, svc, svc_accepted, err, errlen);
    memcpy(cfg->service, svc, strlen(svc) + 1);
  } else {
    /* A default is ours to fix up: truncate and replace control bytes. */
    const char *p = prog_name && prog_name[0] ? prog_name : "unknown";
    size_t n = strnlen(p, ENV_CONFIG_SERVICE_MAX);
    for (size_t i = 0; i < n; i++)
      cfg->service[i] = ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) ? '_' : p[i];
    cfg->service[n] = '\0';
  }

  s = (source){"pushprof_options.output_path", "PUSHPROF_OUTPUT", 0};
  rc = resolve_path(o->output_path, env_value(get, ctx, "PUSHPROF_OUTPUT"), &s, cfg->output_path,
                    sizeof cfg->output_path, "a file path shorter than PATH_MAX", err, errlen);
  if (rc)
    return rc;
  if (cfg->output_path[0]) {
    char probe[PATH_MAX];
    s.from_env = !(o->output_path && o->output_path[0]);
    if (env_config_expand_output(cfg->output_path, 2147483647, "heap", probe, sizeof probe) != 0)
      return fail(&s, cfg->output_path,
                  "a file path; %p is replaced by the pid, %t by the profile type and %% by a "
                  "'%', no other % sequence",
                  err, errlen);
  }

  s = (source){"pushprof_options.socket_path", "PUSHPROF_SOCKET", 0};
  rc =
      resolve_path(o->socket_path, env_value(get, ctx, "PUSHPROF_SOCKET"), &s, cfg->socket_path,
                   sizeof cfg->socket_path, "a Unix socket path of at most 107 bytes", err, errlen);
  if (rc)
    return rc;

  s = (source){"pushprof_options.upload_period_s", "PUSHPROF_UPLOAD_PERIOD", 0};
  rc = resolve_int(o->upload_period_s, env_value(get, ctx, "PUSHPROF_UPLOAD_PERIOD"), &s, 1,
                   ENV_CONFIG_PERIOD_MAX_S, ENV_CONFIG_PERIOD_DEFAULT_S,
                   "an integer 1..3600 seconds; default 10", &cfg->upload_period_s, err, errlen);
  if (rc)
    return rc;

  s = (source){"pushprof_options.exit_timeout_ms", "PUSHPROF_EXIT_TIMEOUT_MS", 0};
  rc = resolve_int(o->exit_timeout_ms, env_value(get, ctx, "PUSHPROF_EXIT_TIMEOUT_MS"), &s, 1,
                   ENV_CONFIG_EXIT_TIMEOUT_MAX_MS, ENV_CONFIG_EXIT_TIMEOUT_DEFAULT_MS,
                   "an integer 1..60000 milliseconds; default 2000", &cfg->exit_timeout_ms, err,
                   errlen);
  if (rc)
    return rc;

  s = (source){"pushprof_options.spool_dir", "PUSHPROF_SPOOL_DIR", 0};
  rc = resolve_path(o->spool_dir, env_value(get, ctx, "PUSHPROF_SPOOL_DIR"), &s, cfg->spool_dir,
                    sizeof cfg->spool_dir, "a directory path shorter than PATH_MAX", err, errlen);
  if (rc)
    return rc;

  s = (source){"pushprof_options.backlog", "PUSHPROF_BACKLOG", 0};
  rc = resolve_int(o->backlog, env_value(get, ctx, "PUSHPROF_BACKLOG"), &s, 1,
                   ENV_CONFIG_BACKLOG_MAX, ENV_CONFIG_BACKLOG_DEFAULT,
                   "an integer 1..1000 profiles; default 6", &cfg->backlog, err, errlen);
  if (rc)
    return rc;

  s = (source){"pushprof_options.profiles", "PUSHPROF_PROFILES", 0};
  const char *prof = o->profiles && o->profiles[0] ? o->profiles : NULL;
  if (!prof && (prof = env_value(get, ctx, "PUSHPROF_PROFILES")) != NULL)
    s.from_env = 1;
  cfg->profiles = PUSHPROF_PROFILE_CPU;
  if (prof && (cfg->profiles = env_config_parse_profiles(prof)) == 0)
    return fail(&s, prof, "a comma list of cpu, heap, offcpu, lock; default cpu", err, errlen);

  s = (source){"pushprof_options.heap_rate", "PUSHPROF_HEAP_RATE", 0};
  cfg->heap_rate = ENV_CONFIG_HEAP_RATE_DEFAULT;
  const char *rate_accepted = "an integer 1..1099511627776 bytes; default 524288";
  if (o->heap_rate != 0) {
    if (o->heap_rate < 1 || o->heap_rate > ENV_CONFIG_HEAP_RATE_MAX)
      return fail_int(&s, (long)o->heap_rate, rate_accepted, err, errlen);
    cfg->heap_rate = o->heap_rate;
  } else {
    const char *v = env_value(get, ctx, "PUSHPROF_HEAP_RATE");
    if (v) {
      char *end;
      s.from_env = 1;
      errno = 0;
      long long r = strtoll(v, &end, 10);
      if (errno || end == v || *end || r < 1 || r > ENV_CONFIG_HEAP_RATE_MAX || v[0] == '+' ||
          v[0] == ' ')
        return fail(&s, v, rate_accepted, err, errlen);
      cfg->heap_rate = r;
    }
  }

  static const struct {
    const char *env;
    size_t off;
  } wait_rates[] = {{"PUSHPROF_OFFCPU_RATE", offsetof(env_config, offcpu_rate)},
                    {"PUSHPROF_LOCK_RATE", offsetof(env_config, lock_rate)}};
  for (size_t i = 0; i < sizeof wait_rates / sizeof *wait_rates; i++) {
    long long *dst = (long long *)((char *)cfg + wait_rates[i].off);
    *dst = ENV_CONFIG_WAIT_RATE_DEFAULT;
    const char *v = env_value(get, ctx, wait_rates[i].env);
    if (!v)
      continue;
    s = (source){wait_rates[i].env, wait_rates[i].env, 1};
    char *end;
    errno = 0;
    long long r = strtoll(v, &end, 10);
    if (errno || end == v || *end || r < 1 || r > ENV_CONFIG_WAIT_RATE_MAX || v[0] == '+' ||
        v[0] == ' ')
      return fail(&s, v, "an integer 1..3600000000000 ns waited per kept wait; default 1000000",
                  err, errlen);
    *dst = r;
  }

  rc = resolve_labels(get, ctx, cfg, err, errlen);
  if (rc)
    return rc;

  cfg->ondemand = 1;
  const char *od = env_value(get, ctx, "PUSHPROF_ONDEMAND");
  if (od) {
    if (strcmp(od, "0") != 0 && strcmp(od, "1") != 0) {
      s = (source){"PUSHPROF_ONDEMAND", "PUSHPROF_ONDEMAND", 1};
      return fail(&s, od, "1 (default: the sidecar may ask for on-demand profiles) or 0", err,
                  errlen);
    }
    cfg->ondemand = od[0] == '1';
  }

  cfg->handle_term_signals = o->handle_term_signals != 0;
  return 0;
}
