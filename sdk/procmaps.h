/* /proc/<pid>/maps parsing (Linux). procmaps_parse is a pure function over a
 * buffer: any bytes are accepted, lines it cannot read are skipped and
 * counted. Not async-signal-safe (allocates); a procmaps is used by one thread
 * at a time. */
#ifndef PUSHPROF_PROCMAPS_H
#define PUSHPROF_PROCMAPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct procmaps_entry {
  uint64_t start, end; /* [start, end) */
  uint64_t offset;     /* file offset of start */
  uint64_t inode;
  uint32_t dev_major, dev_minor;
  bool readable, writable, executable, shared;
  bool deleted; /* the kernel appended " (deleted)"; stripped from path */
  char *path;   /* owned; "" for anonymous regions, "[vdso]" etc. for specials */
} procmaps_entry;

typedef struct procmaps {
  procmaps_entry *v; /* in input order (the kernel sorts by start) */
  size_t n, cap;
  size_t skipped; /* malformed lines ignored */
} procmaps;

/* Parses len bytes of maps text into m (which must be zeroed or freed first;
 * on success the caller frees with procmaps_free). 0, or -1 on ENOMEM (m is
 * then left empty). */
int procmaps_parse(const char *buf, size_t len, procmaps *m);
void procmaps_free(procmaps *m);

/* Reads a whole /proc file such as "/proc/self/maps" (less than max bytes; -1
 * if it is larger or unreadable). *buf malloc'ed (NUL-terminated), caller frees. */
int procmaps_read_file(const char *path, size_t max, char **buf, size_t *len);

/* Convenience: reads and parses /proc/self/maps. 0 or -1. */
int procmaps_read_self(procmaps *m);

/* True for a region backed by a file (path starts with '/'). */
bool procmaps_is_file(const procmaps_entry *e);
#endif
