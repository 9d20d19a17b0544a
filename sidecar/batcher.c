/* The batcher. Pushes are merged into their group's pp_builder as they
 * arrive (batcher_add, on the caller's thread), so memory holds one merged
 * profile per group rather than every push; the group remembers only the
 * spool ids it owes (gauge columns, a heap profile's inuse_*, count only in
 * each process's latest push: the group keeps that aside and adds it when it
 * is packed, batcher_gauge.h). The batcher thread seals a group when its
 * window ends (or it grows too big), packs + gzips + hashes it once, writes
 * it into its manifest and drops it from memory, and offers it to the
 * exporter (reading the bytes back from the manifest for each attempt)
 * until it is accepted, refused for good, or too old.
 *
 * Memory is bounded by --max-memory, not by the backlog: a pending batch
 * costs memory only for its index entry (struct group, its member ids);
 * the builders of open groups and the gauges they keep aside are accounted
 * (pp_builder_mem, the packed gauges' bytes) and kept under a twelfth of
 * the budget by sealing the largest open group early, and the adding
 * threads pack sealed groups themselves (help_pack_locked) so packing keeps
 * up with ingest; past a sixth (builders not yet packed plus payloads
 * that could not go to a manifest) adds wait and batcher_wait_room says no,
 * so the listener tells new pushes to retry. The listener's frames have
 * their own quarter; the rest is the process itself (threads, libraries,
 * the index of pending batches).
 *
 * Exactly-once in effect (see manifest.h, dedup.h): before a group is first
 * offered to the exporter its manifest (members + payload) is made durable,
 * and from then on it is the batch's only copy: its pushes leave the spool
 * (their journal records released, their files deleted), so most pushes
 * never cost a file of their own. After success the manifest becomes a
 * tombstone. A restart re-exports pending manifests byte for byte under the
 * same key, and every push is checked against the identities of the pushes
 * held or recently exported, so a second copy of one (lost ack, then an SDK
 * retry or drop-in; a journal record whose release a crash cut short) is
 * deleted instead of exported again. A manifest that becomes unreadable
 * before its batch is exported is set aside and its pushes counted as
 * dropped (drop_unreadable); one refused for good moves to failed/.
 *
 * Locking: b->mu guards the group list and each group's fields, except that
 * a sealed group marked busy is worked on by the batcher thread alone,
 * without the lock (adds never touch sealed groups). Spool calls are made
 * without b->mu held, or with it held but never the other way round (the
 * spool calls back into batcher_add_spooled only from scans, and into
 * drop_oldest_batch from a full spool's put, both without its own lock). */
#include "batcher_int.h"

