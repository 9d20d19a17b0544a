/* One sidecar per spool and socket: the lock file holds our pid, a second
 * process is refused with a message naming the holder and the fix, and the
 * lock goes with the process that held it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockfile.h"
#include "pp_test.h"

static char dir[64], path[128];

/* In a child: tries the lock and reports through its exit status (0 taken,
 * 1 refused with a message naming pid, 2 anything else). */
static int child_try(pid_t holder) {
  pid_t p = fork();
  if (p == 0) {
    char err[512] = "", want[32];
    int fd = lockfile_acquire(path, "--spool /x", err, sizeof err);
    snprintf(want, sizeof want, "%d", (int)holder);
    _exit(fd >= 0 ? 0 : (strstr(err, "--spool /x") && strstr(err, want)) ? 1 : 2);
  }
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_lockfile_holds_our_pid_and_refuses_a_second_process(void) {
  char err[512] = "";
  int fd = lockfile_acquire(path, "--spool /x", err, sizeof err);
  PP_CHECK(fd >= 0);
  if (fd < 0) {
    fprintf(stderr, "  %s\n", err);
    return;
  }
  char buf[32] = "";
  int r = open(path, O_RDONLY);
  PP_CHECK(r >= 0 && read(r, buf, sizeof buf - 1) > 0);
  if (r >= 0)
    close(r);
  PP_CHECK_INT(atoi(buf), ==, (int)getpid());
  struct stat st;
  PP_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
  PP_CHECK_INT(child_try(getpid()), ==, 1);
  close(fd); /* released with the fd, as at exit */
  PP_CHECK_INT(child_try(getpid()), ==, 0);
}

static void test_lockfile_goes_with_a_killed_holder(void) {
  int pipefd[2];
  PP_CHECK(pipe(pipefd) == 0);
  pid_t holder = fork();
  if (holder == 0) {
    char err[512];
    int fd = lockfile_acquire(path, "--spool /x", err, sizeof err);
    char c = fd >= 0 ? 'y' : 'n';
    if (write(pipefd[1], &c, 1) != 1)
      _exit(3);
    pause();
    _exit(0);
  }
  char c = 0;
  PP_CHECK(read(pipefd[0], &c, 1) == 1 && c == 'y');
  PP_CHECK_INT(child_try(holder), ==, 1); /* held by a live process */
  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  PP_CHECK_INT(child_try(holder), ==, 0); /* no stale lock after a crash */
  close(pipefd[0]);
  close(pipefd[1]);
}

static void test_lockfile_names_a_missing_directory(void) {
  char err[512] = "", bad[200];
  snprintf(bad, sizeof bad, "%s/no/such/dir/.lock", dir);
  PP_CHECK_INT(lockfile_acquire(bad, "--socket /s", err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "--socket /s") != NULL);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/pushprof-test-lockfile-%d", (int)getpid());
  snprintf(path, sizeof path, "%s/.sidecar.lock", dir);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return 1;
  PP_RUN(test_lockfile_holds_our_pid_and_refuses_a_second_process);
  PP_RUN(test_lockfile_goes_with_a_killed_holder);
  PP_RUN(test_lockfile_names_a_missing_directory);
  unlink(path);
  rmdir(dir);
  PP_DONE();
}
