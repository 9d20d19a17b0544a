/* Small file-system helpers shared by the spool and the file exporter.
 * Thread-safe (no shared state). */
#ifndef SIDECAR_FSUTIL_H
#define SIDECAR_FSUTIL_H
#include <stddef.h>

/* Creates path and its missing parents with mode 0750. 0, or -1 with errno. */
int fsutil_mkdir_p(const char *path);
/* Writes all len bytes (retrying short writes and EINTR). 0, or -1 with errno. */
int fsutil_write_all(int fd, const void *data, size_t len);
#endif
