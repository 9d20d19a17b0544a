/* The durable spool: an acknowledged push is a record of the write-ahead
 * journal (journal.h) or a file of its own, holding the push frame exactly
 * as received (PROTOCOL.md), so an SDK can also drop a frame file in
 * directly. File writes are temp file + fsync + rename + fsync(dir). The spool
 * stores and replays bytes only; files its scan callback cannot decode are
 * moved to <dir>/quarantine/; batches refused permanently
 * go to <dir>/failed/ with a .reason file beside them. Thread-safe. */
#ifndef SIDECAR_SPOOL_H
#define SIDECAR_SPOOL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"

#define SPOOL_ID_MAX 64
#define SPOOL_OK 0
#define SPOOL_EIO (-1)  /* disk error: answer UNAVAILABLE */
#define SPOOL_FULL (-2) /* over max_bytes: answer RESOURCE_EXHAUSTED */
/* The file system is full (ENOSPC, EDQUOT): answer RESOURCE_EXHAUSTED. Any
 * put may return it; nothing of the failed write is left behind, and puts
 * succeed again as soon as there is space (no state to reset). */
#define SPOOL_NOSPACE (-3)

typedef struct spool spool;

typedef struct spool_config {
  const char *dir;
  uint64_t max_bytes;
  bool drop_oldest; /* full: delete the oldest pending file (counted) instead of refusing */
  /* Size of the write-ahead journal (journal.h) a push is acked from; 0: no
   * journal, every push is acked once its own file is durable. */
  uint64_t journal_bytes;
} spool_config;

spool *spool_open(const spool_config *cfg, char *err, size_t errlen);
void spool_close(spool *s);
/* Makes frame durable; on success writes its id (a file name) to id. */
int spool_put(spool *s, const uint8_t *frame, size_t len, char id[SPOOL_ID_MAX]);
/* spool_put in two halves, so the disk writes while the caller validates:
 * spool_begin appends the frame to the journal (or, without room there,
 * writes a temp file) and starts its writeback (never drops old files:
 * SPOOL_FULL when they would have to go; then validate and use spool_put);
 * then spool_commit (journal sync, or fsync + rename + directory fsync:
 * durable, ack it; or SPOOL_EIO with nothing left) or spool_abort. A
 * journaled push stays held in the journal under its id, with no file of
 * its own, until spool_release (a restart replays it into a file); the
 * spool copies held pushes into files only when the journal runs short. */
typedef struct spool_txn {
  int fd;
  size_t len;
  char name[SPOOL_ID_MAX];
  char tmp[SPOOL_ID_MAX + 1]; /* the file's name until the commit renames it */
  journal_rec jrec;           /* jrec.rseq != 0: the frame is in the journal */
} spool_txn;
int spool_begin(spool *s, const uint8_t *frame, size_t len, spool_txn *t);
int spool_commit(spool *s, spool_txn *t, char id[SPOOL_ID_MAX]);
void spool_abort(spool *s, spool_txn *t);
/* Calls cb for every pending file not handed over yet (oldest first) with
 * its bytes, which the spool neither decodes nor keeps: frame is borrowed
 * for the call. cb returns 0 once it took the push (it owns the id from
 * then on), or -1 with a one-line reason in why: the file does not decode,
 * and the spool quarantines it with that reason. Returns the number of
 * files taken. */
typedef int (*spool_scan_cb)(void *arg, const char *id, const uint8_t *frame, size_t len, char *why,
                             size_t whylen);
int spool_scan(spool *s, spool_scan_cb cb, void *arg);
/* Rescans for files that appeared since the last scan (SDK spool writes). */
int spool_rescan_new(spool *s, spool_scan_cb cb, void *arg);
/* The pushes ids are safe elsewhere (in a batch's durable manifest, or
 * exported, or duplicates): held records are released (one journal sync
 * for many) and files deleted. SPOOL_OK, or SPOOL_EIO (logged) if some
 * could not be: a held record then comes back at the next start, as a
 * duplicate the batcher recognises. */
int spool_release(spool *s, const char (*ids)[SPOOL_ID_MAX], size_t n);
int spool_remove(spool *s, const char *id);
/* A pending batch's manifest holds bytes and pushes released from the
 * spool: the batcher adds them when the manifest is written and takes them
 * off when it goes, so they count against max_bytes and in the pending
 * gauge. */
void spool_account(spool *s, int64_t bytes, int64_t pushes);
/* With drop_oldest, a full spool first calls fn (without spool locks) to
 * drop the oldest pending batch: true if it dropped one. */
typedef bool (*spool_drop_batch_fn)(void *arg);
void spool_set_drop_batch(spool *s, spool_drop_batch_fn fn, void *arg);
int spool_move_failed(spool *s, const char *id, const char *reason);
/* The spool directory as configured (owned by s). */
const char *spool_path(const spool *s);
/* What counts against max_bytes (pushes, reservations, pending batches). */
uint64_t spool_bytes(spool *s);
/* Pushes not yet exported: held in the journal, in files, in pending
 * batches' manifests (spool_account). */
size_t spool_files(spool *s);
#endif
