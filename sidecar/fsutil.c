#include "fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

int fsutil_mkdir_p(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0750) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if (mkdir(buf, 0750) != 0 && errno != EEXIST)
    return -1;
  return 0;
}

int fsutil_no_others(int dfd, mode_t *old_mode) {
  struct stat st;
  if (fstat(dfd, &st) != 0)
    return -1;
  *old_mode = st.st_mode & 07777;
  if ((st.st_mode & S_IRWXO) == 0)
    return 0;
  if (fchmod(dfd, st.st_mode & 07777 & ~(mode_t)S_IRWXO) != 0)
    return -1;
  return 1;
}
