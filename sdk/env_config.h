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
#define ENV_CONFIG_LABELS_MAX 64     /* process labels, as the sidecar accepts (PP_LABELS_MAX) */
#define ENV_CONFIG_LABELS_BYTES 8192 /* all of them packed */
#define ENV_CONFIG_HEAP_RATE_DEFAULT 524288
#define ENV_CONFIG_HEAP_RATE_MAX (1LL << 40)
#define ENV_CONFIG_WAIT_RATE_DEFAULT 1000000       /* ns */
#define ENV_CONFIG_WAIT_RATE_MAX (3600000000000LL) /* an hour, in ns */

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
  unsigned profiles;                /* PUSHPROF_PROFILE_* bits, at least one */
  long long heap_rate;              /* bytes */
  long long offcpu_rate, lock_rate; /* ns waited per kept wait */
  int ondemand; /* PUSHPROF_ONDEMAND: subscribe to the sidecar's on-demand sessions */
  /* Process labels: OTEL_RESOURCE_ATTRIBUTES, then PUSHPROF_LABELS (whose
   * keys replace the same keys): nlabels "key\0value\0" pairs. */
  size_t nlabels, labels_len;
  char labels[ENV_CONFIG_LABELS_BYTES];
} env_config;

typedef struct env_config_label {
  char key[129];    /* PP_LABEL_KEY_MAX + 1 */
  char value[1025]; /* PP_LABEL_VALUE_MAX + 1 */
} env_config_label;

/* Parses "k=v,k=v" (PUSHPROF_LABELS; OTEL_RESOURCE_ATTRIBUTES with
 * %-decoding when otel is 1) into labels[*n..], replacing entries with the
 * same key; blanks around keys and values are trimmed, empty items skipped.
 * Returns 0, or -1 with a one-line reason in err. Pure function. */
int env_config_parse_labels(const char *s, int otel, env_config_label *labels, size_t *n, char *err,
                            size_t errlen);

/* Fills cfg from opts (may be NULL), then the environment read through get,
 * then defaults. prog_name is the default service (e.g. the program's short
 * name; NULL or "" gives "unknown"). Returns 0; PUSHPROF_EINVAL if an opts
 * field is invalid; PUSHPROF_ECONFIG if an environment variable is;
 * PUSHPROF_ENOMEM if the labels' scratch space cannot be had. On error
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

/* Parses a PUSHPROF_PROFILES list ("cpu,heap": names separated by commas,
 * blanks trimmed). Returns the PUSHPROF_PROFILE_* bits, or 0 if the list is
 * empty or names an unknown type. */
unsigned env_config_parse_profiles(const char *s);
/* The name of one profile type bit ("cpu", "heap"). */
const char *env_config_profile_name(unsigned bit);

/* Expands an output template: %p becomes pid, %t the profile type (type
 * NULL: "cpu"), %% a '%'. Returns 0, or -1 if the result does not fit in
 * outlen or the template holds another % sequence. */
int env_config_expand_output(const char *tmpl, pid_t pid, const char *type, char *out,
                             size_t outlen);
/* The file a profile type goes to when several are on: the expanded
 * template when it holds %t; otherwise the first type (cpu) goes to the
 * path itself and each other type to the path with ".TYPE" put before a
 * trailing ".pb.gz" or ".pprof" (else appended). 0 or -1 as above. */
int env_config_output_for(const char *tmpl, pid_t pid, unsigned profiles, unsigned bit, char *out,
                          size_t outlen);
/* Puts ".TAG" into path (a buffer of outlen bytes) before a trailing
 * ".pb.gz" or ".pprof" (else appends it). 0, or -1 if it does not fit. */
int env_config_output_tag(char *path, const char *tag, size_t outlen);
/* 1 if the template holds %p. */
int env_config_output_has_pid(const char *tmpl);
#endif
