/* Internal to the batcher: its state, and the groups (one open or pending
 * batch each: batcher_group.c) that batcher.c merges pushes into, seals,
 * packs and exports. */
#ifndef SIDECAR_BATCHER_INT_H
#define SIDECAR_BATCHER_INT_H

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batcher_gauge.h"
#include "dedup.h"
#include "log.h"
#include "manifest.h"
#include "metrics.h"
#include "pp_deflate.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pp_parse.h"
#include "pp_merge.h"
#include "pp_gzip.h"

#include "batcher.h"

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define BACKOFF_BASE_MS 1000
#define BACKOFF_CAP_MS (5 * 60 * 1000)
#define GROUP_MAX_BYTES (64u << 20) /* seal a group early once its pushes reach this */
#define PPROF_MAX_SIZE ((size_t)1 << 30)
#define TRIM_SLACK ((size_t)4 << 20)   /* free heap bytes kept while a load lasts */
#define IDLE_WAKE_NS NS_PER_S          /* refresh the age gauge at least this often */
#define PRUNE_EVERY_NS (60 * NS_PER_S) /* forget exported identities this often */
#define BATCHER_NICE 10                /* see thread_main */
#define ROOM_WAIT_MAX_NS (10 * NS_PER_S)
#define DEFAULT_MAX_MEMORY ((uint64_t)48 << 20)

typedef struct group {
  struct group *next;
  char *key;
  size_t keylen;
  char *service;
  Pushprof__V1__Label *label_store;
  Pushprof__V1__Label **labels;
  size_t nlabels;
  pp_builder *pb; /* NULL once packed */
  /* Gauge columns (batcher_gauge.h): each process's latest push, added to
   * pb when the group is packed. cols.ngauge 0: none, every push merges
   * whole. */
  gauge_cols cols;
  gauge_latest gauges;
  /* pp_builder_mem_content(pb) plus gauges.mem, as last accounted in
   * b->mem_merge */
  size_t pbmem;
  bool prepared; /* packed, hashed, manifest written (then gz is NULL) */
  char (*ids)[SPOOL_ID_MAX];
  dedup_id *pids; /* each member's identity, parallel to ids */
  size_t nids, capids;
  char *node, *subdir;                 /* recorded in a recovered manifest; NULL: the batcher's */
  char ptype[PP_PROFILE_TYPE_MAX + 1]; /* batcher_profile_type of its pushes (or its manifest's) */
  char mf_name[MANIFEST_NAME_MAX];     /* its manifest, "" while none */
  bool recovered;                      /* read back from a manifest at start */
  /* Its manifest is durable and the only copy of its pushes: they left the
   * spool (spool_release), and the manifest's bytes count there instead
   * (spool_account). */
  bool released;
  uint64_t bytes;
  int64_t start_ns, end_ns;
  int64_t opened_mono; /* window start */
  int64_t oldest_wall; /* oldest push it holds, for max_age and the age gauge */
  bool sealed, busy;
  /* In memory when no manifest holds it, or (with mf_name set) as a copy
   * of the manifest's until the first failed attempt: a batch exported at
   * once is not read back and hashed again. */
  uint8_t *gz;
  size_t gzlen, gzcap;
  char hash[65];
  uint32_t pid;   /* the pushing process, while every member is one's */
  bool pid_mixed; /* members from several processes */
  /* Each target's delivery of this batch, by exporter index. */
  struct target_state {
    bool done;    /* accepted, or refused for good (failed set) */
    char *failed; /* the refusal's reason, malloc'ed */
    int attempts;
    int retry_after_s; /* the exporter's last Retry-After, -1 if none */
    int64_t next_attempt_mono;
  } ts[BATCHER_MAX_TARGETS];
} group;

