/* Sidecar settings: defaults, INI file, flags overriding the file, value
 * parsing and the one-line errors for bad values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "pp_test.h"

static char ini_path[256];

static void write_ini(const char *text) {
  FILE *f = fopen(ini_path, "w");
  PP_CHECK(f != NULL);
  if (!f)
    return;
  fputs(text, f);
  fclose(f);
}

static int load(sidecar_config *c, char *err, size_t errlen, int argc, const char **argv) {
  return config_load(c, argc, (char **)argv, err, errlen);
}

static void test_config_defaults(void) {
  sidecar_config c;
  char err[512] = "";
  const char *argv[] = {"pushprof-sidecar", NULL};
  unsetenv("PUSHPROF_SOCKET");
  setenv("NODE_NAME", "node-a", 1);
  PP_CHECK_INT(load(&c, err, sizeof err, 1, argv), ==, CONFIG_OK);
  PP_CHECK_STR(c.socket_path, CONFIG_DEFAULT_SOCKET);
  PP_CHECK_STR(c.node_name, "node-a");
  PP_CHECK_INT(c.batch_window_s, ==, 60);
  PP_CHECK_INT(c.max_spool_bytes, ==, 512ull << 20);
  PP_CHECK_INT(c.max_frame_bytes, ==, 16u << 20);
  PP_CHECK_INT(c.max_connections, ==, 256);
  PP_CHECK_INT(c.read_timeout_ms, ==, 10000);
  PP_CHECK_INT(c.n_allow_uids, ==, 0);
  PP_CHECK(!c.spool_drop_oldest);
  PP_CHECK_STR(c.metrics_addr, "");
  config_free(&c);
  unsetenv("NODE_NAME");
}

static void test_config_env_socket_and_hostname(void) {
  sidecar_config c;
  char err[512] = "";
  const char *argv[] = {"pushprof-sidecar", NULL};
  setenv("PUSHPROF_SOCKET", "/tmp/x.sock", 1);
  unsetenv("NODE_NAME");
  char host[256] = "";
  PP_CHECK_INT(gethostname(host, sizeof host - 1), ==, 0);
  PP_CHECK_INT(load(&c, err, sizeof err, 1, argv), ==, CONFIG_OK);
  PP_CHECK_STR(c.socket_path, "/tmp/x.sock");
  PP_CHECK_STR(c.node_name, host);
  config_free(&c);
  unsetenv("PUSHPROF_SOCKET");
}

static void test_config_file_then_flags_override(void) {
  write_ini("; pushprof sidecar\n"
            "socket = /tmp/from-file.sock\n"
            "export_to = file:///tmp/out\n"
            "dump_duration_seconds = 30\n"
            "max_spool_bytes = 64MiB\n"
            "spool_drop_oldest = yes\n"
            "[sidecar]\n"
            "bucket_subdirectory = prod\n"
            "max_dumps_retained = 7\n"
            "allow_uid = 0, 1000\n"
            "read_timeout = 500ms\n");
  sidecar_config c;
  char err[512] = "";
  const char *argv[] = {"pushprof-sidecar",
                        "--config",
                        ini_path,
                        "--batch-window",
                        "5",
                        "--socket=/tmp/from-flag.sock",
                        NULL};
  PP_CHECK_INT(load(&c, err, sizeof err, 6, argv), ==, CONFIG_OK);
  PP_CHECK_STR(err, "");
  PP_CHECK_STR(c.socket_path, "/tmp/from-flag.sock");
  PP_CHECK_STR(c.export_url, "file:///tmp/out");
  PP_CHECK_INT(c.batch_window_s, ==, 5);
  PP_CHECK_INT(c.max_spool_bytes, ==, 64ull << 20);
  PP_CHECK(c.spool_drop_oldest);
  PP_CHECK_STR(c.bucket_subdir, "prod");
  PP_CHECK_INT(c.max_dumps_retained, ==, 7);
  PP_CHECK_INT(c.n_allow_uids, ==, 2);
  PP_CHECK_INT(c.allow_uids[1], ==, 1000);
  PP_CHECK_INT(c.read_timeout_ms, ==, 500);
  config_free(&c);
}

static void expect_error(const char **argv, int argc, const char *must_contain) {
  sidecar_config c;
  char err[512] = "";
  PP_CHECK_INT(load(&c, err, sizeof err, argc, argv), ==, CONFIG_ERROR);
  if (!strstr(err, must_contain)) {
    fprintf(stderr, "error line \"%s\" lacks \"%s\"\n", err, must_contain);
    pp_test_failures++;
  }
  PP_CHECK(strchr(err, '\n') == NULL);
  config_free(&c);
}

static void test_config_bad_values_name_the_flag(void) {
  const char *a1[] = {"x", "--batch-window", "soon", NULL};
  expect_error(a1, 3, "--batch-window");
  const char *a2[] = {"x", "--max-spool-bytes", "12 parsecs", NULL};
  expect_error(a2, 3, "MiB");
  const char *a3[] = {"x", "--max-connections", "0", NULL};
  expect_error(a3, 3, "--max-connections");
  const char *a4[] = {"x", "--no-such-flag", NULL};
  expect_error(a4, 2, "--no-such-flag");
  const char *a5[] = {"x", "--allow-uid", "no-such-user-xyz", NULL};
  expect_error(a5, 3, "--allow-uid");
  const char *a6[] = {"x", "--metrics-addr", "9464", NULL};
  expect_error(a6, 3, "HOST:PORT");
  const char *a7[] = {"x", "--config", "/nonexistent/pushprof.ini", NULL};
  expect_error(a7, 3, "/nonexistent/pushprof.ini");
  const char *a8[] = {"x", "--spool-drop-oldest=maybe", NULL};
  expect_error(a8, 2, "boolean");
  const char *a9[] = {"x", "--log-level", "loud", NULL};
  expect_error(a9, 3,
               "--log-level: \"loud\" is not a log level; expected debug, info, warn or error");
}

/* --log-level: info by default; any case; the file's key, then the flag. */
static void test_config_log_level(void) {
  sidecar_config c;
  char err[512] = "";
  const char *a1[] = {"x", NULL};
  PP_CHECK_INT(load(&c, err, sizeof err, 1, a1), ==, CONFIG_OK);
  PP_CHECK_STR(c.log_level, "info");
  config_free(&c);
  write_ini("log_level = WARN\n");
  const char *a2[] = {"x", "--config", ini_path, NULL};
  PP_CHECK_INT(load(&c, err, sizeof err, 3, a2), ==, CONFIG_OK);
  enum log_level lv = LOG_DEBUG;
  PP_CHECK_INT(log_level_parse(c.log_level, &lv), ==, 0);
  PP_CHECK_INT(lv, ==, LOG_WARN);
  config_free(&c);
  const char *a3[] = {"x", "--config", ini_path, "--log-level", "debug", NULL};
  PP_CHECK_INT(load(&c, err, sizeof err, 5, a3), ==, CONFIG_OK);
  PP_CHECK_STR(c.log_level, "debug");
  config_free(&c);
  write_ini("log_level = verbose\n");
  expect_error(a2, 3, "log_level");
  PP_CHECK_INT(log_level_parse("Error", &lv), ==, 0);
  PP_CHECK_INT(lv, ==, LOG_ERROR);
  PP_CHECK_INT(log_level_parse("", &lv), ==, -1);
  PP_CHECK_INT(log_level_parse(NULL, &lv), ==, -1);
}

