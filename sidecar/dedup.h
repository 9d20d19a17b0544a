/* Push identities and the index of pushes the batcher holds or exported
 * recently, so a push that arrives twice (its ack was lost, then the SDK
 * retried it or wrote it into the spool as a drop-in) is exported once.
 * A push has an identity when it carries process_start_time_nanos and a
 * sequence (the C SDK always does): SHA-256 over service, hostname, pid,
 * process start, sequence and the window's start and end, cut to 16 bytes.
 * The window tells apart two images of one process (exec keeps the pid and
 * the start time, and the new image counts from sequence 1 again); a retry
 * sends the same window. The index is not
 * thread-safe: the batcher calls it under its own lock. */
#ifndef SIDECAR_DEDUP_H
#define SIDECAR_DEDUP_H
#include <stdbool.h>
#include <stdint.h>

#include "pushprof.pb-c.h"

typedef struct dedup_id {
  uint8_t b[16];
} dedup_id;

/* How long an exported push's identity is remembered, and how many such
 * identities at most (24 bytes each, ~2.5 MiB in all): beyond, the oldest go. */
#define DEDUP_RETAIN_S 3600
#define DEDUP_MAX_DONE 100000

/* The identity of req; false (id zeroed) when it has none. */
bool dedup_push_id(const Pushprof__V1__PushRequest *req, dedup_id *id);
bool dedup_id_is_zero(const dedup_id *id);
/* The identity of a push without one of its own: its spool file's name (so
 * a file already exported is recognised, though a copy of it is not). */
void dedup_file_id(const char *spool_id, dedup_id *id);
/* A 32-bit tag of a spool file name (same name, same tag). */
uint32_t dedup_file_tag(const char *spool_id);

typedef struct dedup_index dedup_index;

typedef struct dedup_entry {
  dedup_id id;
  uint32_t file_tag;  /* the spool file that holds (held) the push */
  int64_t expires_ns; /* wall clock, whole seconds; 0 while pending (never expires) */
} dedup_entry;

dedup_index *dedup_new(void);
void dedup_free(dedup_index *x);
/* Whether id is known; its entry is copied to out (may be NULL). */
bool dedup_find(const dedup_index *x, const dedup_id *id, dedup_entry *out);
/* Inserts or replaces; expires_ns 0 means pending (kept until erased).
 * 0, or -1 on ENOMEM (the push is then not deduplicated). */
int dedup_put(dedup_index *x, const dedup_id *id, uint32_t file_tag, int64_t expires_ns);
void dedup_erase(dedup_index *x, const dedup_id *id);
/* Removes entries whose expiry (non-zero) is before now_ns. */
void dedup_expire(dedup_index *x, int64_t now_ns);
size_t dedup_size(const dedup_index *x);
#endif
