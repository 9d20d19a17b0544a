/* env_config: options over environment over defaults, and every rejection. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "env_config.h"
#include "pp_test.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *fake_getenv(void *ctx, const char *name) {
  const char *const *kv = ctx;
  for (; kv && kv[0]; kv += 2)
    if (strcmp(kv[0], name) == 0)
      return kv[1];
  return NULL;
}

static int resolve(const pushprof_options *o, const char *const *env, env_config *cfg, char *err,
                   size_t errlen) {
  return env_config_resolve(o, fake_getenv, (void *)env, "myprog", cfg, err, errlen);
}

static void test_env_config_defaults_without_environment(void) {
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(NULL, NULL, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.hz, ==, 100);
  PP_CHECK_INT(c.signo, ==, SIGPROF);
  PP_CHECK_STR(c.service, "myprog");
  PP_CHECK_STR(c.output_path, "");
  PP_CHECK_STR(c.socket_path, "");
  PP_CHECK_INT(c.upload_period_s, ==, 10);
  PP_CHECK_INT(c.exit_timeout_ms, ==, 2000);
  PP_CHECK_INT(c.backlog, ==, 6);
  PP_CHECK_INT(c.handle_term_signals, ==, 0);
}

static void test_env_config_reads_every_variable(void) {
  const char *env[] = {"PUSHPROF_HZ",
                       "250",
                       "PUSHPROF_SIGNAL",
                       "SIGRTMIN+3",
                       "PUSHPROF_SERVICE",
                       "api",
                       "PUSHPROF_OUTPUT",
                       "/tmp/p-%p.pb.gz",
                       "PUSHPROF_SOCKET",
                       "/run/pp.sock",
                       "PUSHPROF_UPLOAD_PERIOD",
                       "30",
                       "PUSHPROF_EXIT_TIMEOUT_MS",
                       "500",
                       "PUSHPROF_SPOOL_DIR",
                       "/var/spool/pp",
                       "PUSHPROF_BACKLOG",
                       "3",
                       NULL};
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(NULL, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.hz, ==, 250);
  PP_CHECK_INT(c.signo, ==, SIGRTMIN + 3);
  PP_CHECK_STR(c.service, "api");
  PP_CHECK_STR(c.output_path, "/tmp/p-%p.pb.gz");
  PP_CHECK_STR(c.socket_path, "/run/pp.sock");
  PP_CHECK_INT(c.upload_period_s, ==, 30);
  PP_CHECK_INT(c.exit_timeout_ms, ==, 500);
  PP_CHECK_STR(c.spool_dir, "/var/spool/pp");
  PP_CHECK_INT(c.backlog, ==, 3);
}

static void test_env_config_options_override_environment(void) {
  const char *env[] = {"PUSHPROF_HZ",
                       "250",
                       "PUSHPROF_SERVICE",
                       "fromenv",
                       "PUSHPROF_OUTPUT",
                       "/env",
                       "PUSHPROF_SIGNAL",
                       "SIGUSR1",
                       NULL};
  pushprof_options o = {.hz = 50,
                        .service = "fromopts",
                        .output_path = "/opts",
                        .signal_number = SIGUSR2,
                        .handle_term_signals = 1};
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(&o, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.hz, ==, 50);
  PP_CHECK_STR(c.service, "fromopts");
  PP_CHECK_STR(c.output_path, "/opts");
  PP_CHECK_INT(c.signo, ==, SIGUSR2);
  PP_CHECK_INT(c.handle_term_signals, ==, 1);
}

static void test_env_config_empty_values_count_as_unset(void) {
  const char *env[] = {"PUSHPROF_HZ", "", "PUSHPROF_OUTPUT", "", "PUSHPROF_SERVICE", "", NULL};
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(NULL, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.hz, ==, 100);
  PP_CHECK_STR(c.output_path, "");
  PP_CHECK_STR(c.service, "myprog");
}

static void test_env_config_service_falls_back_to_otel(void) {
  const char *otel[] = {"OTEL_SERVICE_NAME", "checkout", NULL};
  const char *both[] = {"OTEL_SERVICE_NAME", "checkout", "PUSHPROF_SERVICE", "pp", NULL};
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(NULL, otel, &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.service, "checkout");
  PP_CHECK_INT(resolve(NULL, both, &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.service, "pp");
}

/* Each bad value: ECONFIG and one line naming the variable, value and range. */
static void expect_env_rejected(const char *name, const char *value, const char *accepted_part) {
  const char *env[] = {name, value, NULL};
  env_config c;
  char err[512];
  int rc = resolve(NULL, env, &c, err, sizeof err);
  PP_CHECK_INT(rc, ==, PUSHPROF_ECONFIG);
  if (!strstr(err, name) || !strstr(err, value) || !strstr(err, accepted_part) ||
      strchr(err, '\n')) {
    fprintf(stderr, "  for %s=%s: error line \"%s\"\n", name, value, err);
    pp_test_failures++;
  }
}