static void test_config_bad_file_key_names_the_key(void) {
  const char *argv[] = {"x", "--config", ini_path, NULL};
  write_ini("dump_duration_seconds = -3\n");
  expect_error(argv, 3, "dump_duration_seconds");
  write_ini("exprot_to = file:///x\n");
  expect_error(argv, 3, "exprot_to");
  write_ini("this line is not ini\n");
  expect_error(argv, 3, "line 1");
}

/* --export and --otlp-header repeat; the file may list several targets;
 * the first flag replaces the file's list, duplicates are refused. */
static void test_config_export_list_file_then_flags(void) {
  write_ini("export_to = file:///tmp/a  otlp+http://h:4318\n"
            "otlp_header = A=1\n"
            "otlp_header = Authorization=Bearer x y\n");
  sidecar_config c;
  char err[512] = "";
  const char *argv[] = {"x", "--config", ini_path, NULL};
  PP_CHECK_INT(load(&c, err, sizeof err, 3, argv), ==, CONFIG_OK);
  PP_CHECK_INT(c.exports.n, ==, 2);
  PP_CHECK_STR(c.export_url, "file:///tmp/a");
  PP_CHECK_STR(c.exports.v[1], "otlp+http://h:4318");
  PP_CHECK_INT(c.otlp_headers.n, ==, 2);
  PP_CHECK_STR(c.otlp_headers.v[1], "Authorization=Bearer x y");
  config_free(&c);
  const char *argv2[] = {"x", "--config", ini_path, "--export", "otlp", "--export=s3://b/p", NULL};
  PP_CHECK_INT(load(&c, err, sizeof err, 6, argv2), ==, CONFIG_OK);
  PP_CHECK_INT(c.exports.n, ==, 2);
  PP_CHECK_STR(c.exports.v[0], "otlp");
  PP_CHECK_STR(c.exports.v[1], "s3://b/p");
  PP_CHECK_INT(c.otlp_headers.n, ==, 2); /* no flag: the file's stay */
  config_free(&c);
  const char *argv3[] = {"x", "--export", "otlp", "--export", "otlp", NULL};
  expect_error(argv3, 5, "--export: \"otlp\" is given twice");
  const char *argv4[] = {"x", "--export", "localhost:4318", NULL};
  expect_error(argv4, 3, "not a URL");
}

