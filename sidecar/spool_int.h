/* Internal to the spool: its state, shared by spool.c (open, put,
 * journal, recycling, removal), spool_names.c (sorted name sets) and
 * spool_scan.c (scans of the directory for pushes to resume). */
#ifndef SIDECAR_SPOOL_INT_H
#define SIDECAR_SPOOL_INT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "metrics.h"
#include "pp_frame.h"
#include "spool.h"

#define QUARANTINE_DIR "quarantine"
#define FAILED_DIR "failed"
/* A dot temp file younger than this may be a client's drop-in in progress. */
#define STALE_TEMP_S 5
/* Later scans remove temp files only once no live writer can own them. */
#define ABANDONED_TEMP_S 600
/* Removed spool files are kept for reuse: creating a file costs ext4 an
 * inode allocation, which (without a journal) scans past every recently
 * deleted inode of its group (recently_deleted, find_inode_bit); at hundreds
 * of pushes per second that was the biggest single cost of a push. Removed
 * files of at most RECYCLE_FILE_MAX bytes are renamed to ".recycled-<n>"
 * (ignored by scans: dot files, not *.push), at most RECYCLE_MAX of them, in
 * FIFO order. One is overwritten only once the rename that put it there is
 * durable, so that a crash never brings back an exported push's name
 * holding another push. They outlive a restart: deleting thousands of them
 * at stop, then creating as many files at start, would pay the very cost
 * they avoid, so open adopts a previous run's (after one directory fsync
 * makes their names durable) and close leaves them. Their bytes count against
 * RECYCLE_BYTES_MAX: past it the directory is synced and they are truncated
 * (inodes kept, blocks freed), so they never hold much disk; with less
 * than RECYCLE_MIN_FREE or a tenth of the file system free, nothing is
 * recycled and what was is truncated at once. */
#define RECYCLE_PREFIX ".recycled-"
#define RECYCLE_MAX 8192
#define RECYCLE_FILE_MAX (4u << 20)
#define RECYCLE_BYTES_MAX (16u << 20)
/* Only on a file system with room to spare (else files are unlinked, and
 * the recycled ones truncated, as on a full disk every block counts). */
#define RECYCLE_MIN_FREE ((uint64_t)1 << 30)

/* A held record's state: spill sets SPILLING while it writes the file
 * (without the lock); a release meanwhile sets GONE and the spill then
 * removes what it made. */
enum { HELD_LIVE, HELD_SPILLING, HELD_GONE };

typedef struct spool_entry {
  char id[SPOOL_ID_MAX];
  uint64_t bytes;
  journal_rec rec; /* held records only */
  int state;       /* held records only */
} spool_entry;

typedef struct name_set { /* sorted by strcmp */
  spool_entry *v;
  size_t n, cap;
} name_set;

struct spool {
  pthread_mutex_t mu;
  char *dir;
  int dirfd, qfd, ffd;
  uint64_t max_bytes;
  bool drop_oldest;
  uint64_t bytes; /* pending files + reservations of puts in flight */
  name_set pending;
  name_set bad;  /* files we could neither read nor quarantine: never retried */
  name_set held; /* acked journal records not yet safe elsewhere (rec, state) */
  /* Pending batches' manifests (spool_account): their bytes count against
   * max_bytes and their pushes in the pending gauge. */
  uint64_t batch_bytes, batch_pushes;
  spool_drop_batch_fn drop_batch;
  void *drop_arg;
  pthread_mutex_t spill_mu; /* one spill at a time; taken before mu */
  uint32_t counter;
  uint64_t renamed; /* puts renamed into place so far (guarded by mu) */
  /* Group commit of the directory fsync (guarded by sync_mu): a put may ack
   * once an fsync of the directory that started after its rename succeeded;
   * concurrent puts share one instead of queueing one each. */
  pthread_mutex_t sync_mu;
  pthread_cond_t sync_cv;
  bool syncing;
  uint64_t synced;           /* every rename up to this one is durable */
  uint64_t fail_lo, fail_hi; /* the last failed fsync covered renames in (lo, hi] */
  int fail_errno;
  journal *j; /* NULL: no journal */
  /* Files to reuse (guarded by mu), a ring of RECYCLE_MAX, oldest first. */
  struct recycled {
    uint32_t n;     /* its name: RECYCLE_PREFIX<n> */
    bool busy;      /* being truncated: not to be taken */
    uint64_t seq;   /* the rename's number (renamed): reusable once synced */
    uint64_t bytes; /* what it still holds */
  } * recycle;
  size_t rc_head, rc_count;
  uint64_t rc_bytes;
  uint32_t rc_ctr;
};

/* Where id is or would go in s (sorted by strcmp); *found says which. */
size_t spool_set_lower(const name_set *s, const char *id, bool *found);
bool spool_set_has(const name_set *s, const char *id);
/* id's entry, or NULL. */
spool_entry *spool_set_find(name_set *s, const char *id);
/* Adds id with its byte count (kept sorted); 0, or -1 on ENOMEM. */
int spool_set_insert(name_set *s, const char *id, uint64_t bytes);
/* Removes id; returns true and its byte count if it was there. */
bool spool_set_erase(name_set *s, const char *id, uint64_t *bytes);
/* name ends in suffix. */
bool spool_has_suffix(const char *name, const char *suffix);
/* Moves name out of the spool dir into quarantine/ (counted, logged). On
 * failure the name is remembered so it is never picked up again. Lock held. */
void spool_quarantine_locked(spool *s, const char *name, const char *why);
/* The spool's gauges (bytes, files) from its state. Lock held. */
void spool_publish_gauges(spool *s);
#endif
