/* Resolves the SDK's configuration: pushprof_options fields over PUSHPROF_*
 * environment variables over defaults, validated. A pure function over a
 * getenv-like callback (no global state, no output), so every rule is unit
 * tested without touching the real environment. Thread-safe if the callback
 * is; not async-signal-safe. */
#ifndef PUSHPROF_ENV_CONFIG_H
#define PUSHPROF_ENV_CONFIG_H
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "pushprof.h"

#define ENV_CONFIG_HZ_DEFAULT 100
#define ENV_CONFIG_HZ_MAX 1000
#define ENV_CONFIG_SERVICE_MAX 128 /* bytes, as the sidecar accepts (PP_SERVICE_MAX) */
#define ENV_CONFIG_PERIOD_DEFAULT_S 10
#define ENV_CONFIG_PERIOD_MAX_S 3600
#define ENV_CONFIG_EXIT_TIMEOUT_DEFAULT_MS 2000
#define ENV_CONFIG_EXIT_TIMEOUT_MAX_MS 60000
#define ENV_CONFIG_BACKLOG_DEFAULT 6
#define ENV_CONFIG_BACKLOG_MAX 1000

/* Returns the value of an environment variable or NULL (like getenv). */
typedef const char *(*env_config_getenv_fn)(void *ctx, const char *name);

typedef struct env_config {
  int hz;
  int signo;
  char service[ENV_CONFIG_SERVICE_MAX + 1];
  char output_path[PATH_MAX]; /* template, may hold %p; "" = none */
  char socket_path[108];      /* sizeof(sockaddr_un.sun_path); "" = none */
  int upload_period_s;
  int exit_timeout_ms;
  int handle_term_signals;
  char spool_dir[PATH_MAX]; /* "" = none */
  int backlog;
} env_config;

/* Fills cfg from opts (may be NULL), then the environment read through get,
 * then defaults. prog_name is the default service (e.g. the program's short
 * name; NULL or "" gives "unknown"). Returns 0; PUSHPROF_EINVAL if an opts
 * field is invalid; PUSHPROF_ECONFIG if an environment variable is. On error
 * err holds one line naming the field or variable, the value and the
 * accepted values (no "pushprof:" prefix, no newline). */
int env_config_resolve(const pushprof_options *opts, env_config_getenv_fn get, void *ctx,
                       const char *prog_name, env_config *cfg, char *err, size_t errlen);

/* Parses a signal as accepted by PUSHPROF_SIGNAL: SIGPROF, SIGVTALRM,
 * SIGUSR1, SIGUSR2, SIGRTMIN, SIGRTMIN+n, SIGRTMAX-n (the SIG prefix is
 * optional, case-insensitive) or the number of one of them. Returns the
 * signal number or -1. */
int env_config_parse_signal(const char *s);

/* 1 if signo may be used for sampling (see env_config_parse_signal). */
int env_config_signal_ok(int signo);

/* Expands an output template: %p becomes pid, %% a '%'. Returns 0, or -1 if
 * the result does not fit in outlen or the template holds another %
 * sequence. */
int env_config_expand_output(const char *tmpl, pid_t pid, char *out, size_t outlen);
#endif
