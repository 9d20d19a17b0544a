/* The spool's and the file exporter's file-system helpers: directories with
 * their parents, other users' access to the spool, whole writes and reads
 * at offsets, EOF as an error. (Writing past the page cache is
 * test_exporter_file's.) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "pp_test.h"

static char dir[64];

static void test_fsutil_mkdir_p_makes_parents_0750(void) {
  char p[200];
  snprintf(p, sizeof p, "%s/a/b/c", dir);
  umask(022);
  PP_CHECK_INT(fsutil_mkdir_p(p), ==, 0);
  struct stat st;
  PP_CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0750);
  PP_CHECK_INT(fsutil_mkdir_p(p), ==, 0); /* exists: fine */
  char f[200];
  snprintf(f, sizeof f, "%s/a/b/c/file", dir);
  int fd = open(f, O_CREAT | O_WRONLY, 0600);
  PP_CHECK(fd >= 0);
  if (fd >= 0)
    close(fd);
  snprintf(p, sizeof p, "%s/a/b/c/file/sub", dir); /* under a regular file */
  errno = 0;
  PP_CHECK_INT(fsutil_mkdir_p(p), ==, -1);
  PP_CHECK(errno != 0);
}

static int others_of(mode_t mode, mode_t *after) {
  char p[200];
  snprintf(p, sizeof p, "%s/m%o", dir, (unsigned)mode);
  mkdir(p, 0700);
  chmod(p, mode);
  int dfd = open(p, O_RDONLY | O_DIRECTORY);
  mode_t old = 0;
  int r = fsutil_dir_others(dfd, &old);
  struct stat st;
  fstat(dfd, &st);
  *after = st.st_mode & 07777;
  close(dfd);
  return old == (mode & 07777) ? r : -99;
}

static void test_fsutil_dir_others_closes_only_what_others_could_write(void) {
  mode_t after;
  PP_CHECK_INT(others_of(0750, &after), ==, FSUTIL_OTHERS_NONE);
  PP_CHECK_INT(after, ==, 0750);
  PP_CHECK_INT(others_of(0755, &after), ==, FSUTIL_OTHERS_READ);
  PP_CHECK_INT(after, ==, 0755); /* readable: maybe on purpose, left alone */
  PP_CHECK_INT(others_of(02777, &after), ==, FSUTIL_OTHERS_CLOSED);
  PP_CHECK_INT(after, ==, 02770); /* others' bits gone, setgid and group kept */
  PP_CHECK_INT(others_of(01777, &after), ==, FSUTIL_OTHERS_WRITE);
  PP_CHECK_INT(after, ==, 01777); /* sticky, like /tmp: shared on purpose */
  mode_t old;
  PP_CHECK_INT(fsutil_dir_others(-1, &old), ==, -1);
}

static void test_fsutil_writes_and_reads_whole_ranges(void) {
  char p[200];
  snprintf(p, sizeof p, "%s/data", dir);
  int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
  PP_CHECK(fd >= 0);
  if (fd < 0)
    return;
  size_t n = 3u << 20;
  unsigned char *a = malloc(n), *b = malloc(n);
  PP_CHECK(a && b);
  if (!a || !b)
    goto out;
  for (size_t i = 0; i < n; i++)
    a[i] = (unsigned char)(i * 131 + 7);
  PP_CHECK_INT(fsutil_write_all(fd, a, n), ==, 0);
  PP_CHECK_INT(fsutil_pwrite_all(fd, "XYZ", 3, 10), ==, 0);
  memcpy(a + 10, "XYZ", 3);
  PP_CHECK_INT(fsutil_pread_all(fd, b, n, 0), ==, 0);
  PP_CHECK(memcmp(a, b, n) == 0);
  PP_CHECK_INT(fsutil_pread_all(fd, b, 100, n - 50), ==, -1); /* past EOF */
  PP_CHECK_INT(errno, ==, EIO);
out:
  free(a);
  free(b);
  close(fd);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/pushprof-test-fsutil-%d", (int)getpid());
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return 1;
  PP_RUN(test_fsutil_mkdir_p_makes_parents_0750);
  PP_RUN(test_fsutil_dir_others_closes_only_what_others_could_write);
  PP_RUN(test_fsutil_writes_and_reads_whole_ranges);
  char cmd[100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  PP_DONE();
}
