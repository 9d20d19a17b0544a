/* The public API's contract on the static library: start/stop return codes,
 * the profile written by pushprof_stop, strerror and version. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_test.h"
#include "pushprof.h"

static void spin_cpu(double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
  volatile uint64_t acc = 0;
  for (;;) {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 >= end)
      break;
    for (int i = 0; i < 10000; i++)
      acc += (uint64_t)i;
  }
}

static void test_api_stop_before_start_says_not_started(void) {
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
  PP_CHECK_INT(pushprof_thread_register(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_rejects_invalid_options_and_stays_off(void) {
  pushprof_options o = {.hz = 100000, .output_path = "/tmp/never"};
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  o = (pushprof_options){.signal_number = SIGKILL, .output_path = "/tmp/never"};
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  o = (pushprof_options){.hz = 100}; /* nowhere to write */
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_start_stop_writes_the_profile(void) {
  char tmpl[] = "/tmp/pushprof-test-api.XXXXXX";
  char path[128];
  PP_CHECK(mkdtemp(tmpl) != NULL);
  snprintf(path, sizeof path, "%s/p-%%p.pb.gz", tmpl);
  pushprof_options o = {.hz = 200, .output_path = path};
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EALREADY);
  PP_CHECK_INT(pushprof_thread_register(), ==, 0);
  PP_CHECK_INT(pushprof_thread_register(), ==, 0); /* idempotent */
  spin_cpu(0.1);
  PP_CHECK_INT(pushprof_stop(), ==, 0);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
  char written[160];
  snprintf(written, sizeof written, "%s/p-%ld.pb.gz", tmpl, (long)getpid());
  struct stat st;
  PP_CHECK_INT(stat(written, &st), ==, 0);
  PP_CHECK(st.st_size > 20);
  FILE *f = fopen(written, "rb");
  unsigned char magic[2] = {0, 0};
  PP_CHECK(f != NULL);
  if (f) {
    PP_CHECK_INT(fread(magic, 1, 2, f), ==, 2);
    fclose(f);
  }
  PP_CHECK_INT(magic[0], ==, 0x1f); /* gzip */
  PP_CHECK_INT(magic[1], ==, 0x8b);
  unlink(written);
  rmdir(tmpl);
}

static void test_api_can_start_again_after_stop(void) {
  char tmpl[] = "/tmp/pushprof-test-api2.XXXXXX";
  char path[128], written[160];
  PP_CHECK(mkdtemp(tmpl) != NULL);
  snprintf(path, sizeof path, "%s/again.pb.gz", tmpl);
  snprintf(written, sizeof written, "%s", path);
  pushprof_options o = {.hz = 100, .output_path = path};
  for (int round = 0; round < 2; round++) {
    unlink(written);
    PP_CHECK_INT(pushprof_start(&o), ==, 0);
    spin_cpu(0.05);
    PP_CHECK_INT(pushprof_stop(), ==, 0);
    struct stat st;
    PP_CHECK_INT(stat(written, &st), ==, 0);
  }
  unlink(written);
  rmdir(tmpl);
}

/* Child mode (test_api --exit-child PATH): profile, then exit(7) with the
 * profile still running, so the exit handler writes it. */
static int exit_child(const char *path) {
  pushprof_options o = {.hz = 100, .output_path = path};
  if (pushprof_start(&o) != 0)
    return 99;
  spin_cpu(0.05);
  exit(7);
}

/* Standalone mode: a process that exits while profiling writes its profile
 * from the exit handler and keeps its exit status. A fresh process
 * (posix_spawn of this binary, no fork handlers) runs the child mode. */
static void test_api_exit_writes_the_profile_and_keeps_the_status(void) {
  char tmpl[] = "/tmp/pushprof-test-api3.XXXXXX";
  char path[128], written[160];
  PP_CHECK(mkdtemp(tmpl) != NULL);
  snprintf(path, sizeof path, "%s/exit-%%p.pb.gz", tmpl);
  char *argv[] = {"test_api", "--exit-child", path, NULL};
  pid_t child = -1;
  PP_CHECK_INT(posix_spawn(&child, "/proc/self/exe", NULL, NULL, argv, environ), ==, 0);
  int status = 0;
  PP_CHECK_INT(waitpid(child, &status, 0), ==, child);
  PP_CHECK(WIFEXITED(status));
  PP_CHECK_INT(WEXITSTATUS(status), ==, 7);
  snprintf(written, sizeof written, "%s/exit-%ld.pb.gz", tmpl, (long)child);
  struct stat st;
  PP_CHECK_INT(stat(written, &st), ==, 0);
  PP_CHECK(st.st_size > 20);
  unlink(written);
  rmdir(tmpl);
}

static void test_api_strerror_names_every_code(void) {
  for (int code = 0; code >= PUSHPROF_ESETUID; code--) {
    const char *s = pushprof_strerror(code);
    PP_CHECK(s != NULL && s[0] != '\0');
    PP_CHECK(strcmp(s, pushprof_strerror(-999)) != 0);
    for (int other = code + 1; other <= 0; other++)
      PP_CHECK(strcmp(s, pushprof_strerror(other)) != 0);
  }
  PP_CHECK(pushprof_strerror(12345) != NULL);
}

static void test_api_version_matches_the_header(void) {
  PP_CHECK_STR(pushprof_version(), PUSHPROF_VERSION_STRING);
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", PUSHPROF_VERSION_MAJOR, PUSHPROF_VERSION_MINOR,
           PUSHPROF_VERSION_PATCH);
  PP_CHECK_STR(pushprof_version(), v);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--exit-child") == 0)
    return exit_child(argv[2]);
  PP_RUN(test_api_stop_before_start_says_not_started);
  PP_RUN(test_api_rejects_invalid_options_and_stays_off);
  PP_RUN(test_api_start_stop_writes_the_profile);
  PP_RUN(test_api_can_start_again_after_stop);
  PP_RUN(test_api_exit_writes_the_profile_and_keeps_the_status);
  PP_RUN(test_api_strerror_names_every_code);
  PP_RUN(test_api_version_matches_the_header);
  PP_DONE();
}