/* splitmix64: the jitter needs spread, not secrecy. Lock held. */
static uint64_t next_rand(batcher *b) {
  uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Full jitter: uniform in [0, min(cap, base * 2^attempt)]. */
static int64_t backoff_ms(batcher *b, int attempt) {
  int64_t ceil = b->backoff_base_ms;
  for (int i = 0; i < attempt && ceil < b->backoff_cap_ms; i++)
    ceil *= 2;
  if (ceil > b->backoff_cap_ms)
    ceil = b->backoff_cap_ms;
  if (ceil <= 0)
    return 0;
  return (int64_t)(next_rand(b) % (uint64_t)(ceil + 1));
}

/* ---- recovery ---- */

/* A manifest read back by batcher_new (no other thread runs yet): a
 * tombstone feeds the identity index; a pending batch becomes a sealed group
 * whose pushes it holds (copies a crash left in the spool are deleted) and
 * that exports the recorded payload again. */
static void recover_cb(void *arg, manifest *m) {
  batcher *b = arg;
  char q[300];
  if (m->done) {
    int64_t exp = m->mtime_ns + (int64_t)DEDUP_RETAIN_S * NS_PER_S;
    for (size_t i = 0; i < m->nmembers; i++) {
      dedup_id pid = m->members[i].pushid;
      if (dedup_id_is_zero(&pid))
        dedup_file_id(m->members[i].id, &pid);
      if (dedup_put(b->dx, &pid, dedup_file_tag(m->members[i].id), exp) != 0)
        log_event(LOG_ERROR, "out of memory remembering an exported push", "batch=%s", m->name);
    }
    manifest_free(m);
    return;
  }
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  Pushprof__V1__Label **lp = m->nlabels ? calloc(m->nlabels, sizeof *lp) : NULL;
  group *g = NULL;
  if (m->nlabels && !lp)
    goto oom;
  for (size_t i = 0; i < m->nlabels; i++)
    lp[i] = &m->labels[i];
  req.service = m->service;
  req.labels = lp;
  req.n_labels = m->nlabels;
  g = batcher_group_new(NULL, 0, &req, NULL, false);
  free(lp);
  if (!g || !(g->node = strdup(m->node)) || !(g->subdir = strdup(m->subdir)))
    goto oom;
  g->prepared = true;
  snprintf(g->ptype, sizeof g->ptype, "%s", m->ptype ? m->ptype : "");
  g->gzlen = m->gzlen; /* the bytes stay in the manifest (checked by manifest_load_all) */
  memcpy(g->hash, m->hash, sizeof g->hash);
  g->start_ns = m->start_ns;
  g->end_ns = m->end_ns;
  g->oldest_wall = m->born_ns > 0 ? m->born_ns : INT64_MAX;
  snprintf(g->mf_name, sizeof g->mf_name, "%s", m->name);
  g->recovered = g->sealed = true;
  g->pid_mixed = true; /* not recorded in manifests */
  batcher_group_due_now(g);
  for (size_t i = 0; i < m->nmembers; i++) {
    dedup_id pid = m->members[i].pushid;
    if (dedup_id_is_zero(&pid))
      dedup_file_id(m->members[i].id, &pid);
    if (batcher_group_add_id(g, m->members[i].id, &pid) != 0)
      goto oom;
    if (dedup_find(b->dx, &pid, NULL))
      log_event(LOG_WARN, "a pending batch holds a push already exported in another batch",
                "batch=%s file=%s", m->name, m->members[i].id);
    if (dedup_put(b->dx, &pid, dedup_file_tag(m->members[i].id), 0) != 0)
      goto oom;
  }
  /* The manifest holds the batch: copies of its pushes a crash left in the
   * spool (a journal record not yet released, replayed into a file; a
   * manifest of an older version, whose pushes stayed until the export)
   * go, so the spool's scan never batches them again. */
  if (b->sp) {
    spool_release(b->sp, (const char(*)[SPOOL_ID_MAX])g->ids, g->nids);
    spool_account(b->sp, (int64_t)g->gzlen, (int64_t)g->nids);
  }
  g->released = true;
  g->next = b->groups;
  b->groups = g;
  log_event(LOG_INFO, "pending batch recovered from its manifest; exporting it again",
            "batch=%s service=%s pushes=%zu bytes=%zu", m->name, log_quote(m->service, q, sizeof q),
            g->nids, g->gzlen);
  manifest_free(m);
  return;
oom:
  /* Its manifest stays: the next start tries again; until then its pushes
   * stay in the spool, unexported. */
  log_event(LOG_ERROR, "out of memory recovering a batch manifest", "batch=%s", m->name);
  batcher_group_free(g);
  manifest_free(m);
}

static void settle_ids(batcher *b, group *g, bool done);
static bool drop_oldest_batch(void *arg);

/* ---- public: new / add ---- */

batcher *batcher_new(const batcher_config *cfg, exporter *ex, spool *sp) {
  return batcher_new_multi(cfg, &ex, 1, sp);
}

batcher *batcher_new_multi(const batcher_config *cfg, exporter *const *ex, size_t nex, spool *sp) {
  if (!cfg || !ex || nex == 0 || nex > BATCHER_MAX_TARGETS)
    return NULL;
  for (size_t t = 0; t < nex; t++)
    if (!ex[t])
      return NULL;
  batcher *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0) {
    free(b);
    return NULL;
  }
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (pthread_mutex_init(&b->mu, NULL) != 0) {
    pthread_condattr_destroy(&ca);
    free(b);
    return NULL;
  }
  if (pthread_cond_init(&b->cv, &ca) != 0) {
    pthread_condattr_destroy(&ca);
    pthread_mutex_destroy(&b->mu);
    free(b);
    return NULL;
  }
  pthread_condattr_destroy(&ca);
  b->window_s = cfg->window_s >= 0 ? cfg->window_s : 60;
  b->max_frame = cfg->max_frame_bytes ? cfg->max_frame_bytes : PP_FRAME_MAX_DEFAULT;
  b->max_age_s = cfg->max_age_s > 0 ? cfg->max_age_s : 86400;
  b->node = strdup(cfg->node && *cfg->node ? cfg->node : "unknown-node");
  b->subdir = strdup(cfg->subdir ? cfg->subdir : "");
  if (!b->node || !b->subdir) {
    batcher_free(b);
    return NULL;
  }
  for (size_t t = 0; t < nex; t++) {
    b->ex[t] = ex[t];
    b->target_metric[t] = metrics_target_register(cfg->target_names ? cfg->target_names[t] : NULL);
  }
  b->nex = nex;
  b->sp = sp;
  uint64_t budget = cfg->max_memory ? cfg->max_memory : DEFAULT_MAX_MEMORY;
  b->merge_soft = budget / 12;
  b->merge_hard = budget / 6;
  b->backoff_base_ms = BACKOFF_BASE_MS;
  b->backoff_cap_ms = BACKOFF_CAP_MS;
  /* Test hook, not a user setting: shortens the retry backoff so unit and
   * integration tests of retries finish quickly. */
  const char *t = getenv("PUSHPROF_TEST_BACKOFF_MS");
  if (t && *t) {
    char *end;
    long v = strtol(t, &end, 10);
    if (*end == '\0' && v >= 0 && v <= BACKOFF_CAP_MS)
      b->backoff_base_ms = v;
  }
  b->rng = (uint64_t)wall_ns() ^ ((uint64_t)getpid() << 32);
  b->dx = dedup_new();
  if (!b->dx) {
    batcher_free(b);
    return NULL;
  }
  if (sp) {
    char err[512], q[600];
    b->md = manifest_dir_open(spool_path(sp), err, sizeof err);
    if (!b->md)
      log_event(LOG_ERROR, "batch manifests disabled: a crash may export a batch twice", "err=%s",
                log_quote(err, q, sizeof q));
    else {
      manifest_load_all(b->md, recover_cb, b);
      metrics_add(M_MANIFESTS_SET_ASIDE, manifest_set_aside_count(b->md));
    }
    spool_set_drop_batch(sp, drop_oldest_batch, b);
  }
  b->next_prune_mono = mono_ns() + PRUNE_EVERY_NS;
  return b;
}

int batcher_add_spooled(void *arg, const char *id, const uint8_t *frame, size_t len, char *why,
                        size_t whylen) {
  batcher *b = arg;
  int code;
  /* A drop-in may be larger than the listener's limit (the spool bounded
   * its size); the pprof's gunzip limit follows from whichever is larger. */
  uint32_t max_frame = b->max_frame;
  if (len > max_frame)
    max_frame = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
  pp_push *p = pp_push_decode(frame, len, max_frame, &code, why, whylen);
  if (!p)
    return -1;
  if (!p->prof) { /* the listener never spools one; a drop-in might */
    snprintf(why, whylen, "a no_samples push has no profile to batch");
    pp_push_free(p);
    return -1;
  }
  batcher_add(b, id, p);
  return 0;
}

/* The spool is full and may drop the oldest (spool_set_drop_batch): the
 * pending batch holding the oldest pushes goes (counted, logged), if one
 * is released to its manifest and not being worked on. */
static bool drop_oldest_batch(void *arg) {
  batcher *b = arg;
  char q[300];
  pthread_mutex_lock(&b->mu);
  group *old = NULL;
  for (group *g = b->groups; g; g = g->next)
    if (g->released && !g->busy && (!old || g->oldest_wall < old->oldest_wall))
      old = g;
  if (!old) {
    pthread_mutex_unlock(&b->mu);
    return false;
  }
  batcher_group_unlink(b, old);
  settle_ids(b, old, false);
  pthread_mutex_unlock(&b->mu);
  if (old->mf_name[0] && b->md)
    manifest_remove(b->md, old->mf_name, false);
  spool_account(b->sp, -(int64_t)old->gzlen, -(int64_t)old->nids);
  metrics_drop("spool_full_drop_oldest", old->nids);
  log_event(LOG_WARN, "spool full: dropped the oldest pending batch",
            "service=%s pushes=%zu bytes=%zu", log_quote(old->service, q, sizeof q), old->nids,
            old->gzlen);
  pthread_mutex_lock(&b->mu);
  batcher_group_release(b, old);
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  return true;
}