static void test_env_config_rejects_bad_values_with_one_line(void) {
  expect_env_rejected("PUSHPROF_HZ", "0", "1..1000");
  expect_env_rejected("PUSHPROF_HZ", "1001", "1..1000");
  expect_env_rejected("PUSHPROF_HZ", "-5", "1..1000");
  expect_env_rejected("PUSHPROF_HZ", "abc", "1..1000");
  expect_env_rejected("PUSHPROF_HZ", "100x", "1..1000");
  expect_env_rejected("PUSHPROF_HZ", " 100", "1..1000");
  expect_env_rejected("PUSHPROF_HZ", "99999999999999999999", "1..1000");
  expect_env_rejected("PUSHPROF_SIGNAL", "SIGKILL", "SIGRTMIN+n");
  expect_env_rejected("PUSHPROF_SIGNAL", "SIGSEGV", "SIGRTMIN+n");
  expect_env_rejected("PUSHPROF_SIGNAL", "9", "SIGRTMIN+n");
  expect_env_rejected("PUSHPROF_SIGNAL", "SIGRTMIN+999", "SIGRTMIN+n");
  expect_env_rejected("PUSHPROF_SIGNAL", "SIGRTMIN-1", "SIGRTMIN+n");
  expect_env_rejected("PUSHPROF_SIGNAL", "bogus", "SIGRTMIN+n");
  expect_env_rejected("PUSHPROF_OUTPUT", "/tmp/x-%d", "%p");
  expect_env_rejected("PUSHPROF_OUTPUT", "/tmp/x-%", "%p");
  expect_env_rejected("PUSHPROF_SERVICE", "bad\tname", "1..128 bytes");
  expect_env_rejected("PUSHPROF_UPLOAD_PERIOD", "0", "1..3600");
  expect_env_rejected("PUSHPROF_EXIT_TIMEOUT_MS", "60001", "1..60000");
  expect_env_rejected("PUSHPROF_BACKLOG", "0", "1..1000");
  char longsock[200];
  memset(longsock, 's', sizeof longsock - 1);
  longsock[sizeof longsock - 1] = '\0';
  expect_env_rejected("PUSHPROF_SOCKET", longsock, "107 bytes");
  char longsvc[200];
  memset(longsvc, 'v', sizeof longsvc - 1);
  longsvc[sizeof longsvc - 1] = '\0';
  expect_env_rejected("PUSHPROF_SERVICE", longsvc, "1..128 bytes");
}

static void test_env_config_rejects_bad_options_with_einval(void) {
  env_config c;
  char err[512];
  pushprof_options o = {.hz = 5000};
  PP_CHECK_INT(resolve(&o, NULL, &c, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "pushprof_options.hz") != NULL);
  o = (pushprof_options){.signal_number = SIGSEGV};
  PP_CHECK_INT(resolve(&o, NULL, &c, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "pushprof_options.signal_number") != NULL);
  o = (pushprof_options){.output_path = "/x/%q"};
  PP_CHECK_INT(resolve(&o, NULL, &c, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "pushprof_options.output_path") != NULL);
  /* A valid option does not hide an invalid variable behind it. */
  const char *env[] = {"PUSHPROF_SIGNAL", "SIGKILL", NULL};
  o = (pushprof_options){.hz = 10};
  PP_CHECK_INT(resolve(&o, env, &c, err, sizeof err), ==, PUSHPROF_ECONFIG);
}

