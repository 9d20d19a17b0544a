/* The spool's write-ahead journal: a fixed-size, preallocated ring file
 * (<spool>/journal) that a push is appended to and fdatasync'ed before it is
 * acknowledged. Overwriting blocks that already exist needs no file-system
 * metadata change, so the sync is one data write plus a cache flush, not the
 * two journal commits of creating, renaming and syncing a new file.
 *
 * After the ack the record stays until the push is safe elsewhere (its
 * batch's manifest is durable, or the spool copied it into a file of its own
 * to free the ring), then it is released: marked dead, and the mark made
 * durable, so a replay after a crash never brings back a push that is
 * already in a batch.
 *
 * Records are acknowledged in order of reservation: a sync covers a record
 * only once every record reserved before it is fully written, so after a
 * crash the acknowledged records form a prefix and a replay may stop at the
 * first torn one. Thread-safe. */
#ifndef SIDECAR_JOURNAL_H
#define SIDECAR_JOURNAL_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JOURNAL_NAME "journal"
#define JOURNAL_ID_MAX 48            /* record ids (spool file names) are shorter */
#define JOURNAL_MIN_BYTES (1u << 20) /* smaller journals are refused */

typedef struct journal journal;

/* A record: handed out by journal_append, given back by journal_release or
 * journal_abort. */
typedef struct journal_rec {
  uint64_t rseq; /* reservation number, 0 = none */
  uint64_t off;  /* where the frame bytes start in the journal file */
  size_t len;
} journal_rec;

/* Called by journal_open for every live record a previous run left, oldest
 * first, with the frame bytes (crc checked; the push itself is not
 * validated). Return 0 once the push is durable elsewhere (a file in the
 * journal's directory needs no directory fsync: journal_open syncs the
 * directory once after the replay, before it drops the records), -1 (errno
 * set) to fail the open. */
typedef int (*journal_replay_cb)(void *arg, const char *id, const uint8_t *frame, size_t len);

/* Opens or creates <dirfd>/journal of size bytes (created zero-filled, so
 * later writes only overwrite), replays what a previous run left, then starts
 * a new lap. NULL with err on failure (the caller may go on without one). */
journal *journal_open(int dirfd, const char *dir, uint64_t size, journal_replay_cb cb, void *arg,
                      char *err, size_t errlen);
void journal_close(journal *j);
/* Reserves space and writes the record. 0, or -1 when it does not fit now
 * (ENOSPC: the ring is full up to its oldest unreleased record), never
 * (EFBIG: over a quarter of the ring) or the journal is broken (EIO): the
 * caller writes a spool file directly instead. */
int journal_append(journal *j, const char *id, const uint8_t *frame, size_t len, journal_rec *r);
/* Waits until r is durable (group commit). 0, or -1 on a failed sync (the
 * journal is then broken: every later append fails). */
int journal_sync(journal *j, const journal_rec *r);
/* The record was not acknowledged: frees its space (the dead mark is not
 * synced; a replay validates records and skips invalid pushes anyway). */
void journal_abort(journal *j, journal_rec *r);
/* The record is safe elsewhere: marks it dead durably, frees its space.
 * 0, or -1 if the mark could not be made durable (then the caller must not
 * let the copy be deleted before a restart replays the record). */
int journal_release(journal *j, journal_rec *r);
/* journal_release of n records with one sync for all their marks (records
 * with rseq 0 are skipped). 0, or -1: none is released. */
int journal_release_many(journal *j, journal_rec *r, size_t n);
/* The ring's size in bytes. */
uint64_t journal_size(const journal *j);
int journal_fd(const journal *j);
/* Bytes held by unreleased records (for tests and metrics). */
uint64_t journal_used(journal *j);
#endif