static bool over_budget_locked(const batcher *b) {
  return b->mem_merge + b->mem_payload > b->merge_hard;
}

bool batcher_wait_room(batcher *b, int wait_ms) {
  int64_t give_up = mono_ns() + (int64_t)wait_ms * NS_PER_MS;
  pthread_mutex_lock(&b->mu);
  while (over_budget_locked(b) && !b->stopping && !b->closed && b->started) {
    int64_t now = mono_ns();
    if (now >= give_up)
      break;
    struct timespec ts = {.tv_sec = give_up / NS_PER_S, .tv_nsec = give_up % NS_PER_S};
    pthread_cond_timedwait(&b->cv, &b->mu, &ts); /* b->cv runs on CLOCK_MONOTONIC */
  }
  bool room = !over_budget_locked(b);
  pthread_mutex_unlock(&b->mu);
  return room;
}

/* Seals the largest open groups while their builders are over the soft
 * limit; the batcher thread packs them into their manifests and frees the
 * builders. True if it sealed one. Lock held. */
static bool seal_for_memory(batcher *b) {
  bool sealed = false;
  uint64_t open_mem = 0;
  for (group *g = b->groups; g; g = g->next)
    if (!g->sealed)
      open_mem += g->pbmem;
  while (open_mem > b->merge_soft) {
    group *big = NULL;
    for (group *g = b->groups; g; g = g->next)
      if (!g->sealed && (!big || g->pbmem > big->pbmem))
        big = g;
    if (!big)
      break;
    big->sealed = true;
    batcher_group_due_now(big);
    sealed = true;
    open_mem -= big->pbmem;
  }
  return sealed;
}

static void prepare_group(batcher *b, group *g);

/* Packs sealed groups on the adding thread while the builders are over the
 * soft limit: packing is what frees memory, and the listener's frame slots
 * add in parallel, so ingest is not held to the batcher thread's pace.
 * Lock held (dropped meanwhile). */
static void help_pack_locked(batcher *b) {
  while (b->mem_merge > b->merge_soft && !b->closed) {
    int64_t now = mono_ns(), next;
    group *g = b->groups;
    while (g && !(g->sealed && !g->busy && !g->prepared && g->pb &&
                  batcher_group_due_target(b, g, now, &next) >= 0)) /* not after a failed pack */
      g = g->next;
    if (!g)
      return;
    g->busy = true;
    prepare_group(b, g);
    g->busy = false;
    pthread_cond_broadcast(&b->cv); /* adds waiting for room */
  }
}

/* Back-pressure on adds: while profiles not yet packed (and payloads that
 * could not go to a manifest) are over the batcher's share of the budget,
 * an add waits here (on a connection thread, after the ack: the listener's
 * frame slots then slow the acks down, and batcher_wait_room makes it tell
 * new pushes to retry) until the batcher thread has packed sealed groups
 * into their manifests. Pending batches cost no builder memory, so an
 * unreachable target never stalls ingest (the spool limit bounds that).
 * Bounded wait; never while stopping. Lock held. */
static void wait_for_room_locked(batcher *b) {
  int64_t give_up = mono_ns() + ROOM_WAIT_MAX_NS;
  for (;;) {
    help_pack_locked(b);
    int64_t now = mono_ns();
    if (!over_budget_locked(b) || b->stopping || b->closed || !b->started || now >= give_up)
      return;
    int64_t until = now + 100 * NS_PER_MS < give_up ? now + 100 * NS_PER_MS : give_up;
    struct timespec ts = {.tv_sec = until / NS_PER_S, .tv_nsec = until % NS_PER_S};
    pthread_cond_timedwait(&b->cv, &b->mu, &ts); /* b->cv runs on CLOCK_MONOTONIC */
  }
}

/* Merges prof into g: whole, or without its gauge columns, which count
 * only in its process's latest push (batcher_gauge.h); the caller offers
 * the push as that once this succeeded. 0, or -1 with why. Lock held. */
static int merge_push(group *g, const Perftools__Profiles__Profile *prof, char *why,
                      size_t whylen) {
  if (!g->cols.ngauge)
    return pp_merge_add(g->pb, prof, why, whylen);
  return pp_merge_add_columns(g->pb, prof, g->cols.counter, why, whylen);
}

