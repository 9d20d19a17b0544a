/* Facts about the running process that Linux keeps in /proc. */
#ifndef PUSHPROF_PROCSTAT_H
#define PUSHPROF_PROCSTAT_H
#include <stdint.h>

/* When this process started (fork, not exec: an exec'd program keeps it),
 * in ns since the epoch, to the kernel tick; the time now if /proc cannot
 * say. Reads files: not async-signal-safe. */
int64_t procstat_start_ns(void);

#endif
