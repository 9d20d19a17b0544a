#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* The holder writes its pid right after locking; a reader racing that write
 * sees an empty file, hence "unknown". */
static long holder_pid(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  char *end;
  long pid = strtol(buf, &end, 10);
  return end != buf && pid > 0 ? pid : -1;
}

int lockfile_acquire(const char *path, const char *what, char *err, size_t errlen) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot open lock file %s: %s (check the directory's permissions)",
             what, path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (e == EWOULDBLOCK) {
      long pid = holder_pid(fd);
      char who[48] = "pid unknown";
      if (pid > 0)
        snprintf(who, sizeof who, "pid %ld", pid);
      snprintf(err, errlen,
               "%s is in use by another pushprof-sidecar (%s, holding %s): stop that one, or "
               "give this one its own --socket and --spool",
               what, who, path);
    } else {
      snprintf(err, errlen, "%s: cannot lock %s: %s", what, path, strerror(e));
    }
    close(fd);
    return -1;
  }
  char pid[32];
  int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
    snprintf(err, errlen, "%s: cannot write lock file %s: %s", what, path, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}