void batcher_add(batcher *b, const char *id, pp_push *push) {
  Pushprof__V1__PushRequest *req = push ? push->req : NULL;
  const Perftools__Profiles__Profile *prof =
      push && push->prof ? pp_pprof_profile(push->prof) : NULL;
  size_t bytes = push ? push->frame_bytes : 0;
  char why[256] = "", reason[300];
  char *key = NULL;
  size_t keylen = 0;
  const char *drop = NULL;
  /* The add opened or sealed a group: the batcher thread has work. An add
   * that only merged wakes nobody (a wake per push was two context switches
   * and a scan of every group). */
  bool kick = false;

  if (!b || !id || !req || !prof)
    goto out;
  key = batcher_key(req, prof, &keylen);
  if (!key) {
    log_event(LOG_ERROR, "out of memory grouping a push; it stays in the spool", "id=%s", id);
    goto out;
  }
  int64_t now_wall = wall_ns();
  dedup_id pid;
  if (!dedup_push_id(req, &pid))
    dedup_file_id(id, &pid);
  uint32_t tag = dedup_file_tag(id);

  pthread_mutex_lock(&b->mu);
  wait_for_room_locked(b);
  if (b->closed) {
    pthread_mutex_unlock(&b->mu);
    log_event(LOG_INFO, "batcher stopped; push stays in the spool", "id=%s", id);
    goto out;
  }
  dedup_entry seen;
  if (dedup_find(b->dx, &pid, &seen)) {
    /* The same file again: a member of a recovered batch, which owns it. */
    bool owned = seen.expires_ns == 0 && seen.file_tag == tag;
    bool exported = seen.expires_ns != 0;
    pthread_mutex_unlock(&b->mu);
    if (!owned) {
      char qs[300];
      log_event(LOG_INFO, "duplicate push deleted",
                "id=%s service=%s pid=%" PRIu32 " sequence=%" PRIu64 " first_copy=%s", id,
                log_quote(req->service, qs, sizeof qs), req->pid, req->sequence,
                exported ? "exported" : "pending");
      metrics_add(M_PUSHES_DEDUPLICATED, 1);
      if (b->sp)
        spool_remove(b->sp, id);
    }
    goto out;
  }
  group *g = NULL;
  for (group *it = b->groups; it; it = it->next)
    if (!it->sealed && it->keylen == keylen && memcmp(it->key, key, keylen) == 0) {
      g = it;
      break;
    }
  for (int tries = 0; tries < 2; tries++) {
    if (!g) {
      char *k = malloc(keylen + 1);
      if (k) {
        memcpy(k, key, keylen);
        k[keylen] = '\0';
      }
      /* The builder of an earlier batch, emptied, if one is kept. */
      pp_builder *spare = k ? b->spare_pb : NULL;
      if (spare) {
        b->spare_pb = NULL;
        b->spare_pb_mem = 0;
      }
      g = k ? batcher_group_new(k, keylen, req, spare, true) : NULL;
      if (g)
        snprintf(g->ptype, sizeof g->ptype, "%s", batcher_profile_type(req, prof));
      if (g && batcher_gauge_cols(&g->cols, prof) != 0) {
        batcher_group_free(g);
        g = NULL;
        k = NULL; /* the group owned it */
      }
      if (!g) {
        free(k);
        pthread_mutex_unlock(&b->mu);
        log_event(LOG_ERROR, "out of memory grouping a push; it stays in the spool", "id=%s", id);
        goto out;
      }
      g->next = b->groups;
      b->groups = g;
      kick = true;
    }
    if (merge_push(g, prof, why, sizeof why) == 0)
      break;
    if (g->nids == 0) { /* cannot merge even into an empty group */
      batcher_group_unlink(b, g);
      batcher_group_release(b, g);
      g = NULL;
      break;
    }
    /* Does not fit its group: close that one now and start a new one. */
    char q[300], qs[300];
    log_event(LOG_INFO, "push does not merge into its batch; starting a new batch",
              "id=%s service=%s reason=%s", id, log_quote(g->service, qs, sizeof qs),
              log_quote(why, q, sizeof q));
    batcher_account_builder(b, g);
    g->sealed = true;
    batcher_group_due_now(g);
    kick = true;
    g = NULL;
  }
  if (!g) {
    pthread_mutex_unlock(&b->mu);
    drop = "unmergeable";
    snprintf(reason, sizeof reason, "cannot merge pprof: %s", why);
    goto fail_push;
  }
  if (g->cols.ngauge && batcher_gauge_offer(&g->gauges, &g->cols, push, why, sizeof why) != 0) {
    char q[300];
    log_event(LOG_ERROR, "a process's live heap is left as of its earlier push in this batch",
              "id=%s pid=%" PRIu32 " reason=%s", id, req->pid, log_quote(why, q, sizeof q));
  }
  if (batcher_group_add_id(g, id, &pid) != 0) {
    /* The profile is merged but we cannot remember its file: it would be
     * exported twice at worst (after a restart), never lost. */
    log_event(LOG_ERROR, "out of memory tracking a spool id", "id=%s", id);
  } else if (dedup_put(b->dx, &pid, tag, 0) != 0) {
    log_event(LOG_WARN, "out of memory indexing a push; a copy of it would not be recognised",
              "id=%s", id);
  }
  g->bytes += bytes;
  if (g->nids == 1)
    g->pid = req->pid;
  else if (g->pid != req->pid)
    g->pid_mixed = true;
  int64_t birth = batcher_push_birth(id, req, now_wall);
  if (birth < g->oldest_wall)
    g->oldest_wall = birth;
  if (req->start_time_nanos < g->start_ns)
    g->start_ns = req->start_time_nanos;
  if (req->end_time_nanos > g->end_ns)
    g->end_ns = req->end_time_nanos;
  batcher_account_builder(b, g);
  if (g->bytes >= GROUP_MAX_BYTES) {
    g->sealed = true;
    batcher_group_due_now(g);
    kick = true;
  }
  if (seal_for_memory(b))
    kick = true;
  help_pack_locked(b); /* wakes adds waiting for room when it frees some */
  batcher_publish_gauges(b, now_wall);
  if (kick)
    pthread_cond_broadcast(&b->cv); /* the batcher thread */
  pthread_mutex_unlock(&b->mu);
  goto out;

fail_push:;
  char q[400];
  log_event(LOG_ERROR, "push cannot be batched; moved to failed/", "id=%s reason=%s", id,
            log_quote(reason, q, sizeof q));
  metrics_drop(drop, 1);
  if (b->sp)
    spool_move_failed(b->sp, id, reason);
out:
  free(key);
  pp_push_free(push);
}

/* ---- export ---- */

/* Gives the encoder's buffer back; past the soft limit (a batch that big
 * is rare) or with one already kept, it is freed. */
static void keep_pack_buf(batcher *b, uint8_t *buf, size_t cap) {
  pthread_mutex_lock(&b->mu);
  if (buf && !b->pack_buf && cap <= b->merge_soft) {
    b->pack_buf = buf;
    b->pack_cap = cap;
    buf = NULL;
  }
  pthread_mutex_unlock(&b->mu);
  free(buf);
}

/* Packs, gzips and hashes a sealed group once (batcher thread, no lock, g
 * busy); the builder is freed by the caller under the lock (accounting). */
static int group_pack(batcher *b, group *g) {
  pthread_mutex_lock(&b->mu);
  uint8_t *raw = b->pack_buf, *gz = b->gz_spare;
  size_t cap = b->pack_cap, rawlen = 0, gzcap = b->gz_spare_cap;
  b->pack_buf = b->gz_spare = NULL;
  b->pack_cap = b->gz_spare_cap = 0;
  pthread_mutex_unlock(&b->mu);
  char why[256];
  int rc = 0;
  if (g->gauges.n && batcher_gauge_merge(&g->gauges, g->pb, why, sizeof why) != 0) {
    char q[300];
    log_event(LOG_ERROR, "cannot add the processes' latest gauge values to a batch", "reason=%s",
              log_quote(why, q, sizeof q));
    rc = -1;
  }
  if (rc == 0)
    rc = pp_builder_pack_reuse(g->pb, &raw, &cap, &rawlen);
  if (rc == 0)
    rc = pp_gzip_fast_into(raw, rawlen, &gz, &gzcap, &g->gzlen);
  g->gz = gz;
  g->gzcap = gzcap;
  keep_pack_buf(b, raw, cap);
  if (rc != 0 || manifest_hash_hex(g->gz, g->gzlen, g->hash) != 0) {
    free(g->gz);
    g->gz = NULL;
    g->gzcap = 0;
    return -1;
  }
  /* The object key holds the start time: fixed now, never "now" later. */
  if (g->start_ns == INT64_MAX || g->start_ns <= 0)
    g->start_ns = g->oldest_wall != INT64_MAX ? g->oldest_wall : wall_ns();
  return 0;
}

