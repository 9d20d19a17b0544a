/* PUSHPROF_* environment values: the input is lines of NAME=VALUE given to
 * env_config_resolve through its getenv callback ("@prog=NAME" sets the
 * program name, "opt.FIELD=VALUE" a pushprof_options field). A resolved
 * config must be inside the documented bounds; every value also goes through
 * the signal parser and the output template expansion. */
#include <signal.h>
#include <string.h>

#include "env_config.h"
#include "fuzz_target.h"

#define MAX_VARS 32

typedef struct fake_env {
  char *name[MAX_VARS], *value[MAX_VARS];
  size_t n;
} fake_env;

static const char *fake_getenv(void *ctx, const char *name) {
  const fake_env *e = ctx;
  for (size_t i = e->n; i-- > 0;) /* the last definition wins, as in a shell */
    if (strcmp(e->name[i], name) == 0)
      return e->value[i];
  return NULL;
}

static const char *lookup(const fake_env *e, const char *name) {
  return fake_getenv((void *)e, name);
}

static int opt_int(const fake_env *e, const char *name) {
  const char *v = lookup(e, name);
  return v ? atoi(v) : 0;
}

static void check_value(const char *v) {
  int signo = env_config_parse_signal(v);
  FUZZ_CHECK(signo == -1 || env_config_signal_ok(signo), "\"%s\" gave signal %d", v, signo);
  static const size_t lens[] = {1, 2, 8, 108, 4096};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    char out[4096];
    memset(out, 'x', sizeof out);
    if (env_config_expand_output(v, 12345, "heap", out, lens[i]) != 0)
      continue;
    size_t n = strnlen(out, lens[i]);
    FUZZ_CHECK(n < lens[i], "expansion of \"%s\" overflowed %zu bytes", v, lens[i]);
    if (!strchr(v, '%'))
      FUZZ_CHECK(strcmp(out, v) == 0, "\"%s\" expanded to \"%s\"", v, out);
  }
}