static void test_config_parse_size_suffixes(void) {
  uint64_t v = 0;
  PP_CHECK_INT(config_parse_size("64MiB", &v), ==, 0);
  PP_CHECK_INT(v, ==, 64ull << 20);
  PP_CHECK_INT(config_parse_size("1G", &v), ==, 0);
  PP_CHECK_INT(v, ==, 1ull << 30);
  PP_CHECK_INT(config_parse_size("10KB", &v), ==, 0);
  PP_CHECK_INT(v, ==, 10000);
  PP_CHECK_INT(config_parse_size("123", &v), ==, 0);
  PP_CHECK_INT(v, ==, 123);
  PP_CHECK_INT(config_parse_size("-1", &v), ==, -1);
  PP_CHECK_INT(config_parse_size("", &v), ==, -1);
  PP_CHECK_INT(config_parse_size("5 TiB", &v), ==, -1);
  PP_CHECK_INT(config_parse_size("99999999999999999999GiB", &v), ==, -1);
  int64_t ms = 0;
  PP_CHECK_INT(config_parse_duration_ms("2m", &ms), ==, 0);
  PP_CHECK_INT(ms, ==, 120000);
  PP_CHECK_INT(config_parse_duration_ms("250ms", &ms), ==, 0);
  PP_CHECK_INT(ms, ==, 250);
  PP_CHECK_INT(config_parse_duration_ms("1.5", &ms), ==, -1);
  uid_t uids[4];
  size_t n = 0;
  PP_CHECK_INT(config_parse_uids("root,42", uids, 4, &n), ==, 0);
  PP_CHECK_INT(n, ==, 2);
  PP_CHECK_INT(uids[0], ==, 0);
  PP_CHECK_INT(uids[1], ==, 42);
  PP_CHECK_INT(config_parse_uids("1,,2", uids, 4, &n), ==, -1);
  PP_CHECK_INT(config_parse_uids("1,2,3,4,5", uids, 4, &n), ==, -1);
}

int main(void) {
  snprintf(ini_path, sizeof ini_path, "/tmp/pushprof-test-config-%d.ini", (int)getpid());
  PP_RUN(test_config_defaults);
  PP_RUN(test_config_env_socket_and_hostname);
  PP_RUN(test_config_file_then_flags_override);
  PP_RUN(test_config_bad_values_name_the_flag);
  PP_RUN(test_config_log_level);
  PP_RUN(test_config_bad_file_key_names_the_key);
  PP_RUN(test_config_parse_size_suffixes);
  PP_RUN(test_config_export_list_file_then_flags);
  unlink(ini_path);
  PP_DONE();
}