/* Makes g's manifest durable before its first export (batcher thread, no
 * lock, g busy). Without one (disk full, ...) the batch is still exported:
 * refusing would keep the spool from ever draining. */
static void write_manifest(batcher *b, group *g) {
  manifest m;
  memset(&m, 0, sizeof m);
  m.service = g->service;
  m.node = g->node ? g->node : b->node;
  m.subdir = g->subdir ? g->subdir : b->subdir;
  m.ptype = g->ptype;
  m.labels = g->label_store;
  m.nlabels = g->nlabels;
  m.start_ns = g->start_ns;
  m.end_ns = g->end_ns == INT64_MIN ? 0 : g->end_ns;
  m.born_ns = g->oldest_wall == INT64_MAX ? 0 : g->oldest_wall;
  memcpy(m.hash, g->hash, sizeof m.hash);
  m.gz = g->gz;
  m.gzlen = g->gzlen;
  m.members = g->nids ? calloc(g->nids, sizeof *m.members) : NULL;
  if (g->nids && !m.members) {
    log_event(LOG_WARN, "out of memory writing a batch manifest; exporting without one",
              "pushes=%zu", g->nids);
    return;
  }
  for (size_t i = 0; i < g->nids; i++) {
    memcpy(m.members[i].id, g->ids[i], SPOOL_ID_MAX);
    m.members[i].pushid = g->pids[i];
  }
  m.nmembers = g->nids;
  if (manifest_write(b->md, &m) == 0)
    memcpy(g->mf_name, m.name, sizeof g->mf_name);
  free(m.members);
}

/* Turns a sealed group's builder into its payload and manifest, then lets
 * both go from memory (the payload stays in memory only when no manifest
 * could be written). Called with b->mu held and g marked busy by the
 * caller; drops the lock meanwhile. */
static void prepare_group(batcher *b, group *g) {
  pthread_mutex_unlock(&b->mu);
  int rc = group_pack(b, g);
  /* Packed: its builder is emptied here, without the lock, for the next
   * batch (a failed reset leaves it to be freed). */
  bool reusable = rc == 0 && pp_builder_reset(g->pb) == 0;
  if (rc == 0 && b->md)
    write_manifest(b, g);
  bool on_disk = rc == 0 && g->mf_name[0];
  if (on_disk && b->sp) {
    /* The manifest is durable: the pushes leave the spool now, not at the
     * export (a held journal record costs the ring, not a file each). */
    spool_release(b->sp, (const char(*)[SPOOL_ID_MAX])g->ids, g->nids);
    spool_account(b->sp, (int64_t)g->gzlen, (int64_t)g->nids);
    g->released = true;
  }
  pthread_mutex_lock(&b->mu);
  /* With its manifest written, the payload stays only as a copy for the
   * first attempt (not read back and hashed again), and only while such
   * copies hold under the soft limit (a target down frees them at its first
   * failure). */
  if (on_disk && b->mem_payload + g->gzlen > b->merge_soft)
    batcher_give_back_gz_locked(b, g);
  if (rc != 0) {
    /* Out of memory packing: keep the builder and try again later. */
    log_event(LOG_ERROR, "cannot encode a merged profile (out of memory?); will retry",
              "pushes=%zu", g->nids);
    batcher_account_builder(b, g); /* the gauges it added are the builder's now */
    for (size_t t = 0; t < b->nex; t++)
      g->ts[t].next_attempt_mono = mono_ns() + b->backoff_base_ms * NS_PER_MS;
    return;
  }
  b->mem_merge -= g->pbmem;
  g->pbmem = 0;
  if (reusable && !b->spare_pb) {
    /* Over the soft limit with its spare chunks: keep the rest. */
    if (pp_builder_mem(g->pb) > b->merge_soft)
      pp_builder_drop_spares(g->pb);
    size_t pbm = pp_builder_mem(g->pb);
    if (pbm <= b->merge_soft) {
      b->spare_pb = g->pb;
      b->spare_pb_mem = pbm;
      g->pb = NULL;
    }
  }
  pp_builder_free(g->pb);
  g->pb = NULL;
  if (g->gz)
    b->mem_payload += g->gzlen;
  g->prepared = true;
}

/* The gzip payload of a prepared group for one attempt: its own buffer
 * when kept in memory, else read back from the manifest (*owned set). NULL
 * with err: *unreadable when no retry can bring it back (the manifest is
 * gone, cut short or corrupt), else out of memory. */
static const uint8_t *group_payload(batcher *b, group *g, uint8_t **owned, bool *unreadable,
                                    char *err, size_t errlen) {
  *owned = NULL;
  *unreadable = false;
  if (g->gz)
    return g->gz;
  char why[512];
  if (!b->md || !g->mf_name[0]) {
    *unreadable = true;
    snprintf(err, errlen, "the batch has neither a payload in memory nor a manifest");
    return NULL;
  }
  if (manifest_read_payload(b->md, g->mf_name, g->gzlen, g->hash, owned, why, sizeof why) != 0) {
    *unreadable = errno != ENOMEM;
    snprintf(err, errlen, "cannot read the batch back from its manifest: %s", why);
    return NULL;
  }
  return *owned;
}

/* export_group's answer when the payload is gone for good: the batch is
 * then given up (drop_unreadable), no target is charged. */
#define EXPORT_PAYLOAD_UNREADABLE (-100)