static void test_env_config_parses_signal_names_and_numbers(void) {
  PP_CHECK_INT(env_config_parse_signal("SIGPROF"), ==, SIGPROF);
  PP_CHECK_INT(env_config_parse_signal("prof"), ==, SIGPROF);
  PP_CHECK_INT(env_config_parse_signal("SIGVTALRM"), ==, SIGVTALRM);
  PP_CHECK_INT(env_config_parse_signal("usr2"), ==, SIGUSR2);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMIN"), ==, SIGRTMIN);
  PP_CHECK_INT(env_config_parse_signal("RTMIN+0"), ==, SIGRTMIN);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMIN+3"), ==, SIGRTMIN + 3);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMAX-2"), ==, SIGRTMAX - 2);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMAX"), ==, SIGRTMAX);
  char num[16];
  snprintf(num, sizeof num, "%d", SIGPROF);
  PP_CHECK_INT(env_config_parse_signal(num), ==, SIGPROF);
  snprintf(num, sizeof num, "%d", SIGRTMIN + 1);
  PP_CHECK_INT(env_config_parse_signal(num), ==, SIGRTMIN + 1);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMAX+1"), ==, -1);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMIN+"), ==, -1);
  PP_CHECK_INT(env_config_parse_signal("SIGRTMIN+1x"), ==, -1);
  PP_CHECK_INT(env_config_parse_signal("SIGINT"), ==, -1);
  PP_CHECK_INT(env_config_parse_signal("0"), ==, -1);
  PP_CHECK_INT(env_config_parse_signal(""), ==, -1);
  PP_CHECK_INT(env_config_parse_signal(NULL), ==, -1);
}

