/* The sidecar's config file: the input is the INI file given to config_load
 * (through a memfd, as config.c reads files by path only), and every line of
 * it also goes through the value parsers. A loaded config must hold every
 * setting inside the bounds the --help text states. */
#include <limits.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_target.h"

static int config_fd = -1;
static char config_path[64];

static void check_loaded(const sidecar_config *c) {
  FUZZ_CHECK(c->socket_path && c->spool_dir && c->export_url && c->metrics_addr && c->node_name &&
                 c->bucket_subdir,
             "a string setting is NULL");
  FUZZ_CHECK(c->socket_path[0] && c->spool_dir[0] && c->node_name[0], "empty path setting");
  FUZZ_CHECK(c->exports.n >= 1 && c->exports.n <= CONFIG_MAX_EXPORTS &&
                 c->export_url == c->exports.v[0],
             "%zu export targets", c->exports.n);
  for (size_t i = 0; i < c->exports.n; i++)
    FUZZ_CHECK(strstr(c->exports.v[i], "://") != NULL || strcasecmp(c->exports.v[i], "otlp") == 0,
               "export \"%s\" is not a URL", c->exports.v[i]);
  FUZZ_CHECK(c->otlp_headers.n <= CONFIG_MAX_OTLP_HEADERS, "%zu otlp headers", c->otlp_headers.n);
  FUZZ_CHECK(!c->metrics_addr[0] || strchr(c->metrics_addr, ':'), "metrics_addr \"%s\"",
             c->metrics_addr);
  FUZZ_CHECK(c->batch_window_s >= 1 && c->batch_window_s <= 86400, "batch window %d",
             c->batch_window_s);
  FUZZ_CHECK(c->max_spool_bytes >= 4096, "max_spool_bytes %llu",
             (unsigned long long)c->max_spool_bytes);
  FUZZ_CHECK(c->n_allow_uids <= CONFIG_MAX_UIDS, "%zu uids", c->n_allow_uids);
  FUZZ_CHECK(c->shutdown_grace_s >= 0 && c->shutdown_grace_s <= 3600, "shutdown grace %d",
             c->shutdown_grace_s);
  FUZZ_CHECK(c->max_dumps_retained >= 0 && c->max_dumps_retained <= 1000000, "max dumps %d",
             c->max_dumps_retained);
  FUZZ_CHECK(c->max_frame_bytes >= 4096, "max_frame_bytes %u", (unsigned)c->max_frame_bytes);
  FUZZ_CHECK(c->max_connections >= 1 && c->max_connections <= 65536, "max connections %d",
             c->max_connections);
  FUZZ_CHECK(c->read_timeout_ms >= 100 && c->read_timeout_ms <= 3600 * 1000, "read timeout %d",
             c->read_timeout_ms);
  FUZZ_CHECK(c->rescan_interval_s >= 1 && c->rescan_interval_s <= 3600, "rescan %d",
             c->rescan_interval_s);
  FUZZ_CHECK(c->max_batch_age_s >= 60 && c->max_batch_age_s <= 86400 * 365, "max batch age %d",
             c->max_batch_age_s);
}

static void check_value_parsers(const char *s) {
  uint64_t size;
  if (config_parse_size(s, &size) == 0) {
    const char *d = s + strspn(s, " \t\n\v\f\r"); /* strtoull skips leading space */
    FUZZ_CHECK(d[0] >= '0' && d[0] <= '9', "size \"%s\" accepted", s);
  }
  int64_t ms;
  if (config_parse_duration_ms(s, &ms) == 0)
    FUZZ_CHECK(ms >= 0, "duration \"%s\" gave %lld ms", s, (long long)ms);
  uid_t uids[CONFIG_MAX_UIDS];
  size_t n = 0;
  if (config_parse_uids(s, uids, CONFIG_MAX_UIDS, &n) == 0)
    FUZZ_CHECK(n >= 1 && n <= CONFIG_MAX_UIDS, "%zu uids from \"%s\"", n, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (config_fd < 0) {
    config_fd = memfd_create("fuzz_config.ini", MFD_CLOEXEC);
    FUZZ_CHECK(config_fd >= 0, "memfd_create failed");
    snprintf(config_path, sizeof config_path, "/proc/self/fd/%d", config_fd);
  }
  FUZZ_CHECK(ftruncate(config_fd, 0) == 0, "ftruncate failed");
  FUZZ_CHECK(pwrite(config_fd, data, size, 0) == (ssize_t)size, "pwrite failed");

  char *argv[] = {"pushprof-sidecar", "--config", config_path, NULL};
  sidecar_config c;
  char err[1024] = "";
  int rc = config_load(&c, 3, argv, err, sizeof err);
  FUZZ_CHECK(rc == CONFIG_OK || rc == CONFIG_ERROR, "config_load returned %d", rc);
  if (rc == CONFIG_OK)
    check_loaded(&c);
  else
    FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "error must be one line: \"%s\"", err);
  config_free(&c);

  /* Each line (up to 32 of them) through the value parsers. */
  const uint8_t *p = data, *end = data + size;
  for (int i = 0; i < 32 && p < end; i++) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = (size_t)((nl ? nl : end) - p);
    char *s = strndup((const char *)p, len);
    FUZZ_CHECK(s != NULL, "out of memory");
    check_value_parsers(s);
    free(s);
    p = nl ? nl + 1 : end;
  }
  return 0;
}