/* Offers g to target t (batcher thread, b->mu NOT held, g busy and prepared). */
static int export_group(batcher *b, group *g, size_t t, char *err, size_t errlen) {
  exporter *ex = b->ex[t];
  uint8_t *raw = NULL, *owned = NULL;
  size_t rawlen = 0;
  bool unreadable;
  const uint8_t *gz = group_payload(b, g, &owned, &unreadable, err, errlen);
  if (!gz)
    return unreadable ? EXPORT_PAYLOAD_UNREADABLE : EXPORT_RETRY;
  /* Only converting exporters (OTLP, Pyroscope) read the batch
   * uncompressed; file/s3/gs store the gzip bytes and skip the inflate. */
  if (ex->wants_pprof && pp_gunzip(gz, g->gzlen, PPROF_MAX_SIZE, &raw, &rawlen) != 0) {
    free(owned);
    snprintf(err, errlen, "cannot decompress the batch (out of memory?)");
    return EXPORT_RETRY;
  }
  export_object obj = {
      .service = g->service,
      .node = g->node ? g->node : b->node,
      .subdir = g->subdir ? g->subdir : b->subdir,
      .labels = g->labels,
      .nlabels = g->nlabels,
      .start_ns = g->start_ns == INT64_MAX ? 0 : g->start_ns,
      .end_ns = g->end_ns == INT64_MIN ? 0 : g->end_ns,
      .data = gz,
      .len = g->gzlen,
      .pprof = raw,
      .pprof_len = rawlen,
      .content_hash = g->hash,
      .pid = g->pid_mixed ? 0 : g->pid,
      .profile_type = g->ptype,
  };
  err[0] = '\0';
  ex->retry_after_s = -1;
  ex->drop_reason = NULL;
  int rc = ex->put(ex, &obj, err, errlen);
  g->ts[t].retry_after_s = rc == EXPORT_RETRY ? ex->retry_after_s : -1;
  free(raw);
  free(owned);
  if (rc != EXPORT_OK && rc != EXPORT_RETRY && rc != EXPORT_PERMANENT) {
    snprintf(err, errlen, "exporter %s returned unknown code %d", ex->scheme, rc);
    rc = EXPORT_RETRY;
  }
  if (rc != EXPORT_OK && !err[0])
    snprintf(err, errlen, "exporter %s gave no reason", ex->scheme);
  return rc;
}

/* Deletes (reason NULL) or moves to failed/ the spool files of a group that
 * is done and already unlinked, then frees it. Called with b->mu held; drops
 * it meanwhile: hundreds of unlinks must not stall the connection threads
 * waiting in batcher_add (each holding its decoded push in memory). */
static void retire_group(batcher *b, group *g, const char *reason) {
  b->mem_merge -= g->pbmem;
  g->pbmem = 0;
  if (g->gz)
    b->mem_payload -= g->gzlen;
  batcher_give_back_gz_locked(b, g);
  pthread_mutex_unlock(&b->mu);
  /* The manifest first: once it is a tombstone (or gone), losing the member
   * files to a crash midway can no longer cause a second export. */
  if (g->mf_name[0] && b->md) {
    if (!reason)
      manifest_mark_done(b->md, g->mf_name, g->gzlen);
    else if (g->released) /* the only copy of its pushes */
      manifest_move_failed(b->md, g->mf_name, reason);
    else
      manifest_remove(b->md, g->mf_name, false);
  }
  if (g->released && b->sp)
    spool_account(b->sp, -(int64_t)g->gzlen, -(int64_t)g->nids);
  else if (b->sp && !reason)
    spool_release(b->sp, (const char(*)[SPOOL_ID_MAX])g->ids, g->nids);
  for (size_t i = 0; b->sp && !g->released && reason && i < g->nids; i++)
    spool_move_failed(b->sp, g->ids[i], reason);
  batcher_group_free(g);
  /* While a load lasts, freed memory the heap keeps for the next batch is
   * bounded: past TRIM_SLACK (many small batches leave fragments) it goes
   * back now; the rest once nothing is merged (trim_when_idle_locked). */
  if (mallinfo2().fordblks > TRIM_SLACK)
    malloc_trim(0);
  pthread_mutex_lock(&b->mu);
  b->trim_due = true;
  pthread_cond_broadcast(&b->cv); /* room for adds waiting in wait_for_room_locked */
}

/* Exported (done) or given up (not done): its pushes' identities are then
 * remembered as exported, or forgotten. Lock held. */
static void settle_ids(batcher *b, group *g, bool done) {
  int64_t exp = wall_ns() + (int64_t)DEDUP_RETAIN_S * NS_PER_S;
  for (size_t i = 0; i < g->nids; i++) {
    if (done)
      (void)dedup_put(b->dx, &g->pids[i], dedup_file_tag(g->ids[i]), exp);
    else
      dedup_erase(b->dx, &g->pids[i]);
  }
}

/* The reasons the targets that refused g for good gave, one line. */
static void failed_reasons(const batcher *b, const group *g, char *out, size_t outlen) {
  size_t o = 0;
  out[0] = '\0';
  for (size_t t = 0; t < b->nex && o < outlen; t++)
    if (g->ts[t].failed)
      o += (size_t)snprintf(out + o, outlen - o, "%s%s%s%s", o ? "; " : "",
                            b->nex > 1 ? b->ex[t]->scheme : "", b->nex > 1 ? ": " : "",
                            g->ts[t].failed);
}

/* A failed attempt: the next one reads the manifest (lock held). */
static void drop_payload_copy(batcher *b, group *g) {
  if (!g->gz || !g->mf_name[0])
    return; /* none, or the only copy (no manifest) */
  b->mem_payload -= g->gzlen;
  batcher_give_back_gz_locked(b, g);
}

/* Handles the outcome of one attempt on target t. b->mu held (dropped
 * meanwhile when the group is done), g busy. The group leaves (and its
 * pushes the spool) once every target is done with it: exported when all
 * accepted it, else moved to failed/ with the refusals' reasons. */