static void test_env_config_expands_pid_and_percent(void) {
  char out[64];
  PP_CHECK_INT(env_config_expand_output("/tmp/p-%p.pb.gz", 4242, NULL, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "/tmp/p-4242.pb.gz");
  PP_CHECK_INT(env_config_expand_output("%p-%p-100%%", 7, NULL, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "7-7-100%");
  PP_CHECK_INT(env_config_expand_output("plain", 7, NULL, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "plain");
  PP_CHECK_INT(env_config_expand_output("/x/%s", 7, NULL, out, sizeof out), ==, -1);
  PP_CHECK_INT(env_config_expand_output("/x/%", 7, NULL, out, sizeof out), ==, -1);
  /* Exactly fitting, and one byte too long. */
  PP_CHECK_INT(env_config_expand_output("ab%p", 12, NULL, out, 5), ==, 0);
  PP_CHECK_STR(out, "ab12");
  PP_CHECK_INT(env_config_expand_output("ab%p", 123, NULL, out, 5), ==, -1);
}

/* The tag an exec'd program's file takes, and which templates hold %p. */
static void test_env_config_tags_and_finds_pid(void) {
  char p[32] = "/tmp/p-7.pb.gz";
  PP_CHECK_INT(env_config_output_tag(p, "exec1", sizeof p), ==, 0);
  PP_CHECK_STR(p, "/tmp/p-7.exec1.pb.gz");
  snprintf(p, sizeof p, "/tmp/p-7.pprof");
  PP_CHECK_INT(env_config_output_tag(p, "exec2", sizeof p), ==, 0);
  PP_CHECK_STR(p, "/tmp/p-7.exec2.pprof");
  snprintf(p, sizeof p, "/tmp/p-7");
  PP_CHECK_INT(env_config_output_tag(p, "exec1", sizeof p), ==, 0);
  PP_CHECK_STR(p, "/tmp/p-7.exec1");
  char small[16] = "/tmp/p-7.pb.gz";
  PP_CHECK_INT(env_config_output_tag(small, "exec1", sizeof small), ==, -1);
  PP_CHECK_STR(small, "/tmp/p-7.pb.gz");
  PP_CHECK_INT(env_config_output_has_pid("/tmp/p-%p.pb.gz"), ==, 1);
  PP_CHECK_INT(env_config_output_has_pid("/tmp/p-%%p.pb.gz"), ==, 0);
  PP_CHECK_INT(env_config_output_has_pid("/tmp/p-%t-%p"), ==, 1);
  PP_CHECK_INT(env_config_output_has_pid("/tmp/p.pb.gz%"), ==, 0);
}

static void test_env_config_profiles_and_heap_rate(void) {
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(NULL, NULL, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.profiles, ==, PUSHPROF_PROFILE_CPU);
  PP_CHECK_INT(c.heap_rate, ==, 524288);
  const char *env[] = {"PUSHPROF_PROFILES", " heap , cpu ", "PUSHPROF_HEAP_RATE", "4096", NULL};
  PP_CHECK_INT(resolve(NULL, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.profiles, ==, PUSHPROF_PROFILE_CPU | PUSHPROF_PROFILE_HEAP);
  PP_CHECK_INT(c.heap_rate, ==, 4096);
  PP_CHECK_INT(env_config_parse_profiles("heap"), ==, PUSHPROF_PROFILE_HEAP);
  const char *bad[] = {"", ",", "cpu,", "gpu", "CPU", "cpu heap", NULL};
  for (int i = 0; bad[i]; i++)
    PP_CHECK_INT(env_config_parse_profiles(bad[i]), ==, 0);
  const char *benv[] = {"PUSHPROF_PROFILES", "cpu,gpu", NULL};
  PP_CHECK_INT(resolve(NULL, benv, &c, err, sizeof err), ==, PUSHPROF_ECONFIG);
  PP_CHECK(strstr(err, "PUSHPROF_PROFILES=\"cpu,gpu\"") && strstr(err, "cpu, heap"));
  const char *rates[] = {"0", "-1", "1x", "1099511627777", "+5", NULL};
  for (int i = 0; rates[i]; i++) {
    const char *renv[] = {"PUSHPROF_HEAP_RATE", rates[i], NULL};
    PP_CHECK_INT(resolve(NULL, renv, &c, err, sizeof err), ==, PUSHPROF_ECONFIG);
    PP_CHECK(strstr(err, "PUSHPROF_HEAP_RATE") != NULL);
  }
  /* Options override the environment; a bad option is EINVAL. */
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.profiles = "heap";
  o.heap_rate = 100;
  PP_CHECK_INT(resolve(&o, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.profiles, ==, PUSHPROF_PROFILE_HEAP);
  PP_CHECK_INT(c.heap_rate, ==, 100);
  o.heap_rate = -3;
  PP_CHECK_INT(resolve(&o, NULL, &c, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "pushprof_options.heap_rate") != NULL);
}

static void test_env_config_output_per_profile_type(void) {
  char out[128];
  PP_CHECK_INT(env_config_expand_output("/t/p-%t-%p.pb.gz", 9, "heap", out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "/t/p-heap-9.pb.gz");
  enum {
    CPU = PUSHPROF_PROFILE_CPU,
    HEAP = PUSHPROF_PROFILE_HEAP,
    OFFCPU = PUSHPROF_PROFILE_OFFCPU,
    LOCK = PUSHPROF_PROFILE_LOCK,
  };
  static const struct {
    const char *tmpl;
    unsigned on, type;
    const char *want;
  } cases[] = {
      {"/t/p-%t.pb.gz", CPU | HEAP, CPU, "/t/p-cpu.pb.gz"},
      /* Without %t: cpu keeps the path, heap gets .heap before the extension. */
      {"/t/p-%p.pb.gz", CPU | HEAP, CPU, "/t/p-9.pb.gz"},
      {"/t/p-%p.pb.gz", CPU | HEAP, HEAP, "/t/p-9.heap.pb.gz"},
      {"/t/prof.pprof", CPU | HEAP, HEAP, "/t/prof.heap.pprof"},
      {"/t/prof", CPU | HEAP, HEAP, "/t/prof.heap"},
      /* Heap alone: the path as given. */
      {"/t/prof.pb.gz", HEAP, HEAP, "/t/prof.pb.gz"},
      /* Waits alone: the lowest type on (offcpu) keeps the path. */
      {"/t/w.pb.gz", OFFCPU | LOCK, OFFCPU, "/t/w.pb.gz"},
      {"/t/w.pb.gz", OFFCPU | LOCK, LOCK, "/t/w.lock.pb.gz"},
      {"/t/w-%t.pb.gz", CPU | OFFCPU | LOCK, OFFCPU, "/t/w-offcpu.pb.gz"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    PP_CHECK_INT(
        env_config_output_for(cases[i].tmpl, 9, cases[i].on, cases[i].type, out, sizeof out), ==,
        0);
    PP_CHECK_STR(out, cases[i].want);
  }
  PP_CHECK_INT(env_config_output_for("/t/prof", 9, CPU | HEAP, HEAP, out, 12), ==, -1);
}

static void test_env_config_wait_profiles_and_rates(void) {
  env_config c;
  char err[256];
  PP_CHECK_INT(resolve(NULL, NULL, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.offcpu_rate, ==, 1000000);
  PP_CHECK_INT(c.lock_rate, ==, 1000000);
  const char *env[] = {"PUSHPROF_PROFILES",
                       "lock,offcpu, cpu",
                       "PUSHPROF_OFFCPU_RATE",
                       "250000",
                       "PUSHPROF_LOCK_RATE",
                       "10000",
                       NULL};
  PP_CHECK_INT(resolve(NULL, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.profiles, ==,
               PUSHPROF_PROFILE_CPU | PUSHPROF_PROFILE_OFFCPU | PUSHPROF_PROFILE_LOCK);
  PP_CHECK_INT(c.offcpu_rate, ==, 250000);
  PP_CHECK_INT(c.lock_rate, ==, 10000);
  PP_CHECK_STR(env_config_profile_name(PUSHPROF_PROFILE_OFFCPU), "offcpu");
  PP_CHECK_STR(env_config_profile_name(PUSHPROF_PROFILE_LOCK), "lock");
  const char *rates[] = {"0", "-1", "1ms", "3600000000001", "+5", NULL};
  for (int i = 0; rates[i]; i++) {
    const char *renv[] = {"PUSHPROF_LOCK_RATE", rates[i], NULL};
    PP_CHECK_INT(resolve(NULL, renv, &c, err, sizeof err), ==, PUSHPROF_ECONFIG);
    PP_CHECK(strstr(err, "PUSHPROF_LOCK_RATE") != NULL && strstr(err, "ns") != NULL);
  }
  const char *benv[] = {"PUSHPROF_PROFILES", "cpu,offCPU", NULL};
  PP_CHECK_INT(resolve(NULL, benv, &c, err, sizeof err), ==, PUSHPROF_ECONFIG);
  PP_CHECK(strstr(err, "offcpu, lock") != NULL);
}

static void test_env_config_default_service_is_sanitised(void) {
  env_config c;
  char err[256];
  char longname[300];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  PP_CHECK_INT(env_config_resolve(NULL, fake_getenv, NULL, longname, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(strlen(c.service), ==, ENV_CONFIG_SERVICE_MAX);
  PP_CHECK_INT(env_config_resolve(NULL, fake_getenv, NULL, "a\nb", &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.service, "a_b");
  PP_CHECK_INT(env_config_resolve(NULL, fake_getenv, NULL, NULL, &c, err, sizeof err), ==, 0);
  PP_CHECK_STR(c.service, "unknown");
}

/* The process labels: OTEL_RESOURCE_ATTRIBUTES (%-decoded) then
 * PUSHPROF_LABELS, whose keys replace the same keys; packed "k\0v\0". */
static void test_env_config_reads_process_labels(void) {
  const char *env[] = {"OTEL_RESOURCE_ATTRIBUTES",
                       "service.namespace=shop, deployment.environment=prod%2Ceu ,k8s.pod.name=p-1",
                       "PUSHPROF_LABELS", "deployment.environment=staging,,team = core", NULL};
  env_config c;
  char err[512];
  PP_CHECK_INT(resolve(NULL, env, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.nlabels, ==, 4);
  static const char want[] = "service.namespace\0shop\0deployment.environment\0staging\0"
                             "k8s.pod.name\0p-1\0team\0core\0";
  PP_CHECK_INT(c.labels_len, ==, sizeof want - 1);
  PP_CHECK(memcmp(c.labels, want, sizeof want - 1) == 0);
  /* Without PUSHPROF_LABELS the OTel value keeps its decoded comma. */
  const char *otel_only[] = {"OTEL_RESOURCE_ATTRIBUTES", "env=prod%2Ceu", NULL};
  PP_CHECK_INT(resolve(NULL, otel_only, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.nlabels, ==, 1);
  PP_CHECK(memcmp(c.labels, "env\0prod,eu\0", 12) == 0);
  PP_CHECK_INT(resolve(NULL, NULL, &c, err, sizeof err), ==, 0);
  PP_CHECK_INT(c.nlabels, ==, 0);
  PP_CHECK_INT(c.labels_len, ==, 0);
}

/* Long values are quoted only in part: the line names the variable. */
static void expect_long_rejected(const char *name, const char *value, const char *part) {
  const char *env[] = {name, value, NULL};
  env_config c;
  char err[512];
  PP_CHECK_INT(resolve(NULL, env, &c, err, sizeof err), ==, PUSHPROF_ECONFIG);
  PP_CHECK(strstr(err, name) && strstr(err, part) && !strchr(err, '\n'));
}

static void test_env_config_rejects_bad_labels(void) {
  expect_env_rejected("PUSHPROF_LABELS", "novalue", "key=value");
  expect_env_rejected("PUSHPROF_LABELS", "=v", "key=value");
  expect_env_rejected("PUSHPROF_LABELS", "k=a\tb", "key=value");
  expect_env_rejected("OTEL_RESOURCE_ATTRIBUTES", "k=%zz", "%-escapes");
  expect_env_rejected("OTEL_RESOURCE_ATTRIBUTES", "k=%4", "%-escapes");
  expect_env_rejected("OTEL_RESOURCE_ATTRIBUTES", "k=%0a", "%-escapes"); /* a decoded newline */
  static char many[65 * 8];
  size_t o = 0;
  for (int i = 0; i < 65; i++)
    o += (size_t)snprintf(many + o, sizeof many - o, "%sk%d=v", i ? "," : "", i);
  expect_long_rejected("PUSHPROF_LABELS", many, "more than 64 labels");
  static char longval[1100];
  memcpy(longval, "k=", 2);
  memset(longval + 2, 'v', sizeof longval - 3);
  expect_long_rejected("PUSHPROF_LABELS", longval, "longer than 1024 bytes");
  /* 8 labels of 1000-byte values: each is fine, together past 8 KiB. */
  static char big[9 * 1010];
  o = 0;
  for (int i = 0; i < 9; i++) {
    o += (size_t)snprintf(big + o, sizeof big - o, "%sk%d=", i ? "," : "", i);
    memset(big + o, 'x', 1000);
    o += 1000;
    big[o] = 0;
  }
  expect_long_rejected("PUSHPROF_LABELS", big, "more than 8192 bytes");
}

int main(void) {
  PP_RUN(test_env_config_defaults_without_environment);
  PP_RUN(test_env_config_reads_every_variable);
  PP_RUN(test_env_config_options_override_environment);
  PP_RUN(test_env_config_empty_values_count_as_unset);
  PP_RUN(test_env_config_service_falls_back_to_otel);
  PP_RUN(test_env_config_rejects_bad_values_with_one_line);
  PP_RUN(test_env_config_rejects_bad_options_with_einval);
  PP_RUN(test_env_config_parses_signal_names_and_numbers);
  PP_RUN(test_env_config_expands_pid_and_percent);
  PP_RUN(test_env_config_tags_and_finds_pid);
  PP_RUN(test_env_config_profiles_and_heap_rate);
  PP_RUN(test_env_config_wait_profiles_and_rates);
  PP_RUN(test_env_config_output_per_profile_type);
  PP_RUN(test_env_config_default_service_is_sanitised);
  PP_RUN(test_env_config_reads_process_labels);
  PP_RUN(test_env_config_rejects_bad_labels);
  PP_DONE();
}
