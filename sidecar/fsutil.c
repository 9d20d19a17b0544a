#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

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

int fsutil_dir_others(int dfd, mode_t *old_mode) {
  struct stat st;
  if (fstat(dfd, &st) != 0)
    return -1;
  *old_mode = st.st_mode & 07777;
  if ((st.st_mode & S_IRWXO) == 0)
    return FSUTIL_OTHERS_NONE;
  if (!(st.st_mode & S_IWOTH))
    return FSUTIL_OTHERS_READ;
  /* Sticky (/tmp) is shared on purpose; not ours is not ours to change. */
  if ((st.st_mode & S_ISVTX) || st.st_uid != geteuid())
    return FSUTIL_OTHERS_WRITE;
  if (fchmod(dfd, st.st_mode & 07777 & ~(mode_t)S_IRWXO) != 0)
    return FSUTIL_OTHERS_WRITE;
  return FSUTIL_OTHERS_CLOSED;
}

int fsutil_write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

int fsutil_write_uncached(int fd, const void *data, size_t len) {
  const char *p = data;
  size_t blocks = len & ~(size_t)(FSUTIL_DIRECT_ALIGN - 1);
  int fl = blocks && ((uintptr_t)p & (FSUTIL_DIRECT_ALIGN - 1)) == 0 ? fcntl(fd, F_GETFL) : -1;
  /* A filesystem without O_DIRECT (tmpfs on older kernels) refuses the flag. */
  if (fl >= 0 && fcntl(fd, F_SETFL, fl | O_DIRECT) == 0) {
    int rc = fsutil_write_all(fd, p, blocks), e = errno;
    if (fcntl(fd, F_SETFL, fl) != 0) /* the tail goes through the cache */
      return -1;
    if (rc == 0) {
      p += blocks;
      len -= blocks;
    } else if (e != EINVAL) {
      errno = e;
      return -1;
    } else if (lseek(fd, 0, SEEK_SET) != 0 || ftruncate(fd, 0) != 0) {
      return -1; /* a stricter alignment than ours: all of it through the cache */
    }
  }
  return fsutil_write_all(fd, p, len);
}

/* One loop for both directions: pread and pwrite differ only in constness. */
static int rw_all(bool write, int fd, void *buf, size_t len, uint64_t off) {
  uint8_t *p = buf;
  while (len > 0) {
    ssize_t r = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (r == 0)
        errno = EIO;
      return -1;
    }
    p += r;
    len -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

int fsutil_pread_all(int fd, void *buf, size_t len, uint64_t off) {
  return rw_all(false, fd, buf, len, off);
}

int fsutil_pwrite_all(int fd, const void *buf, size_t len, uint64_t off) {
  return rw_all(true, fd, (void *)(uintptr_t)buf, len, off);
}