static void finish_attempt(batcher *b, group *g, size_t t, int rc, const char *drop_reason,
                           const char *err, int64_t now) {
  char q[600];
  struct target_state *ts = &g->ts[t];
  int tm = b->target_metric[t];
  g->busy = false;
  if (rc == EXPORT_OK) {
    metrics_add(M_BATCHES_EXPORTED, 1);
    metrics_add(M_EXPORT_BYTES, g->gzlen);
    metrics_target_add(tm, MT_BATCHES_EXPORTED, 1);
    log_event(LOG_INFO, "batch exported", "service=%s pushes=%zu bytes=%zu attempts=%d dest=%s",
              log_quote(g->service, q, 300), g->nids, g->gzlen, ts->attempts + 1,
              log_quote(err, q + 300, 300));
    ts->done = true;
  } else if (rc == EXPORT_PERMANENT) {
    const char *why = drop_reason ? drop_reason : "export_permanent";
    metrics_add(M_EXPORT_FAILURES, 1);
    metrics_target_add(tm, MT_EXPORT_FAILURES, 1);
    metrics_target_add(tm, MT_BATCHES_REFUSED, 1);
    log_event(LOG_ERROR, "batch refused for good by a target; its pushes go to failed/",
              "service=%s pushes=%zu target=%s drop=%s reason=%s", log_quote(g->service, q, 200),
              g->nids, b->ex[t]->scheme, why, log_quote(err, q + 200, 400));
    metrics_drop(why, g->nids);
    ts->done = true;
    free(ts->failed);
    ts->failed = strdup(err && *err ? err : why);
  } else {
    metrics_add(M_EXPORT_FAILURES, 1);
    metrics_target_add(tm, MT_EXPORT_FAILURES, 1);
    drop_payload_copy(b, g);
    int64_t delay = backoff_ms(b, ts->attempts);
    /* The server's Retry-After is a floor under the jittered backoff. */
    if (ts->retry_after_s > 0 && (int64_t)ts->retry_after_s * 1000 > delay)
      delay = (int64_t)ts->retry_after_s * 1000;
    ts->attempts++;
    ts->next_attempt_mono = now + delay * NS_PER_MS;
    metrics_add(M_EXPORT_RETRIES, 1);
    metrics_target_add(tm, MT_EXPORT_RETRIES, 1);
    log_event(LOG_WARN, "export failed; will retry",
              "service=%s attempt=%d retry_in_ms=%" PRId64 " reason=%s target=%s",
              log_quote(g->service, q, 300), ts->attempts, delay, log_quote(err, q + 300, 300),
              b->ex[t]->scheme);
    return;
  }
  bool failed = false;
  for (size_t i = 0; i < b->nex; i++) {
    if (!g->ts[i].done)
      return; /* another target still owes it */
    failed |= g->ts[i].failed != NULL;
  }
  batcher_group_unlink(b, g);
  if (!failed) {
    settle_ids(b, g, true);
    retire_group(b, g, NULL);
    return;
  }
  char reasons[1024];
  failed_reasons(b, g, reasons, sizeof reasons);
  log_event(LOG_ERROR, "batch refused for good; pushes moved to failed/",
            "service=%s pushes=%zu reason=%s", log_quote(g->service, q, 300), g->nids,
            log_quote(reasons, q + 300, 300));
  settle_ids(b, g, false);
  retire_group(b, g, reasons);
}

/* A prepared group whose payload can no longer be read (its manifest cut
 * short, corrupt or deleted after it was written). The manifest was the only
 * copy of its pushes (they left the spool once it was durable), so the batch
 * is given up: the manifest is set aside (as at start), and its pushes are
 * counted as dropped (batch_unreadable) and logged. b->mu held (dropped
 * meanwhile), g busy. */
static void drop_unreadable(batcher *b, group *g, const char *why) {
  char q[600];
  batcher_group_unlink(b, g);
  settle_ids(b, g, false);
  pthread_mutex_unlock(&b->mu);
  if (g->mf_name[0] && b->md) {
    manifest_set_aside(b->md, g->mf_name, why);
    metrics_add(M_MANIFESTS_SET_ASIDE, 1);
  }
  if (g->released && b->sp)
    spool_account(b->sp, -(int64_t)g->gzlen, -(int64_t)g->nids);
  metrics_drop("batch_unreadable", g->nids);
  log_event(LOG_ERROR, "batch dropped: its manifest, the only copy of its pushes, is unreadable",
            "service=%s pushes=%zu reason=%s%s", log_quote(g->service, q, 300), g->nids,
            log_quote(why, q + 300, 300),
            g->released ? "" : " (its pushes stay in the spool for the next start)");
  pthread_mutex_lock(&b->mu);
  batcher_group_release(b, g);
}

/* Drops groups older than max_age_s (lock held). */
static void drop_expired(batcher *b, int64_t now_wall) {
  group **pp = &b->groups;
  while (*pp) {
    group *g = *pp;
    if (!g->busy && g->oldest_wall != INT64_MAX &&
        now_wall - g->oldest_wall > (int64_t)b->max_age_s * NS_PER_S) {
      char q[300];
      *pp = g->next;
      log_event(LOG_ERROR, "batch dropped: older than max age",
                "service=%s pushes=%zu "
                "max_age_s=%d attempts=%d",
                log_quote(g->service, q, sizeof q), g->nids, b->max_age_s, g->ts[0].attempts);
      metrics_drop("max_age", g->nids);
      settle_ids(b, g, false);
      if (g->mf_name[0] && b->md)
        manifest_remove(b->md, g->mf_name, false);
      if (g->released && b->sp)
        spool_account(b->sp, -(int64_t)g->gzlen, -(int64_t)g->nids);
      else if (b->sp)
        spool_release(b->sp, (const char(*)[SPOOL_ID_MAX])g->ids, g->nids);
      batcher_group_release(b, g);
      continue;
    }
    pp = &g->next;
  }
}

/* Freed batches' memory (merged builders, payloads, the encoder's buffer,
 * decode arenas) goes back to the system once nothing is being merged: RSS
 * follows the load down within a second (IDLE_WAKE_NS). Not after every
 * batch while a load lasts: the next batch would fault the same pages in
 * again. Lock held (dropped meanwhile). */
static void trim_when_idle_locked(batcher *b) {
  if (!b->trim_due || b->mem_merge != 0)
    return;
  b->trim_due = false;
  uint8_t *buf = b->pack_buf, *gz = b->gz_spare;
  pp_builder *pb = b->spare_pb;
  b->pack_buf = b->gz_spare = NULL;
  b->pack_cap = b->gz_spare_cap = b->spare_pb_mem = 0;
  b->spare_pb = NULL;
  pthread_mutex_unlock(&b->mu);
  free(buf);
  free(gz);
  pp_builder_free(pb);
  pp_pprof_cache_trim();
  malloc_trim(0);
  pthread_mutex_lock(&b->mu);
}

