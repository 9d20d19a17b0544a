/* Small file-system helpers shared by the spool and the file exporter.
 * Thread-safe (no shared state). */
#ifndef SIDECAR_FSUTIL_H
#define SIDECAR_FSUTIL_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates path and its missing parents with mode 0750. 0, or -1 with errno. */
int fsutil_mkdir_p(const char *path);
/* What other users may do in the directory open at dfd (*old_mode: its
 * mode). If they can write in it, it is ours and not sticky, their access
 * is removed (the owner's, the group's and setgid kept: a shared group is
 * how apps reach the spool). A directory they can only read, a sticky one
 * (/tmp) or one not ours is left alone: it may be shared on purpose. */
enum {
  FSUTIL_OTHERS_NONE = 0,   /* others have no access */
  FSUTIL_OTHERS_READ = 1,   /* others can list it, not write: left alone */
  FSUTIL_OTHERS_CLOSED = 2, /* others could write: their access removed */
  FSUTIL_OTHERS_WRITE = 3,  /* others can write, and still can */
};
/* FSUTIL_OTHERS_*, or -1 with errno if fstat failed. */
int fsutil_dir_others(int dfd, mode_t *old_mode);
/* Writes all len bytes (retrying short writes and EINTR). 0, or -1 with errno. */
int fsutil_write_all(int fd, const void *data, size_t len);
/* Data aligned to this (FSUTIL_DIRECT_ALIGN bytes) can be written past the
 * page cache by fsutil_write_uncached. */
#define FSUTIL_DIRECT_ALIGN 4096
/* fsutil_write_all into fd (just created, empty, at offset 0), past the
 * page cache where it can: the whole FSUTIL_DIRECT_ALIGN blocks of data
 * with O_DIRECT when data is aligned to one and the filesystem takes it,
 * the rest (and everything elsewhere) through the cache. For files the
 * sidecar writes once and does not read back: their copies would only
 * crowd the node's page cache. The caller still fsyncs. 0, or -1 with
 * errno. */
int fsutil_write_uncached(int fd, const void *data, size_t len);
/* Reads exactly len bytes at off (retrying short reads and EINTR; EOF is
 * EIO). 0, or -1 with errno. */
int fsutil_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* Writes exactly len bytes at off (retrying short writes and EINTR). 0, or
 * -1 with errno. */
int fsutil_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
#endif