static void check_resolved(const env_config *c) {
  FUZZ_CHECK(c->hz >= 1 && c->hz <= ENV_CONFIG_HZ_MAX, "hz %d", c->hz);
  FUZZ_CHECK(env_config_signal_ok(c->signo), "signal %d", c->signo);
  size_t sl = strnlen(c->service, sizeof c->service);
  FUZZ_CHECK(sl >= 1 && sl <= ENV_CONFIG_SERVICE_MAX, "service of %zu bytes", sl);
  for (size_t i = 0; i < sl; i++)
    FUZZ_CHECK((unsigned char)c->service[i] >= 0x20 && c->service[i] != 0x7f,
               "control byte %#x in the service", (unsigned)(unsigned char)c->service[i]);
  FUZZ_CHECK(strnlen(c->output_path, sizeof c->output_path) < sizeof c->output_path, "output");
  FUZZ_CHECK(strnlen(c->socket_path, sizeof c->socket_path) < sizeof c->socket_path, "socket");
  FUZZ_CHECK(strnlen(c->spool_dir, sizeof c->spool_dir) < sizeof c->spool_dir, "spool dir");
  if (c->output_path[0]) {
    char out[PATH_MAX];
    FUZZ_CHECK(env_config_expand_output(c->output_path, 1, "cpu", out, sizeof out) == 0,
               "accepted output template \"%s\" does not expand", c->output_path);
  }
  FUZZ_CHECK(c->upload_period_s >= 1 && c->upload_period_s <= ENV_CONFIG_PERIOD_MAX_S, "period %d",
             c->upload_period_s);
  FUZZ_CHECK(c->exit_timeout_ms >= 1 && c->exit_timeout_ms <= ENV_CONFIG_EXIT_TIMEOUT_MAX_MS,
             "exit timeout %d", c->exit_timeout_ms);
  FUZZ_CHECK(c->backlog >= 1 && c->backlog <= ENV_CONFIG_BACKLOG_MAX, "backlog %d", c->backlog);
  FUZZ_CHECK(c->handle_term_signals == 0 || c->handle_term_signals == 1, "handle_term_signals");
  /* Process labels: nlabels "key\0value\0" pairs inside labels_len, keys
   * 1..128 bytes and values up to 1024 without control bytes, keys unique. */
  FUZZ_CHECK(c->nlabels <= ENV_CONFIG_LABELS_MAX, "%zu labels", c->nlabels);
  FUZZ_CHECK(c->labels_len <= sizeof c->labels, "labels_len %zu", c->labels_len);
  size_t off = 0;
  const char *keys[ENV_CONFIG_LABELS_MAX];
  for (size_t i = 0; i < c->nlabels && i < ENV_CONFIG_LABELS_MAX; i++) {
    for (int part = 0; part < 2; part++) {
      size_t n = off < c->labels_len ? strnlen(c->labels + off, c->labels_len - off) : 0;
      FUZZ_CHECK(off + n < c->labels_len, "label %zu runs past labels_len", i);
      FUZZ_CHECK(part ? n <= 1024 : (n >= 1 && n <= 128), "label %zu part %d: %zu bytes", i, part,
                 n);
      for (size_t k = 0; k < n; k++)
        FUZZ_CHECK((unsigned char)c->labels[off + k] >= 0x20 && c->labels[off + k] != 0x7f,
                   "control byte in label %zu", i);
      if (!part) {
        keys[i] = c->labels + off;
        for (size_t j = 0; j < i; j++)
          FUZZ_CHECK(strcmp(keys[j], keys[i]) != 0, "key %s twice", keys[i]);
      }
      off += n + 1;
    }
  }
  FUZZ_CHECK(off == c->labels_len, "labels_len %zu, pairs end at %zu", c->labels_len, off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fake_env e = {.n = 0};
  const uint8_t *p = data, *end = data + size;
  while (p < end && e.n < MAX_VARS) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *lend = nl ? nl : end;
    const uint8_t *eq = memchr(p, '=', (size_t)(lend - p));
    if (eq) {
      e.name[e.n] = strndup((const char *)p, (size_t)(eq - p));
      e.value[e.n] = strndup((const char *)eq + 1, (size_t)(lend - eq - 1));
      FUZZ_CHECK(e.name[e.n] && e.value[e.n], "out of memory");
      check_value(e.value[e.n]);
      e.n++;
    }
    p = nl ? nl + 1 : end;
  }

  pushprof_options o = {
      .hz = opt_int(&e, "opt.hz"),
      .service = lookup(&e, "opt.service"),
      .output_path = lookup(&e, "opt.output_path"),
      .signal_number = opt_int(&e, "opt.signal_number"),
      .socket_path = lookup(&e, "opt.socket_path"),
      .upload_period_s = opt_int(&e, "opt.upload_period_s"),
      .exit_timeout_ms = opt_int(&e, "opt.exit_timeout_ms"),
      .handle_term_signals = opt_int(&e, "opt.handle_term_signals"),
      .spool_dir = lookup(&e, "opt.spool_dir"),
      .backlog = opt_int(&e, "opt.backlog"),
  };
  const char *prog = lookup(&e, "@prog");
  for (int with_opts = 0; with_opts < 2; with_opts++) {
    env_config c;
    char err[512];
    memset(err, 'x', sizeof err);
    int rc = env_config_resolve(with_opts ? &o : NULL, fake_getenv, &e, prog, &c, err, sizeof err);
    if (rc == 0) {
      check_resolved(&c);
    } else {
      FUZZ_CHECK(rc == PUSHPROF_EINVAL || rc == PUSHPROF_ECONFIG, "returned %d", rc);
      FUZZ_CHECK(with_opts || rc == PUSHPROF_ECONFIG, "EINVAL without options");
      FUZZ_CHECK(strnlen(err, sizeof err) < sizeof err && err[0], "no error line");
    }
  }
  for (size_t i = 0; i < e.n; i++) {
    free(e.name[i]);
    free(e.value[i]);
  }
  return 0;
}
