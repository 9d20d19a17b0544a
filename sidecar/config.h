/* The sidecar's settings: defaults, then the --config FILE (INI, parsed by
 * libinih), then command-line flags, each later source overriding the
 * earlier. Every flag is also a key in the file (see the README's Sidecar
 * section). Not thread-safe: load once in main() before starting threads. */
#ifndef SIDECAR_CONFIG_H
#define SIDECAR_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONFIG_DEFAULT_SOCKET "/run/pushprof/pushprof.sock"
#define CONFIG_DEFAULT_SPOOL "/var/lib/pushprof/spool"
#define CONFIG_DEFAULT_EXPORT "file:///var/lib/pushprof/profiles"
#define CONFIG_MAX_UIDS 64
#define CONFIG_MAX_EXPORTS 8 /* --export targets at once */
#define CONFIG_MAX_OTLP_HEADERS 64

/* A setting that may be given several times. Flags replace what the file
 * listed (the first flag clears it), like every other setting. */
typedef struct config_list {
  char **v;
  size_t n;
  bool from_flags;
} config_list;

typedef struct sidecar_config {
  char *socket_path;                 /* --socket / socket ($PUSHPROF_SOCKET, else the default) */
  char *spool_dir;                   /* --spool / spool */
  char *export_url;                  /* the first of exports (not a separate copy) */
  config_list exports;               /* --export (repeatable) / export_to (whitespace-separated) */
  int batch_window_s;                /* --batch-window / dump_duration_seconds (60) */
  uint64_t max_spool_bytes;          /* --max-spool-bytes / max_spool_bytes (512 MiB) */
  bool spool_drop_oldest;            /* --spool-drop-oldest / spool_drop_oldest */
  uint64_t journal_bytes;            /* --journal-bytes / journal_bytes (64 MiB; 0 = off) */
  uint64_t max_memory;               /* --max-memory / max_memory (48 MiB) */
  char *metrics_addr;                /* --metrics-addr / metrics_addr, HOST:PORT; "" = off */
  char *http_token_file;             /* --http-token-file / http_token_file (/profile/ token) */
  char *node_name;                   /* --node-name / node_name ($NODE_NAME, else the host name) */
  char *log_level;                   /* --log-level / log_level: debug, info, warn, error (info) */
  uid_t allow_uids[CONFIG_MAX_UIDS]; /* --allow-uid / allow_uid */
  size_t n_allow_uids;               /* 0: every peer is allowed */
  int shutdown_grace_s;              /* --shutdown-grace / shutdown_grace (10) */
  char *bucket_subdir;               /* --bucket-subdirectory / bucket_subdirectory ("") */
  int max_dumps_retained;            /* --max-dumps-retained / max_dumps_retained (0 = all) */
  uint32_t max_frame_bytes;          /* --max-frame-bytes / max_frame_bytes (16 MiB) */
  int max_connections;               /* --max-connections / max_connections (256) */
  int read_timeout_ms;               /* --read-timeout / read_timeout (10 s) */
  int rescan_interval_s;             /* --rescan-interval / rescan_interval (5 s) */
  int max_batch_age_s;               /* --max-batch-age / max_batch_age (86400) */
  char *config_file;                 /* --config, NULL if none */
  /* HTTP exporters (s3, gs, pyroscope); NULL = unset (exporter_options). */
  char *ca_file;                        /* --ca-file / ca_file */
  bool tls_insecure_skip_verify;        /* --tls-insecure-skip-verify / tls_insecure_skip_verify */
  int http_timeout_ms;                  /* --http-timeout / http_timeout (60 s) */
  char *s3_region;                      /* --s3-region / s3_region */
  char *s3_endpoint;                    /* --s3-endpoint / s3_endpoint */
  bool s3_path_style;                   /* --s3-path-style / s3_path_style */
  char *gcs_endpoint;                   /* --gcs-endpoint / gcs_endpoint */
  char *pyroscope_api;                  /* --pyroscope-api / pyroscope_api (push) */
  char *pyroscope_tenant;               /* --pyroscope-tenant / pyroscope_tenant */
  uint64_t pyroscope_max_profile_bytes; /* --pyroscope-max-profile-bytes (4 MiB) */
  int pyroscope_max_samples;            /* --pyroscope-max-samples (16000) */
  config_list otlp_headers;             /* --otlp-header KEY=VALUE (repeatable) / otlp_header */
} sidecar_config;

enum config_status {
  CONFIG_OK = 0,
  CONFIG_DONE = 1,  /* --help or --version printed: exit 0 */
  CONFIG_ERROR = 2, /* err holds one line naming the flag/key and the accepted values: exit 2 */
};

/* Fills c from the defaults, the environment, the --config file and argv.
 * On CONFIG_ERROR err says what was wrong. c must be freed with config_free
 * whatever the result. */
int config_load(sidecar_config *c, int argc, char **argv, char *err, size_t errlen);
void config_free(sidecar_config *c);

/* Value parsers, exposed for the tests. 0 or -1. */
/* Bytes with an optional suffix: K/KiB, M/MiB, G/GiB (x1024), KB/MB/GB (x1000), B. */
int config_parse_size(const char *s, uint64_t *out);
/* A duration: whole seconds, optionally suffixed s, m or h; written in ms. */
int config_parse_duration_ms(const char *s, int64_t *out_ms);
/* Comma-separated uids or user names. */
int config_parse_uids(const char *s, uid_t *out, size_t max, size_t *n);
#endif