/* The batcher's loop; runs on its thread, or inline in batcher_shutdown when
 * the thread was never started. Enters and leaves with b->mu held. */
static void run_locked(batcher *b) {
  char err[1024];
  for (;;) {
    int64_t now = mono_ns();
    int64_t now_wall = wall_ns();
    drop_expired(b, now_wall);
    if (now >= b->next_prune_mono) {
      b->next_prune_mono = now + PRUNE_EVERY_NS;
      dedup_expire(b->dx, now_wall);
      if (b->md) {
        pthread_mutex_unlock(&b->mu);
        manifest_prune_done(b->md, now_wall - (int64_t)DEDUP_RETAIN_S * NS_PER_S);
        pthread_mutex_lock(&b->mu);
      }
    }
    if (b->stopping && (!b->groups || now >= b->stop_deadline_mono))
      break;
    group *prep = NULL;
    group *due = NULL;
    int due_t = -1;
    int64_t wake = now + IDLE_WAKE_NS;
    if (b->stopping && b->stop_deadline_mono < wake)
      wake = b->stop_deadline_mono;
    for (group *g = b->groups; g; g = g->next) {
      if (!g->sealed) {
        int64_t end = g->opened_mono + (int64_t)b->window_s * NS_PER_S;
        if (b->stopping || now >= end) {
          g->sealed = true;
          batcher_group_due_now(g);
        } else if (end < wake) {
          wake = end;
        }
      }
      if (g->sealed && !g->busy && !g->prepared) {
        /* Packing comes before exports: it is what frees memory. */
        if (!prep && g->pb && batcher_group_due_target(b, g, now, &(int64_t){0}) >= 0)
          prep = g;
      } else if (g->sealed && !g->busy) {
        int64_t next;
        int t = batcher_group_due_target(b, g, now, &next);
        if (t >= 0 && !due) {
          due = g;
          due_t = t;
        }
        if (next < wake)
          wake = next;
      }
    }
    trim_when_idle_locked(b);
    batcher_publish_gauges(b, now_wall);
    if (prep) {
      prep->busy = true;
      prepare_group(b, prep);
      prep->busy = false;
      pthread_cond_broadcast(&b->cv); /* adds waiting for room */
      continue;
    }
    if (due) {
      due->busy = true;
      pthread_mutex_unlock(&b->mu);
      int rc = export_group(b, due, (size_t)due_t, err, sizeof err);
      const char *drop_reason = rc == EXPORT_PERMANENT ? b->ex[due_t]->drop_reason : NULL;
      pthread_mutex_lock(&b->mu);
      if (rc == EXPORT_PAYLOAD_UNREADABLE) {
        drop_unreadable(b, due, err);
        continue;
      }
      finish_attempt(b, due, (size_t)due_t, rc, drop_reason, err, mono_ns());
      continue;
    }
    struct timespec ts = {.tv_sec = wake / NS_PER_S, .tv_nsec = wake % NS_PER_S};
    int rc = pthread_cond_timedwait(&b->cv, &b->mu, &ts);
    if (rc != 0 && rc != ETIMEDOUT && rc != EINTR)
      break;
  }
  batcher_publish_gauges(b, wall_ns());
}

static void *thread_main(void *arg) {
  batcher *b = arg;
  /* Exports (merge, gzip, upload) are background work: on a busy CPU the
   * listener's threads, whose acks clients wait for, go first. Linux applies
   * a nice value to the calling thread alone. */
  if (setpriority(PRIO_PROCESS, (id_t)gettid(), BATCHER_NICE) != 0)
    log_event(LOG_DEBUG, "cannot lower the batcher thread's priority", "errno=%d", errno);
  pthread_mutex_lock(&b->mu);
  run_locked(b);
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

int batcher_start(batcher *b) {
  pthread_mutex_lock(&b->mu);
  if (b->started || b->closed) {
    pthread_mutex_unlock(&b->mu);
    return -1;
  }
  int rc = pthread_create(&b->thread, NULL, thread_main, b);
  if (rc == 0)
    b->started = true;
  pthread_mutex_unlock(&b->mu);
  if (rc != 0) {
    char q[128];
    log_event(LOG_ERROR, "cannot start the batcher thread", "err=%s",
              log_quote(strerror(rc), q, sizeof q));
    return -1;
  }
  return 0;
}

void batcher_shutdown(batcher *b, int grace_s) {
  if (!b)
    return;
  pthread_mutex_lock(&b->mu);
  if (b->closed) {
    pthread_mutex_unlock(&b->mu);
    return;
  }
  b->stopping = true;
  b->stop_deadline_mono = mono_ns() + (int64_t)(grace_s > 0 ? grace_s : 0) * NS_PER_S;
  /* Whatever was waiting out a backoff gets one more try now. */
  for (group *g = b->groups; g; g = g->next)
    if (g->sealed && !g->busy)
      batcher_group_due_now(g);
  bool started = b->started;
  pthread_cond_broadcast(&b->cv);
  if (!started)
    run_locked(b);
  pthread_mutex_unlock(&b->mu);
  if (started && !b->joined) {
    pthread_join(b->thread, NULL);
    b->joined = true;
  }
  pthread_mutex_lock(&b->mu);
  b->closed = true;
  size_t left = 0, pushes = 0;
  while (b->groups) {
    group *g = b->groups;
    b->groups = g->next;
    left++;
    pushes += g->nids;
    batcher_group_release(b, g);
  }
  metrics_set(G_PENDING_BATCHES, 0);
  metrics_set(G_MEMORY_BATCHES, 0);
  pthread_mutex_unlock(&b->mu);
  if (left)
    log_event(LOG_WARN, "shutdown: batches not exported stay in the spool for the next start",
              "batches=%zu pushes=%zu grace_s=%d", left, pushes, grace_s);
}

void batcher_free(batcher *b) {
  if (!b)
    return;
  if (b->started && !b->joined)
    batcher_shutdown(b, 0);
  while (b->groups) {
    group *g = b->groups;
    b->groups = g->next;
    batcher_group_free(g);
  }
  if (b->sp)
    spool_set_drop_batch(b->sp, NULL, NULL);
  free(b->pack_buf);
  free(b->gz_spare);
  pp_builder_free(b->spare_pb);
  free(b->node);
  free(b->subdir);
  dedup_free(b->dx);
  manifest_dir_close(b->md);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b);
}
