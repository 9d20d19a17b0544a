/* Unit tests for sidecar/main.c, run as the pushprof-sidecar process:
 * exit codes for --help, bad flags and a bad --export; one sidecar per
 * spool; SIGHUP ignored and SIGTERM a clean stop. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch_test_util.h"
#include "pp_test.h"

static char dir[64], sock_path[128], sock2_path[128], spool_dir[128], out_url[128];
static char log_path[128];

/* Starts the sidecar with args (NULL-terminated) and stderr to log_path. */
static pid_t start(const char *const *args) {
  const char *argv[32] = {PUSHPROF_SIDECAR};
  size_t n = 1;
  for (; args[n - 1] && n < 31; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || null < 0 || dup2(fd, STDERR_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
      _exit(126);
    execv(PUSHPROF_SIDECAR, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* Its exit status, or -1 if it did not exit normally within 30 s. */
static int finish(pid_t pid) {
  for (int i = 0; i < 3000; i++) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (r < 0)
      return -1;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static int run(const char *const *args) {
  pid_t pid = start(args);
  return pid > 0 ? finish(pid) : -1;
}

/* What the last sidecar wrote to stderr (static buffer). */
static const char *log_text(void) {
  static char buf[1 << 16];
  int fd = open(log_path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  buf[n > 0 ? n : 0] = '\0';
  if (fd >= 0)
    close(fd);
  return buf;
}

static void test_main_exit_codes_for_help_and_bad_settings(void) {
  PP_CHECK_INT(run((const char *const[]){"--help", NULL}), ==, 0);
  PP_CHECK_INT(run((const char *const[]){"--bogus", NULL}), ==, 2);
  PP_CHECK(strstr(log_text(), "pushprof-sidecar: --bogus: unknown flag") != NULL);
  PP_CHECK_INT(run((const char *const[]){"--socket", sock_path, "--spool", spool_dir, "--export",
                                         "ftp://host/x", NULL}),
               ==, 2);
  PP_CHECK(strstr(log_text(), "pushprof-sidecar: --export ftp://host/x: ") != NULL);
}

static bool wait_for(const char *path) {
  struct stat st;
  for (int i = 0; i < 1000; i++) {
    if (stat(path, &st) == 0)
      return true;
    usleep(10000);
  }
  return false;
}

static void test_main_one_sidecar_per_spool_and_a_clean_stop(void) {
  pid_t first = start((const char *const[]){"--socket", sock_path, "--spool", spool_dir, "--export",
                                            out_url, NULL});
  PP_CHECK(first > 0);
  if (first <= 0)
    return;
  PP_CHECK(wait_for(sock_path));
  /* Its log is in a file of its own: the second sidecar's goes elsewhere. */
  char first_log[sizeof log_path];
  snprintf(first_log, sizeof first_log, "%s", log_path);
  snprintf(log_path, sizeof log_path, "%s/second.log", dir);
  PP_CHECK_INT(run((const char *const[]){"--socket", sock2_path, "--spool", spool_dir, "--export",
                                         out_url, NULL}),
               ==, 1);
  char want[256];
  snprintf(want, sizeof want,
           "pushprof-sidecar: --spool %s is in use by another pushprof-sidecar (pid %d,", spool_dir,
           (int)first);
  PP_CHECK(strstr(log_text(), want) != NULL);
  snprintf(log_path, sizeof log_path, "%s", first_log);
  PP_CHECK_INT(kill(first, SIGHUP), ==, 0);
  usleep(200000);
  PP_CHECK_INT(kill(first, SIGTERM), ==, 0);
  PP_CHECK_INT(finish(first), ==, 0);
  const char *t = log_text();
  PP_CHECK(strstr(t, "msg=\"sidecar started\"") != NULL);
  PP_CHECK(strstr(t, "msg=\"SIGHUP ignored\"") != NULL);
  PP_CHECK(strstr(t, "msg=\"shutting down\" signal=SIGTERM") != NULL);
  PP_CHECK(strstr(t, "msg=\"sidecar stopped\"") != NULL);
  struct stat st;
  PP_CHECK(stat(sock_path, &st) != 0); /* the socket is removed */
}

int main(void) {
  pp_test_mkdtemp(dir, sizeof dir, "test-main");
  snprintf(sock_path, sizeof sock_path, "%s/s.sock", dir);
  snprintf(sock2_path, sizeof sock2_path, "%s/s2.sock", dir);
  snprintf(spool_dir, sizeof spool_dir, "%s/spool", dir);
  snprintf(out_url, sizeof out_url, "file://%s/out", dir);
  snprintf(log_path, sizeof log_path, "%s/sidecar.log", dir);
  PP_RUN(test_main_exit_codes_for_help_and_bad_settings);
  PP_RUN(test_main_one_sidecar_per_spool_and_a_clean_stop);
  btu_rmtree(dir);
  PP_DONE();
}
