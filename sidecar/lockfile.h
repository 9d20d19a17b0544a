/* One sidecar per socket and per spool: an exclusive flock() on a lock file
 * beside each, held for the life of the process (the kernel drops it when
 * the process dies, so a crash never leaves a stale lock). */
#ifndef SIDECAR_LOCKFILE_H
#define SIDECAR_LOCKFILE_H
#include <stddef.h>

/* Locks path (created 0640 if missing; its directory must exist) and writes
 * our pid into it. Returns the open fd, to keep until exit (closing it
 * releases the lock), or -1 with err naming what (e.g. "--spool /x"), the
 * holder's pid and the fix. Not thread-safe; call before threads start. */
int lockfile_acquire(const char *path, const char *what, char *err, size_t errlen);
#endif
