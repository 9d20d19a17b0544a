/* Groups acknowledged pushes by (service, process labels, sample types,
 * period) within a window, merges each group into one pprof (pp_merge_add),
 * gzips it and hands it to the exporter; deletes the spooled pushes only
 * after the exporter accepted the batch. Retries transient failures with
 * exponential backoff and full jitter. Runs on its own thread. */
#ifndef SIDECAR_BATCHER_H
#define SIDECAR_BATCHER_H
#include <stddef.h>

#include "exporter.h"
#include "spool.h"

typedef struct batcher batcher;

typedef struct batcher_config {
  int window_s;       /* --batch-window / dump_duration_seconds (default 60) */
  const char *node;   /* --node-name */
  const char *subdir; /* bucket_subdirectory ("" for none) */
  int max_age_s;      /* drop (counted) batches older than this (default 86400) */
} batcher_config;

batcher *batcher_new(const batcher_config *cfg, exporter *ex, spool *sp);
int batcher_start(batcher *b);
/* Thread-safe. Takes ownership of req (already durable under id). */
void batcher_add(batcher *b, const char *id, Pushprof__V1__PushRequest *req, size_t bytes);
/* The same for a push whose pprof was already parsed (spool_decode_push):
 * takes ownership of req and prof; req->pprof is not used. */
void batcher_add_parsed(batcher *b, const char *id, Pushprof__V1__PushRequest *req, pp_pprof *prof,
                        size_t bytes);
/* Exports every open batch now, waiting at most grace_s; what is not
 * exported stays in the spool. Then stops the thread. */
void batcher_shutdown(batcher *b, int grace_s);
void batcher_free(batcher *b);
#endif