struct batcher {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int window_s, max_age_s;
  uint32_t max_frame; /* frame limit for spooled frames (batcher_add_spooled) */
  char *node, *subdir;
  exporter *ex[BATCHER_MAX_TARGETS];
  size_t nex;
  int target_metric[BATCHER_MAX_TARGETS]; /* metrics_target_register ids */
  spool *sp;
  manifest_dir *md; /* NULL: no manifests (no spool, or it failed to open) */
  dedup_index *dx;
  int64_t next_prune_mono;
  group *groups;
  pthread_t thread;
  bool started, joined, stopping, closed;
  int64_t stop_deadline_mono;
  int64_t backoff_base_ms, backoff_cap_ms;
  uint64_t rng;
  /* Memory (see the top of this file), lock held. */
  uint64_t merge_soft, merge_hard; /* seal early beyond; no room beyond */
  uint64_t mem_merge;              /* sum of pbmem (builders and kept gauges) */
  uint64_t mem_payload;            /* gz bytes held in memory */
  /* The encoder's buffer, kept from one batch to the next while batches
   * come (its pages stay mapped), freed when nothing is merged; counted in
   * the memory gauge, taken (NULL) while a pack uses it. */
  uint8_t *pack_buf;
  size_t pack_cap;
  /* The same for gzip's output: a payload buffer given back once its batch
   * no longer needs it in memory, reused by the next batch. */
  uint8_t *gz_spare;
  size_t gz_spare_cap;
  /* And a packed batch's builder, emptied (pp_builder_reset): its hash
   * tables and arrays, grown to a batch's size, are the next batch's
   * (growing them again, page by page and rehash by rehash, was most of a
   * push's page faults). Its memory counts in the gauge (spare_pb_mem);
   * a group's builder is accounted by its content (pp_builder_mem_content),
   * so a reused one seals at the size a new one would. */
  pp_builder *spare_pb;
  size_t spare_pb_mem;
  bool trim_due; /* a batch's memory was freed since the last trim */
};

static inline int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static inline int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* The profile type a push's batch carries in its names and series: the
 * type the client declared, else the one its sample types tell
 * (exporter_profile_type); "" for CPU, whose names never had one. */
const char *batcher_profile_type(const Pushprof__V1__PushRequest *req,
                                 const Perftools__Profiles__Profile *p);
/* Sorts req's labels in place (order does not matter to anyone) and builds
 * the grouping key (service, labels, sample types, period, profile type).
 * NULL on ENOMEM. */
char *batcher_key(Pushprof__V1__PushRequest *req, const Perftools__Profiles__Profile *p,
                  size_t *keylen);
/* Frees g and all it holds (not accounted: see batcher_group_release). */
void batcher_group_free(group *g);
/* g's payload leaves memory: its buffer becomes the spare the next batch
 * gzips into (its pages stay mapped: a batch's payload is megabytes, each
 * page a fault when new), unless one is kept already or it is past the
 * soft limit. Lock held; the caller accounts mem_payload. */
void batcher_give_back_gz_locked(batcher *b, group *g);
/* Frees g and takes its memory out of the accounts. Lock held. */
void batcher_group_release(batcher *b, group *g);
/* Re-accounts g's builder after a merge. Lock held. */
void batcher_account_builder(batcher *b, group *g);
/* Every target that still owes g an attempt may try now. */
void batcher_group_due_now(group *g);
/* The first target of g due at now (-1: none); *next gets the earliest
 * attempt time of the targets not due yet (INT64_MAX: none). */
int batcher_group_due_target(const batcher *b, const group *g, int64_t now, int64_t *next);
/* A new group; open: with a builder, pb (an empty one to reuse; the group
 * owns it from here, even on failure) or a new one. */
group *batcher_group_new(char *key, size_t keylen, const Pushprof__V1__PushRequest *req,
                         pp_builder *pb, bool open);
/* Adds a push (its spool id and dedup identity) to g; 0 or -1 (ENOMEM). */
int batcher_group_add_id(group *g, const char *id, const dedup_id *pid);
/* When the push was first made durable: our spool ids start with the ns time
 * of the write, which survives restarts; else the push's own end time if it
 * is plausible; else now. */
int64_t batcher_push_birth(const char *id, const Pushprof__V1__PushRequest *req, int64_t now);
/* Takes g out of the batcher's list. Lock held. */
void batcher_group_unlink(batcher *b, group *g);
/* The pending-batches and memory gauges, per target too. Lock held. */
void batcher_publish_gauges(batcher *b, int64_t now_wall);
#endif
