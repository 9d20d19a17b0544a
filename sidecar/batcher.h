/* Groups acknowledged pushes by (service, process labels, sample types,
 * period) within a window, merges each group into one pprof (pp_merge_add),
 * gzips it and hands it to every exporter (target); deletes the spooled
 * pushes only after every target accepted the batch (or moves them to
 * failed/ once each target has either accepted or refused it for good).
 * Each target retries transient failures on its own, with exponential
 * backoff and full jitter, so a target that is down never holds back the
 * others' deliveries. Runs on its own thread. */
#ifndef SIDECAR_BATCHER_H
#define SIDECAR_BATCHER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter.h"
#include "pp_push.h"
#include "spool.h"

typedef struct batcher batcher;

#define BATCHER_MAX_TARGETS 8

typedef struct batcher_config {
  int window_s;                    /* --batch-window / dump_duration_seconds (default 60) */
  const char *node;                /* --node-name */
  const char *subdir;              /* bucket_subdirectory ("" for none) */
  int max_age_s;                   /* drop (counted) batches older than this (default 86400) */
  const char *const *target_names; /* per exporter, for /metrics labels; may be NULL */
  /* --max-memory (0: 48 MiB). The batcher keeps profiles being merged under
   * a sixth of it (sealing the largest open batch early beyond a twelfth)
   * and says it has no room (batcher_wait_room) past that sixth. */
  uint64_t max_memory;
  uint32_t max_frame_bytes; /* the listener's --max-frame-bytes (0: PP_FRAME_MAX_DEFAULT) */
} batcher_config;

/* One target. */
batcher *batcher_new(const batcher_config *cfg, exporter *ex, spool *sp);
/* nex (1..BATCHER_MAX_TARGETS) targets; the batcher does not own them. */
batcher *batcher_new_multi(const batcher_config *cfg, exporter *const *ex, size_t nex, spool *sp);
int batcher_start(batcher *b);
/* Thread-safe. Takes ownership of push (decoded and validated by
 * pp_push_decode, durable under id); it must hold a profile (a no_samples
 * push is freed and its file left alone). */
void batcher_add(batcher *b, const char *id, pp_push *push);
/* A spool_scan_cb for restarts and rescans (arg: the batcher): decodes the
 * spooled frame once (pp_push_decode, with the frame limit of
 * batcher_config.max_frame_bytes or the file's own size, whichever is
 * larger) and adds it; -1 with why when it does not decode or holds no
 * profile (the spool then quarantines the file). Thread-safe. */
int batcher_add_spooled(void *b, const char *id, const uint8_t *frame, size_t len, char *why,
                        size_t whylen);
/* Thread-safe. False while the profiles being merged and the payloads held
 * in memory are over the batcher's share of the memory budget after
 * waiting up to wait_ms (0: not at all) for packing to make room (the batch
 * being packed frees its builder within milliseconds): the listener lets a
 * push that arrives at the budget wait a moment, unread, and tells it to
 * retry only past that. */
bool batcher_wait_room(batcher *b, int wait_ms);
/* Exports every open batch now, waiting at most grace_s; what is not
 * exported stays in the spool. Then stops the thread. */
void batcher_shutdown(batcher *b, int grace_s);
void batcher_free(batcher *b);
#endif
