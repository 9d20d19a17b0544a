/* Per-thread pprof labels (pushprof_label_set): each thread owns one block,
 * allocated at its first label and freed at its exit. The owner edits a
 * private copy, then publishes it into the inactive one of two buffers under
 * a sequence counter; the signal handler copies the active buffer by value.
 * The handler runs on the owner thread, so it never waits and never sees a
 * half-written buffer; a reader on another thread (tests) validates the
 * counter and retries a bounded number of times, then gives up (counted).
 * Functions are not async-signal-safe unless marked. */
#ifndef PUSHPROF_LABELS_H
#define PUSHPROF_LABELS_H
#include <stdatomic.h>
#include <stdint.h>

#include "otel_ctx.h"
#include "ring.h"

#define LABELS_WORDS (RING_LABEL_BYTES / 8)

typedef struct labels_block {
  /* 2n: publication n is in buf[n & 1]; 2n+1: publication n+1 is being
   * written into the other buffer while buf[n & 1] stays valid. */
  _Atomic uint64_t seq;
  _Atomic uint32_t meta[2]; /* nlabels << 16 | byte length, per buffer */
  _Atomic uint64_t buf[2][LABELS_WORDS];
  /* Owner thread only: the current set, "key\0value\0" pairs. */
  uint16_t nlabels, len;
  char shadow[RING_LABEL_BYTES];
  /* Owner thread only: each pair's key and value lengths and its index in
   * the OpenTelemetry key map (-1: none); the decoded trace_id and span_id
   * labels (ids_ok bits 1 and 2); two records: otel_thread_ctx_v1 points
   * at rec[cur] or is NULL, the next one is built in the other. */
  uint16_t klens[RING_MAX_LABELS], vlens[RING_MAX_LABELS];
  int16_t kidx[RING_MAX_LABELS];
  uint8_t ids_ok, cur;
  uint8_t trace_id[16], span_id[8];
  otel_record rec[2];
} labels_block;

/* pushprof_label_set / pushprof_labels_clear are implemented in labels.c. */

/* The calling thread's block, NULL before its first label. */
labels_block *labels_self_block(void);

/* Copies a consistent snapshot of b into dst (RING_LABEL_BYTES bytes of
 * room): 0 with *nlabels and *len set, or -1 if a concurrent writer kept
 * changing it (only possible from another thread). Async-signal-safe. */
int labels_copy(const labels_block *b, char *dst, uint16_t *nlabels, uint16_t *len);

/* The handler: copies the calling thread's labels into rec (none if it has
 * none; none and counted if the copy failed). Async-signal-safe. */
void labels_snapshot(ring_record *rec);

/* Samples that lost their labels to a racing writer, since the start.
 * Async-signal-safe. */
uint64_t labels_skipped(void);
#endif
