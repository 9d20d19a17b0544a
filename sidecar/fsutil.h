/* Small file-system helpers shared by the spool and the file exporter.
 * Thread-safe (no shared state). */
#ifndef SIDECAR_FSUTIL_H
#define SIDECAR_FSUTIL_H
#include <sys/types.h>

/* Creates path and its missing parents with mode 0750. 0, or -1 with errno. */
int fsutil_mkdir_p(const char *path);
/* Takes every permission of other users away from the directory open at
 * dfd, keeping the owner's, the group's and setgid (a shared group is how
 * apps reach the spool). 0 if others had none, 1 if removed, -1 with errno
 * if they have some still (fchmod refused: not our directory). *old_mode:
 * the mode before. */
int fsutil_no_others(int dfd, mode_t *old_mode);
#endif
