/* Batch manifests: what makes a batch's export exactly-once in effect across
 * sidecar crashes. Before a batch is first offered to the exporter, the
 * batcher writes <spool>/batches/<name>.batch (temp file, fsync, rename,
 * directory fsync) holding everything the object's name and bytes depend on:
 * service, process labels, node, subdir, profile type, start/end time, the
 * member pushes' spool ids with their push identities, and the gzip payload
 * with its SHA-256. Once durable it is the batch's only copy (the pushes leave the
 * spool). A restarted sidecar re-exports a .batch byte for byte under the
 * same key (an idempotent PUT for file, s3 and gs).
 * After success the file becomes .<name>.done (payload cut off): a tombstone
 * that lets later copies of the same pushes be recognised as duplicates
 * (hidden: tools that wait for an empty spool count only what is pending).
 * Not thread-safe per manifest_dir: one group's manifest is written by
 * whichever thread packs it (the group is busy meanwhile); manifest_remove
 * only unlinks and may run on any thread. */
#ifndef SIDECAR_MANIFEST_H
#define SIDECAR_MANIFEST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dedup.h"
#include "pushprof.pb-c.h"
#include "spool.h"

#define MANIFEST_DIR "batches"
#define MANIFEST_NAME_MAX 48
#define MANIFEST_PAYLOAD_MAX ((size_t)1 << 30)

typedef struct manifest_member {
  char id[SPOOL_ID_MAX]; /* the spool file holding the push */
  dedup_id pushid;       /* its identity; all zero when it has none */
} manifest_member;

typedef struct manifest {
  char name[MANIFEST_NAME_MAX]; /* file name without .batch/.done; set by manifest_write */
  bool done;                    /* read from a .done tombstone */
  char *service, *node, *subdir;
  /* exporter_profile_type ("heap"); NULL or "" for none: a CPU batch, or a
   * manifest written before batches had types (its names have none) */
  char *ptype;
  Pushprof__V1__Label *labels; /* nlabels, key/value malloc'ed */
  size_t nlabels;
  int64_t start_ns, end_ns;
  int64_t born_ns;  /* the oldest member push was made durable (max age) */
  int64_t mtime_ns; /* of the file, when read back (tombstone expiry) */
  char hash[65];    /* hex SHA-256 of gz */
  manifest_member *members;
  size_t nmembers;
  uint8_t *gz; /* payload; NULL when read from a tombstone */
  size_t gzlen;
} manifest;

typedef struct manifest_dir manifest_dir;

/* Opens (creating) <spool_dir>/batches. NULL with err naming the fix. */
manifest_dir *manifest_dir_open(const char *spool_dir, char *err, size_t errlen);
void manifest_dir_close(manifest_dir *d);

/* Serializes m (payload last) into a malloc'ed buffer; *hdrlen gets the
 * size without the payload. NULL on ENOMEM. Pure: for tests and fuzzing. */
uint8_t *manifest_encode(const manifest *m, size_t *len, size_t *hdrlen);
/* Parses a manifest file's bytes; with want_payload the payload must be
 * whole and match the hash. NULL with why on any defect. */
manifest *manifest_decode(const uint8_t *buf, size_t len, bool want_payload, char *why,
                          size_t whylen);
void manifest_free(manifest *m);
/* Hex SHA-256 of data: the batch's content hash (object names hold it). 0 or -1. */
int manifest_hash_hex(const uint8_t *data, size_t len, char out[65]);

/* Makes m durable as a new .batch file; names it (m->name). 0, or -1 with
 * errno (the batch is then exported without one: at-least-once). */
int manifest_write(manifest_dir *d, manifest *m);
/* Reads name.batch's payload back (its last gzlen bytes) into a malloc'ed
 * *out and checks it against hash: a pending batch's bytes live on disk,
 * not in memory, between attempts. 0, or -1 with why and errno: ENOMEM
 * (try again later), else the file no longer holds the payload (gone, cut
 * short, corrupt, unreadable). */
int manifest_read_payload(manifest_dir *d, const char *name, size_t gzlen, const char *hash,
                          uint8_t **out, char *why, size_t whylen);
/* name.batch -> .name.done, directory fsync'ed, then the last gzlen bytes
 * (the payload) cut off. 0 or -1 (logged). */
int manifest_mark_done(manifest_dir *d, const char *name, size_t gzlen);
/* Deletes .name.done (done) or name.batch. 0 or -1 (logged). */
int manifest_remove(manifest_dir *d, const char *name, bool done);
/* Moves name.batch into <spool>/failed/ with a .reason file (it may hold
 * the only copy of its pushes). 0 or -1 (logged). */
int manifest_move_failed(manifest_dir *d, const char *name, const char *reason);
/* Renames name.batch to name.batch.bad (or deletes it) and logs why: its
 * payload cannot be read, so it is never read again. */
void manifest_set_aside(manifest_dir *d, const char *name, const char *why);
/* Manifests d set aside so far (manifest_set_aside, manifest_load_all):
 * the caller counts them in its metrics (this module links none). */
uint64_t manifest_set_aside_count(const manifest_dir *d);
/* Calls cb for each readable manifest, .batch (with payload) and .done
 * (without), oldest first; cb takes ownership. Unreadable or corrupt ones are
 * set aside (manifest_set_aside, counted): a manifest is its batch's only
 * copy, so its pushes are lost. Returns the number handed over. */
typedef void (*manifest_cb)(void *arg, manifest *m);
int manifest_load_all(manifest_dir *d, manifest_cb cb, void *arg);
/* Deletes tombstones last modified before before_wall_ns. */
int manifest_prune_done(manifest_dir *d, int64_t before_wall_ns);
#endif
