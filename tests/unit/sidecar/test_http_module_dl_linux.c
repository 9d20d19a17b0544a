/* Unit tests for sidecar/exporters/http_module_dl_linux.c: pushprof-
 * sidecar's http_module_get, which loads pushprof-sidecar-http.so from
 * beside the executable first. Each case copies this test into a fresh
 * directory with the built module (or a broken file in its place) and runs
 * the copy, which calls http_module_get once per process, as the sidecar
 * does. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch_test_util.h"
#include "http_module.h"
#include "pp_test.h"

static int copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  char buf[1 << 16];
  ssize_t n = 0;
  int rc = in >= 0 && out >= 0 ? 0 : -1;
  while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n)
      rc = -1;
  if (n < 0)
    rc = -1;
  if (in >= 0)
    close(in);
  if (out >= 0 && close(out) != 0)
    rc = -1;
  return rc;
}

static char module_path[600];

/* In the copy: the module beside it loads, once, for every scheme. */
static void child_loads_the_module_beside_the_executable(void) {
  char err[2048] = "";
  const http_module *m = http_module_get("s3", err, sizeof err);
  PP_CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s\n", err);
    return;
  }
  PP_CHECK_INT(m->abi, ==, HTTP_MODULE_ABI);
  PP_CHECK_INT(m->sizeof_export_object, ==, sizeof(export_object));
  PP_CHECK(m->s3 && m->gs && m->pyroscope && m->otlp);
  PP_CHECK(http_module_get("otlp", err, sizeof err) == m);
}

/* In the copy: a broken file beside it is reported, not skipped, and the
 * failure is remembered even once a good module is there. */
static void child_reports_a_broken_module_once(void) {
  char err[2048] = "", again[2048] = "";
  PP_CHECK(http_module_get("s3", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "the s3 exporter needs " HTTP_MODULE_FILE ": dlopen: ") != NULL);
  PP_CHECK(strstr(err, module_path) != NULL);
  PP_CHECK(strstr(err, "or export to file:// only") != NULL);
  PP_CHECK_INT(copy_file(PP_HTTP_MODULE_PATH, module_path, 0644), ==, 0);
  PP_CHECK(http_module_get("gs", again, sizeof again) == NULL);
  PP_CHECK(strstr(again, "the gs exporter needs " HTTP_MODULE_FILE ": dlopen: ") != NULL);
}

/* Copies this executable into a new directory, with the real module or a
 * broken file beside it, and runs the copy in mode; its exit status. */
static int run_copy(const char *mode, bool broken) {
  char dir[] = "/tmp/pp_test_http_moduleXXXXXX", exe[600], self[600];
  if (!mkdtemp(dir))
    return -1;
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  snprintf(exe, sizeof exe, "%s/test_copy", dir);
  snprintf(module_path, sizeof module_path, "%s/%s", dir, HTTP_MODULE_FILE);
  int rc = -1;
  if (copy_file(self, exe, 0755) != 0)
    goto out;
  if (broken) {
    if (btu_write_file(module_path, "not an ELF file", 15) != 0)
      goto out;
  } else if (copy_file(PP_HTTP_MODULE_PATH, module_path, 0644) != 0) {
    goto out;
  }
  pid_t pid = fork();
  if (pid == 0) {
    execl(exe, exe, mode, dir, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
    rc = WEXITSTATUS(st);
out:
  btu_rmtree(dir);
  return rc;
}

static void test_http_module_dl_loads_the_module_beside_the_executable(void) {
  PP_CHECK_INT(run_copy("good", false), ==, 0);
}

static void test_http_module_dl_reports_a_broken_module_once(void) {
  PP_CHECK_INT(run_copy("broken", true), ==, 0);
}

int main(int argc, char **argv) {
  if (argc == 3) {
    snprintf(module_path, sizeof module_path, "%s/%s", argv[2], HTTP_MODULE_FILE);
    if (strcmp(argv[1], "good") == 0)
      PP_RUN(child_loads_the_module_beside_the_executable);
    else
      PP_RUN(child_reports_a_broken_module_once);
    PP_DONE();
  }
  PP_RUN(test_http_module_dl_loads_the_module_beside_the_executable);
  PP_RUN(test_http_module_dl_reports_a_broken_module_once);
  PP_DONE();
}
