/* The durable spool. A pending push is either a record held in the journal
 * (acked from there, and kept there until its batch's manifest is durable:
 * most pushes never get a file) or one file <dir>/<id>, where id is
 * "<20-digit ns timestamp>-<10-digit counter>.push" for our own writes (so
 * names sort oldest first) or any "*.push" name a client dropped in. Held
 * records get a file of their own (spill) only when the ring runs short
 * (batches held open longer than the ring lasts) or before they move to
 * failed/.
 *
 * Locking: one mutex guards the table of known files and the byte count.
 * The slow parts (writing + fsync of a new file, reading + decoding a file
 * found by a scan, and the scan's callback) run outside it: a put reserves its bytes first, a scan
 * claims the names it found first, so two threads never handle one file.
 * Callbacks run without the lock held (they take the batcher's lock, and the
 * batcher calls back into the spool). The directory fsync after a rename is
 * shared by concurrent puts (group commit, sync_dir_after); sync_mu is taken
 * before mu, never the other way round. */
#include "spool_int.h"

/* ---- helpers ---- */

/* What counts against max_bytes: pushes in files and in the journal,
 * reservations of puts in flight, pending batches' manifests. Lock held. */
static uint64_t used_locked(const spool *s) {
  return s->bytes + s->batch_bytes;
}

/* Pushes not yet exported: files, held records, pending batches' members.
 * Lock held. */
static size_t pushes_locked(const spool *s) {
  return s->pending.n + s->held.n + (size_t)s->batch_pushes;
}

void spool_publish_gauges(spool *s) {
  metrics_set(G_SPOOL_BYTES, (int64_t)used_locked(s));
  metrics_set(G_SPOOL_FILES, (int64_t)pushes_locked(s));
}

bool spool_has_suffix(const char *name, const char *suffix) {
  size_t n = strlen(name), m = strlen(suffix);
  return n >= m && memcmp(name + n - m, suffix, m) == 0;
}

/* An id names a file directly inside the spool dir: no '/', no leading '.'. */
static bool id_ok(const char *id) {
  size_t n = id ? strnlen(id, SPOOL_ID_MAX) : SPOOL_ID_MAX;
  return n > 0 && n < SPOOL_ID_MAX && id[0] != '.' && !strchr(id, '/') &&
         spool_has_suffix(id, PP_SPOOL_SUFFIX);
}

static int mkdir_at(int dfd, const char *name) {
  if (mkdirat(dfd, name, 0750) == 0 || errno == EEXIST)
    return 0;
  return -1;
}

/* Writes <name>.reason = reason + "\n" into dfd (best effort, logged). */
static void write_reason(int dfd, const char *name, const char *reason) {
  char rname[SPOOL_ID_MAX + 16];
  snprintf(rname, sizeof rname, "%s.reason", name);
  int fd = openat(dfd, rname, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0)
    goto fail;
  size_t len = strlen(reason);
  if (fsutil_write_all(fd, (const uint8_t *)reason, len) != 0 ||
      fsutil_write_all(fd, (const uint8_t *)"\n", 1) != 0 || fsync(fd) != 0) {
    close(fd);
    goto fail;
  }
  if (close(fd) != 0)
    goto fail;
  return;
fail:;
  char q[256];
  log_event(LOG_WARN, "cannot write reason file", "file=%s err=%s", name,
            log_quote(strerror(errno), q, sizeof q));
}

/* Moves name out of the spool dir into quarantine/ (counted, logged). On
 * failure the name is remembered so it is never picked up again. Lock held. */
void spool_quarantine_locked(spool *s, const char *name, const char *why) {
  char qwhy[512], qerr[128];
  metrics_add(M_SPOOL_QUARANTINED, 1);
  if (renameat(s->dirfd, name, s->qfd, name) == 0) {
    write_reason(s->qfd, name, why);
    if (fsync(s->dirfd) != 0 || fsync(s->qfd) != 0)
      log_event(LOG_WARN, "fsync after quarantine failed", "file=%s err=%s", name,
                log_quote(strerror(errno), qerr, sizeof qerr));
    log_event(LOG_WARN, "spool file quarantined", "file=%s/%s/%s reason=%s", s->dir, QUARANTINE_DIR,
              name, log_quote(why, qwhy, sizeof qwhy));
    return;
  }
  int e = errno;
  if (strnlen(name, SPOOL_ID_MAX) < SPOOL_ID_MAX && spool_set_insert(&s->bad, name, 0) != 0)
    log_event(LOG_ERROR, "out of memory remembering a bad spool file", "file=%s", name);
  log_event(LOG_ERROR, "cannot quarantine spool file; ignoring it until restart",
            "file=%s/%s reason=%s err=%s fix=\"check permissions of %s\"", s->dir, name,
            log_quote(why, qwhy, sizeof qwhy), log_quote(strerror(e), qerr, sizeof qerr), s->dir);
}

static bool room_to_recycle(spool *s);
static size_t spill(spool *s, const char *only);
static int remove_file(spool *s, const char *id);
static void trim_recycled(spool *s, bool all);

/* A previous run's recycled file joins the ring (at open, no other thread
 * yet): false if it is not ours to reuse (odd name, not a regular file,
 * too big, ring full), and the caller deletes it. */
static bool adopt_recycled(spool *s, const char *name) {
  const char *num = name + strlen(RECYCLE_PREFIX);
  char *end;
  struct stat st;
  errno = 0;
  unsigned long n = strtoul(num, &end, 10);
  if (!*num || *end || errno || n > UINT32_MAX || s->rc_count == RECYCLE_MAX ||
      fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size > RECYCLE_FILE_MAX)
    return false;
  if (!s->recycle && !(s->recycle = calloc(RECYCLE_MAX, sizeof *s->recycle)))
    return false;
  /* seq 0: reusable once the directory fsync that follows the scan is done. */
  s->recycle[(s->rc_head + s->rc_count) % RECYCLE_MAX] =
      (struct recycled){.n = (uint32_t)n, .bytes = (uint64_t)st.st_size};
  s->rc_count++;
  s->rc_bytes += (uint64_t)st.st_size;
  if (n >= s->rc_ctr)
    s->rc_ctr = (uint32_t)n + 1; /* new names never replace an adopted one */
  return true;
}

/* Forgets and deletes every recycled file (at open, no other thread yet). */
static void drop_recycled(spool *s) {
  for (size_t i = 0; i < s->rc_count; i++) {
    char name[SPOOL_ID_MAX];
    snprintf(name, sizeof name, RECYCLE_PREFIX "%" PRIu32,
             s->recycle[(s->rc_head + i) % RECYCLE_MAX].n);
    unlinkat(s->dirfd, name, 0);
  }
  s->rc_head = s->rc_count = 0;
  s->rc_bytes = 0;
}

/* Deletes dot temp files left by a crashed writer. Recent ones may belong to
 * a client writing a drop-in right now, so only stale ones go. Adopts a
 * previous run's recycled files (see RECYCLE_MAX), or deletes them when
 * the file system is short of room. */
static void remove_stale_temps(spool *s) {
  int fd = dup(s->dirfd);
  if (fd < 0)
    return;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  time_t now = time(NULL);
  bool adopt = room_to_recycle(s);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *n = de->d_name;
    if (n[0] != '.' || strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
      continue;
    if (strncmp(n, RECYCLE_PREFIX, strlen(RECYCLE_PREFIX)) == 0) {
      if (!adopt || !adopt_recycled(s, n))
        unlinkat(s->dirfd, n, 0);
      continue;
    }
    if (!strstr(n, PP_SPOOL_SUFFIX))
      continue;
    struct stat st;
    if (fstatat(s->dirfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (now - st.st_mtime < STALE_TEMP_S)
      continue;
    if (unlinkat(s->dirfd, n, 0) == 0)
      log_event(LOG_INFO, "removed stale spool temp file", "file=%s/%s", s->dir, n);
  }
  closedir(d);
  /* The names a crash could still take back become durable before any
   * adopted file is overwritten. */
  if (s->rc_count && fsync(s->dirfd) != 0)
    drop_recycled(s);
  trim_recycled(s, false);
}

static int replay_cb(void *arg, const char *id, const uint8_t *frame, size_t len);

/* ---- open / close ---- */

spool *spool_open(const spool_config *cfg, char *err, size_t errlen) {
  spool *s = NULL;
  if (!cfg || !cfg->dir || !*cfg->dir) {
    snprintf(err, errlen, "spool directory not set (set --spool DIR)");
    return NULL;
  }
  s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory opening spool %s", cfg->dir);
    return NULL;
  }
  s->dirfd = s->qfd = s->ffd = -1;
  if (pthread_mutex_init(&s->mu, NULL) != 0) {
    snprintf(err, errlen, "cannot init spool mutex");
    free(s);
    return NULL;
  }
  if (pthread_mutex_init(&s->sync_mu, NULL) != 0) {
    snprintf(err, errlen, "cannot init spool mutex");
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
  }
  if (pthread_mutex_init(&s->spill_mu, NULL) != 0) {
    snprintf(err, errlen, "cannot init spool mutex");
    pthread_mutex_destroy(&s->sync_mu);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
  }
  if (pthread_cond_init(&s->sync_cv, NULL) != 0) {
    snprintf(err, errlen, "cannot init spool condition variable");
    pthread_mutex_destroy(&s->spill_mu);
    pthread_mutex_destroy(&s->sync_mu);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
  }
  s->max_bytes = cfg->max_bytes;
  s->drop_oldest = cfg->drop_oldest;
  s->dir = strdup(cfg->dir);
  if (!s->dir) {
    snprintf(err, errlen, "out of memory opening spool %s", cfg->dir);
    goto fail;
  }
  if (fsutil_mkdir_p(s->dir) != 0) {
    snprintf(err, errlen, "cannot create spool directory %s: %s (create it or set --spool)", s->dir,
             strerror(errno));
    goto fail;
  }
  s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dirfd < 0) {
    snprintf(err, errlen, "cannot open spool directory %s: %s (check it exists and is ours)",
             s->dir, strerror(errno));
    goto fail;
  }
  /* Pushes hold code layout and labels (trace ids, routes), and a file
   * dropped in is taken as a push: other users get nothing here. */
  mode_t was = 0;
  switch (fsutil_dir_others(s->dirfd, &was)) {
  case FSUTIL_OTHERS_READ:
    log_event(LOG_WARN, "spool directory is readable by other users", "dir=%s mode=%04o fix=%s",
              s->dir, (unsigned)was, "\"chmod o-rwx DIR\"");
    break;
  case FSUTIL_OTHERS_CLOSED:
    log_event(LOG_WARN, "spool directory was writable by other users; removed their access",
              "dir=%s mode=%04o now=%04o", s->dir, (unsigned)was, (unsigned)(was & ~07u));
    break;
  case FSUTIL_OTHERS_WRITE:
    log_event(LOG_WARN, "spool directory is writable by other users: they can drop pushes in",
              "dir=%s mode=%04o fix=%s", s->dir, (unsigned)was,
              "\"give the spool a directory of its own, chmod o-rwx DIR\"");
    break;
  default:
    break;
  }
  if (mkdir_at(s->dirfd, QUARANTINE_DIR) != 0 || mkdir_at(s->dirfd, FAILED_DIR) != 0) {
    snprintf(err, errlen, "cannot create %s/%s or %s/%s: %s (check permissions of %s)", s->dir,
             QUARANTINE_DIR, s->dir, FAILED_DIR, strerror(errno), s->dir);
    goto fail;
  }
  s->qfd = openat(s->dirfd, QUARANTINE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  s->ffd = openat(s->dirfd, FAILED_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (s->qfd < 0 || s->ffd < 0) {
    snprintf(err, errlen, "cannot open %s/%s or %s/%s: %s (they must be directories)", s->dir,
             QUARANTINE_DIR, s->dir, FAILED_DIR, strerror(errno));
    goto fail;
  }
  if (faccessat(s->dirfd, ".", W_OK, AT_EACCESS) != 0) {
    snprintf(err, errlen, "spool directory %s is not writable: %s (fix its owner or mode)", s->dir,
             strerror(errno));
    goto fail;
  }
  if (cfg->journal_bytes) {
    if (cfg->journal_bytes < JOURNAL_MIN_BYTES) {
      snprintf(err, errlen,
               "journal of %llu bytes is too small (set --journal-bytes to 0 to turn it off, or "
               "to at least 1MiB)",
               (unsigned long long)cfg->journal_bytes);
      goto fail;
    }
    char jerr[256];
    s->j = journal_open(s->dirfd, s->dir, cfg->journal_bytes, replay_cb, s, jerr, sizeof jerr);
    if (!s->j)
      log_event(LOG_ERROR, "spool journal not used; acks wait for each push's own file", "why=%s",
                log_quote(jerr, err, errlen));
  } else {
    /* No journal now, but a previous run's may still hold acked pushes:
     * replayed into files, then deleted. */
    struct stat st;
    if (fstatat(s->dirfd, JOURNAL_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      char jerr[256];
      journal *old =
          journal_open(s->dirfd, s->dir, (uint64_t)st.st_size, replay_cb, s, jerr, sizeof jerr);
      journal_close(old);
      if (!old)
        log_event(LOG_ERROR, "cannot replay the journal a previous run left; it stays",
                  "file=%s/%s why=%s", s->dir, JOURNAL_NAME, log_quote(jerr, err, errlen));
      else if (unlinkat(s->dirfd, JOURNAL_NAME, 0) == 0)
        log_event(LOG_INFO, "journal off: the previous run's journal was replayed and removed",
                  "file=%s/%s", s->dir, JOURNAL_NAME);
    }
  }
  remove_stale_temps(s);
  spool_publish_gauges(s);
  return s;
fail:
  spool_close(s);
  return NULL;
}

void spool_close(spool *s) {
  if (!s)
    return;
  journal_close(s->j); /* held pushes stay in it for the next start */
  free(s->held.v);
  free(s->recycle); /* the files stay for the next start (see RECYCLE_MAX) */
  if (s->dirfd >= 0)
    close(s->dirfd);
  if (s->qfd >= 0)
    close(s->qfd);
  if (s->ffd >= 0)
    close(s->ffd);
  free(s->pending.v);
  free(s->bad.v);
  free(s->dir);
  pthread_cond_destroy(&s->sync_cv);
  pthread_mutex_destroy(&s->spill_mu);
  pthread_mutex_destroy(&s->sync_mu);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- put ---- */

/* Drops the oldest pending push file, or else the oldest held record, to
 * make room (--spool-drop-oldest; counted, logged): its push, if a batch
 * still merges it in memory, is then exported without a durable copy.
 * False if there is none to drop. Takes the lock. */
static bool drop_oldest_push(spool *s) {
  char q[128];
  pthread_mutex_lock(&s->mu);
  if (s->pending.n) {
    spool_entry victim = s->pending.v[0];
    if (unlinkat(s->dirfd, victim.id, 0) != 0 && errno != ENOENT) {
      log_event(LOG_ERROR, "cannot delete oldest spool file to make room", "file=%s/%s err=%s",
                s->dir, victim.id, log_quote(strerror(errno), q, sizeof q));
      pthread_mutex_unlock(&s->mu);
      return false;
    }
    spool_set_erase(&s->pending, victim.id, NULL);
    s->bytes -= victim.bytes;
    spool_publish_gauges(s);
    pthread_mutex_unlock(&s->mu);
    metrics_drop("spool_full_drop_oldest", 1);
    log_event(LOG_WARN, "spool full: dropped oldest push",
              "file=%s bytes=%" PRIu64 " max_bytes=%" PRIu64, victim.id, victim.bytes,
              s->max_bytes);
    return true;
  }
  for (size_t i = 0; i < s->held.n; i++) {
    if (s->held.v[i].state != HELD_LIVE)
      continue;
    spool_entry victim = s->held.v[i];
    spool_set_erase(&s->held, victim.id, NULL);
    s->bytes -= victim.bytes;
    spool_publish_gauges(s);
    pthread_mutex_unlock(&s->mu);
    if (journal_release(s->j, &victim.rec) != 0)
      log_event(LOG_ERROR, "cannot release a dropped push's journal record; a restart replays it",
                "id=%s", victim.id);
    metrics_drop("spool_full_drop_oldest", 1);
    log_event(LOG_WARN, "spool full: dropped oldest push",
              "id=%s bytes=%" PRIu64 " max_bytes=%" PRIu64, victim.id, victim.bytes, s->max_bytes);
    return true;
  }
  pthread_mutex_unlock(&s->mu);
  return false;
}

/* Reserves len bytes if they fit (SPOOL_OK), else SPOOL_FULL; with
 * may_drop and --spool-drop-oldest, first drops the oldest pending batch
 * (the batcher's drop_batch: batches hold the oldest pushes), then the
 * oldest push, until they fit. Takes the lock; calls drop_batch without. */
static int reserve(spool *s, uint64_t len, bool may_drop) {
  for (;;) {
    pthread_mutex_lock(&s->mu);
    if (s->max_bytes == 0 || used_locked(s) + len <= s->max_bytes) {
      s->bytes += len;
      spool_publish_gauges(s);
      pthread_mutex_unlock(&s->mu);
      return SPOOL_OK;
    }
    bool batches = s->batch_bytes > 0 && s->drop_batch;
    pthread_mutex_unlock(&s->mu);
    if (!may_drop || !s->drop_oldest || len > s->max_bytes)
      return SPOOL_FULL;
    if (batches && s->drop_batch(s->drop_arg))
      continue;
    if (!drop_oldest_push(s))
      return SPOOL_FULL;
  }
}

/* Returns once a directory fsync that started after rename number seq has
 * succeeded (0), or one covering it failed (-1, errno set). One thread runs
 * the fsync for every rename made before it started; the others wait. */
static int sync_dir_after(spool *s, uint64_t seq) {
  int rc = 0;
  pthread_mutex_lock(&s->sync_mu);
  for (;;) {
    if (seq > s->fail_lo && seq <= s->fail_hi) {
      errno = s->fail_errno;
      rc = -1;
      break;
    }
    if (s->synced >= seq)
      break;
    if (s->syncing) {
      pthread_cond_wait(&s->sync_cv, &s->sync_mu);
      continue;
    }
    s->syncing = true;
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->renamed; /* >= seq: renames complete before they count */
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->sync_mu);
    int r = fsync(s->dirfd);
    int e = errno;
    pthread_mutex_lock(&s->sync_mu);
    s->syncing = false;
    if (r == 0) {
      if (target > s->synced)
        s->synced = target;
    } else {
      s->fail_lo = s->synced;
      s->fail_hi = target;
      s->fail_errno = e;
    }
    pthread_cond_broadcast(&s->sync_cv);
  }
  pthread_mutex_unlock(&s->sync_mu);
  return rc;
}

/* A full disk fails every push until space returns: log it once a second,
 * not once a push (each refusal is still counted by the listener). */
static bool nospace_log_allowed(void) {
  static _Atomic int64_t last_s = -1;
  int64_t now = (int64_t)time(NULL), prev = atomic_load(&last_s);
  return prev != now && atomic_compare_exchange_strong(&last_s, &prev, now);
}

/* Undoes a failed write: removes the file, gives its bytes back, logs. */
static int put_failed(spool *s, spool_txn *t, bool renamed) {
  int e = errno;
  char q[128];
  if (t->fd >= 0)
    close(t->fd);
  t->fd = -1;
  unlinkat(s->dirfd, renamed ? t->name : t->tmp, 0);
  pthread_mutex_lock(&s->mu);
  s->bytes -= t->len;
  spool_publish_gauges(s);
  pthread_mutex_unlock(&s->mu);
  bool nospace = e == ENOSPC || e == EDQUOT;
  if (!nospace || nospace_log_allowed())
    log_event(LOG_ERROR, "cannot write spool file",
              "dir=%s err=%s fix=\"free disk space or fix %s\"", s->dir,
              log_quote(strerror(e), q, sizeof q), s->dir);
  return nospace ? SPOOL_NOSPACE : SPOOL_EIO;
}

/* Reserves len bytes and names the push. */
static int reserve_name(spool *s, size_t len, spool_txn *t, bool may_drop) {
  struct timespec ts;
  int rc;

  t->fd = -1;
  t->len = len;
  t->name[0] = t->tmp[0] = '\0';
  t->jrec.rseq = 0;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return SPOOL_EIO;
  /* Without may_drop the caller decides after validating the push. */
  rc = reserve(s, len, may_drop);
  pthread_mutex_lock(&s->mu);
  uint32_t ctr = s->counter++;
  pthread_mutex_unlock(&s->mu);
  if (rc == SPOOL_OK)
    snprintf(t->name, sizeof t->name, "%020" PRIu64 "-%010" PRIu32 "%s",
             (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, ctr, PP_SPOOL_SUFFIX);
  return rc;
}

static int take_recycled(spool *s, char *tmp, size_t tmplen);

/* Writes the reserved push to its temp file: a recycled one (see
 * RECYCLE_MAX) overwritten and cut to the push, else a new one. */
static int write_temp(spool *s, const uint8_t *frame, size_t len, spool_txn *t) {
  bool reused = (t->fd = take_recycled(s, t->tmp, sizeof t->tmp)) >= 0;
  if (!reused) {
    snprintf(t->tmp, sizeof t->tmp, ".%s", t->name);
    t->fd = openat(s->dirfd, t->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
  }
  if (t->fd < 0 || fsutil_write_all(t->fd, frame, len) != 0 ||
      (reused && ftruncate(t->fd, (off_t)len) != 0))
    return put_failed(s, t, false);
  return SPOOL_OK;
}

int spool_begin(spool *s, const uint8_t *frame, size_t len, spool_txn *t) {
  int rc = reserve_name(s, len, t, false);
  if (rc != SPOOL_OK)
    return rc;
  /* The journal is the fast way to durable. A ring full up to a record
   * still held (its batch not sealed yet) gets room by spilling the oldest
   * held records to files; a frame too big for it, or no room even then,
   * gets its own file right away. */
  if (s->j && journal_append(s->j, t->name, frame, len, &t->jrec) == 0)
    return SPOOL_OK;
  if (s->j && errno == ENOSPC && spill(s, NULL) > 0 &&
      journal_append(s->j, t->name, frame, len, &t->jrec) == 0)
    return SPOOL_OK;
  rc = write_temp(s, frame, len, t);
  /* Only a hint that lets the disk work while the caller validates; the
   * fsync in spool_commit is what makes the file durable. */
  if (rc == SPOOL_OK && sync_file_range(t->fd, 0, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0)
    log_event(LOG_DEBUG, "sync_file_range failed (ignored)", "errno=%d", errno);
  return rc;
}

/* Gives a reservation back. */
static void unreserve(spool *s, size_t len) {
  pthread_mutex_lock(&s->mu);
  s->bytes -= len;
  spool_publish_gauges(s);
  pthread_mutex_unlock(&s->mu);
}

void spool_abort(spool *s, spool_txn *t) {
  if (t->jrec.rseq) {
    journal_abort(s->j, &t->jrec);
    unreserve(s, t->len);
    return;
  }
  if (t->fd < 0)
    return;
  close(t->fd);
  t->fd = -1;
  if (unlinkat(s->dirfd, t->tmp, 0) != 0 && errno != ENOENT) {
    char q[128];
    log_event(LOG_WARN, "cannot remove spool temp file", "file=%s/%s err=%s", s->dir, t->tmp,
              log_quote(strerror(errno), q, sizeof q));
  }
  unreserve(s, t->len);
}

int spool_commit(spool *s, spool_txn *t, char id[SPOOL_ID_MAX]) {
  if (t->jrec.rseq) {
    if (journal_sync(s->j, &t->jrec) != 0) {
      journal_abort(s->j, &t->jrec);
      unreserve(s, t->len);
      return SPOOL_EIO; /* logged by the journal; the client retries */
    }
    /* Held until spool_release: its reservation becomes its bytes. */
    pthread_mutex_lock(&s->mu);
    spool_entry *e = NULL;
    if (spool_set_insert(&s->held, t->name, t->len) == 0 &&
        (e = spool_set_find(&s->held, t->name))) {
      e->rec = t->jrec;
      e->state = HELD_LIVE;
      spool_publish_gauges(s);
    }
    pthread_mutex_unlock(&s->mu);
    if (!e) {
      journal_abort(s->j, &t->jrec);
      unreserve(s, t->len);
      log_event(LOG_ERROR, "out of memory holding a journaled push; refused", "id=%s", t->name);
      return SPOOL_EIO;
    }
    memcpy(id, t->name, SPOOL_ID_MAX);
    return SPOOL_OK;
  }
  if (t->fd < 0)
    return SPOOL_EIO;
  if (fsync(t->fd) != 0)
    return put_failed(s, t, false);
  int fd = t->fd;
  t->fd = -1;
  if (close(fd) != 0)
    return put_failed(s, t, false);
  pthread_mutex_lock(&s->mu);
  if (renameat(s->dirfd, t->tmp, s->dirfd, t->name) != 0) {
    pthread_mutex_unlock(&s->mu);
    return put_failed(s, t, false);
  }
  if (spool_set_insert(&s->pending, t->name, t->len) != 0) {
    pthread_mutex_unlock(&s->mu);
    errno = ENOMEM;
    return put_failed(s, t, true);
  }
  uint64_t seq = ++s->renamed;
  pthread_mutex_unlock(&s->mu);
  if (sync_dir_after(s, seq) != 0) {
    int e = errno;
    pthread_mutex_lock(&s->mu);
    spool_set_erase(&s->pending, t->name, NULL);
    pthread_mutex_unlock(&s->mu);
    errno = e;
    return put_failed(s, t, true);
  }
  memcpy(id, t->name, SPOOL_ID_MAX);
  return SPOOL_OK;
}

int spool_put(spool *s, const uint8_t *frame, size_t len, char id[SPOOL_ID_MAX]) {
  spool_txn t;
  int rc = reserve_name(s, len, &t, true);
  if (rc == SPOOL_OK)
    rc = write_temp(s, frame, len, &t);
  return rc == SPOOL_OK ? spool_commit(s, &t, id) : rc;
}

/* ---- journal ---- */

/* Copies len bytes of the journal from off to fd (at its file position). */
static int copy_from_journal(spool *s, int fd, uint64_t off, size_t len) {
  int jfd = journal_fd(s->j);
  loff_t in = (loff_t)off;
  while (len > 0) {
    ssize_t n = copy_file_range(jfd, &in, fd, NULL, len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; /* not supported here: copy through memory */
    len -= (size_t)n;
  }
  if (len == 0)
    return 0;
  size_t cap = len < (1u << 20) ? len : (1u << 20);
  uint8_t *b = malloc(cap);
  if (!b)
    return -1;
  while (len > 0) {
    size_t want = len < cap ? len : cap;
    ssize_t r = pread(jfd, b, want, (off_t)in);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || fsutil_write_all(fd, b, (size_t)r) != 0) {
      if (r == 0)
        errno = EIO;
      free(b);
      return -1;
    }
    in += r;
    len -= (size_t)r;
  }
  free(b);
  return 0;
}

/* The oldest recycled file, if its rename is durable, opened for writing at
 * offset 0 (its name in tmp); -1 if none is ready. */
static int take_recycled(spool *s, char *tmp, size_t tmplen) {
  pthread_mutex_lock(&s->sync_mu);
  uint64_t synced = s->synced;
  pthread_mutex_unlock(&s->sync_mu);
  for (;;) {
    pthread_mutex_lock(&s->mu);
    struct recycled *e = s->rc_count ? &s->recycle[s->rc_head] : NULL;
    if (!e || e->busy || e->seq > synced) {
      pthread_mutex_unlock(&s->mu);
      return -1;
    }
    uint32_t n = e->n;
    s->rc_bytes -= e->bytes;
    s->rc_head = (s->rc_head + 1) % RECYCLE_MAX;
    s->rc_count--;
    pthread_mutex_unlock(&s->mu);
    snprintf(tmp, tmplen, RECYCLE_PREFIX "%" PRIu32, n);
    int fd = openat(s->dirfd, tmp, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0)
      return fd;
    /* Gone (someone removed it): try the next one. */
  }
}

/* Keeps the removed file id for reuse; false if it is not kept (then the
 * caller unlinks it). Lock held. */
static bool recycle_locked(spool *s, const char *id, uint64_t bytes) {
  if (bytes > RECYCLE_FILE_MAX || s->rc_count == RECYCLE_MAX)
    return false;
  if (!s->recycle && !(s->recycle = calloc(RECYCLE_MAX, sizeof *s->recycle)))
    return false;
  char to[SPOOL_ID_MAX];
  uint32_t n = s->rc_ctr++;
  snprintf(to, sizeof to, RECYCLE_PREFIX "%" PRIu32, n);
  if (renameat(s->dirfd, id, s->dirfd, to) != 0)
    return false;
  s->recycle[(s->rc_head + s->rc_count) % RECYCLE_MAX] =
      (struct recycled){.n = n, .seq = ++s->renamed, .bytes = bytes};
  s->rc_count++;
  s->rc_bytes += bytes;
  return true;
}

/* Whether the spool's file system has room to spare for recycled files. */
static bool room_to_recycle(spool *s) {
  struct statvfs v;
  if (fstatvfs(s->dirfd, &v) != 0)
    return false;
  uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize, total = (uint64_t)v.f_blocks * v.f_frsize;
  return avail >= RECYCLE_MIN_FREE && avail >= total / 10;
}

/* Past RECYCLE_BYTES_MAX (or with all set): makes every recycling rename
 * durable (one shared directory fsync), then truncates the recycled files
 * that hold bytes. */
static void trim_recycled(spool *s, bool all) {
  pthread_mutex_lock(&s->mu);
  bool over = s->rc_bytes > (all ? 0 : RECYCLE_BYTES_MAX);
  uint64_t seq = s->renamed;
  pthread_mutex_unlock(&s->mu);
  if (!over || sync_dir_after(s, seq) != 0)
    return;
  size_t *idx = malloc(RECYCLE_MAX * sizeof *idx), k = 0;
  if (!idx)
    return;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->rc_count; i++) {
    struct recycled *e = &s->recycle[(s->rc_head + i) % RECYCLE_MAX];
    if (e->bytes && !e->busy && e->seq <= seq) {
      e->busy = true; /* take_recycled stops at it: entries do not move */
      idx[k++] = (s->rc_head + i) % RECYCLE_MAX;
    }
  }
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; i < k; i++) {
    char name[SPOOL_ID_MAX];
    snprintf(name, sizeof name, RECYCLE_PREFIX "%" PRIu32, s->recycle[idx[i]].n);
    int fd = openat(s->dirfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0)
      close(fd);
  }
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < k; i++) {
    s->rc_bytes -= s->recycle[idx[i]].bytes;
    s->recycle[idx[i]].bytes = 0;
    s->recycle[idx[i]].busy = false;
  }
  pthread_mutex_unlock(&s->mu);
  free(idx);
}

/* Writes a spool file name from buf (or, buf NULL, from the journal at off):
 * temp file, fsync, rename. claim: the name becomes pending in the same
 * step (so no scan takes it for a drop-in). *seq: the rename's number for
 * sync_dir_after. 0, or -1 (errno set) with nothing left behind. */
static int write_spool_file(spool *s, const char *name, const uint8_t *buf, uint64_t off,
                            size_t len, bool claim, uint64_t *seq) {
  char tmp[SPOOL_ID_MAX + 1];
  int fd = take_recycled(s, tmp, sizeof tmp);
  bool reused = fd >= 0;
  if (!reused) {
    snprintf(tmp, sizeof tmp, ".%s", name);
    fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  }
  if (fd < 0)
    return -1;
  int rc = buf ? fsutil_write_all(fd, buf, len) : copy_from_journal(s, fd, off, len);
  if (rc == 0 && reused) /* overwritten in place: cut what is left of the old push */
    rc = ftruncate(fd, (off_t)len);
  if (rc == 0)
    rc = fsync(fd);
  int e = errno;
  if (close(fd) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  if (rc == 0) {
    pthread_mutex_lock(&s->mu);
    rc = renameat(s->dirfd, tmp, s->dirfd, name);
    e = errno;
    if (rc == 0 && claim && spool_set_insert(&s->pending, name, len) != 0) {
      unlinkat(s->dirfd, name, 0);
      rc = -1;
      e = ENOMEM;
    }
    if (rc == 0)
      *seq = ++s->renamed;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0)
      return 0;
  }
  unlinkat(s->dirfd, tmp, 0);
  errno = e;
  return -1;
}

/* Records moved per spill: with the ring's quarter as the other bound. */
#define SPILL_MAX 256

typedef struct spilled {
  char id[SPOOL_ID_MAX];
  journal_rec rec;
  uint64_t seq;
} spilled;

/* Gives held records files of their own (temp file, fsync, rename, one
 * directory fsync for all) and releases them from the journal: the oldest,
 * up to a quarter of the ring, when the ring is full (a batch held open
 * longer than the ring lasts must not keep every later push out of it), or
 * only the record `only` (before it moves to failed/). One spill at a time:
 * without `only` a thread that finds one running returns at once. Returns
 * how many records became files. */
static size_t spill(spool *s, const char *only) {
  if (only)
    pthread_mutex_lock(&s->spill_mu);
  else if (pthread_mutex_trylock(&s->spill_mu) != 0)
    return 0;
  spilled *v = calloc(only ? 1 : SPILL_MAX, sizeof *v);
  size_t n = 0, ok = 0;
  if (!v)
    goto out;
  uint64_t budget = journal_size(s->j) / 4, took = 0;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->held.n && n < (only ? 1 : SPILL_MAX) && took < budget; i++) {
    spool_entry *e = &s->held.v[i];
    if (e->state != HELD_LIVE || (only && strcmp(e->id, only) != 0))
      continue;
    e->state = HELD_SPILLING;
    memcpy(v[n].id, e->id, SPOOL_ID_MAX);
    v[n++].rec = e->rec;
    took += e->bytes;
  }
  pthread_mutex_unlock(&s->mu);
  for (; ok < n; ok++)
    if (write_spool_file(s, v[ok].id, NULL, v[ok].rec.off, v[ok].rec.len, true, &v[ok].seq) != 0)
      break;
  if (ok && sync_dir_after(s, v[ok - 1].seq) != 0) {
    /* Not durable: the records stay where they are. */
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < ok; i++) {
      unlinkat(s->dirfd, v[i].id, 0);
      spool_set_erase(&s->pending, v[i].id, NULL);
    }
    pthread_mutex_unlock(&s->mu);
    ok = 0;
  }
  if (ok < n) {
    char q[128];
    log_event(LOG_WARN, "cannot move held pushes from the journal to files; they stay there",
              "dir=%s err=%s fix=\"free disk space in %s\"", s->dir,
              log_quote(strerror(errno), q, sizeof q), s->dir);
  }
  for (size_t i = 0; i < ok; i++) {
    /* The files are durable: a replay would find them and skip the records. */
    if (journal_release(s->j, &v[i].rec) != 0)
      log_event(LOG_ERROR, "cannot release a journal record after copying it to a file",
                "file=%s/%s", s->dir, v[i].id);
  }
  /* Settle each record's state; one released meanwhile (GONE) goes now. */
  for (size_t i = 0; i < n; i++) {
    pthread_mutex_lock(&s->mu);
    spool_entry *e = spool_set_find(&s->held, v[i].id);
    bool gone = e && e->state == HELD_GONE;
    if (i < ok) {
      spool_set_erase(&s->held, v[i].id, NULL); /* its bytes now belong to the file */
    } else if (gone) {
      s->bytes -= e->bytes;
      spool_set_erase(&s->held, v[i].id, NULL);
    } else if (e) {
      e->state = HELD_LIVE;
    }
    spool_publish_gauges(s);
    pthread_mutex_unlock(&s->mu);
    if (gone && i < ok)
      remove_file(s, v[i].id);
    else if (gone && journal_release(s->j, &v[i].rec) != 0)
      log_event(LOG_ERROR, "cannot release a journal record; a restart replays it", "id=%s",
                v[i].id);
  }
  if (ok && !only)
    log_event(LOG_INFO, "spool journal full: oldest held pushes moved to files",
              "pushes=%zu bytes=%" PRIu64, ok, took);
out:
  free(v);
  pthread_mutex_unlock(&s->spill_mu);
  return ok;
}

/* Journal replay at open: a push a previous run acked but had not copied
 * yet gets its spool file now (if a copy exists, it was made). The spool
 * stores bytes only: a record of a push that was refused before any ack
 * (its dead mark not synced before a crash) becomes a file too, and the
 * scan that follows quarantines it (counted, logged) when it does not
 * decode. */
static int replay_cb(void *arg, const char *id, const uint8_t *frame, size_t len) {
  spool *s = arg;
  struct stat st;
  uint64_t seq;
  if (!id_ok(id)) {
    log_event(LOG_WARN, "spool journal: record with a bad id skipped", "id_bytes=%zu",
              strnlen(id, SPOOL_ID_MAX));
    return 0;
  }
  if (fstatat(s->dirfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0)
    return 0;
  return write_spool_file(s, id, frame, 0, len, false, &seq);
}

/* ---- remove / fail ---- */

/* Deletes (or recycles) the pending file id and forgets it. */
static int remove_file(spool *s, const char *id) {
  uint64_t b = 0;
  int rc = SPOOL_OK;
  /* Small files are kept for reuse (see RECYCLE_MAX): renamed away under
   * the lock, so the name is gone when it is forgotten. */
  bool room = room_to_recycle(s);
  pthread_mutex_lock(&s->mu);
  bool found;
  size_t k = spool_set_lower(&s->pending, id, &found);
  if (room && found && recycle_locked(s, id, s->pending.v[k].bytes)) {
    spool_set_erase(&s->pending, id, &b);
    s->bytes -= b;
    spool_publish_gauges(s);
    pthread_mutex_unlock(&s->mu);
    trim_recycled(s, false);
    return SPOOL_OK;
  }
  pthread_mutex_unlock(&s->mu);
  if (!room)
    trim_recycled(s, true);
  /* Unlink before forgetting the name, outside the lock (puts wait on it):
   * while the file exists it stays pending, so a concurrent scan never
   * takes it for a new drop-in. ENOENT: already gone (e.g. dropped to make
   * room); nothing to do. */
  if (unlinkat(s->dirfd, id, 0) != 0 && errno != ENOENT) {
    char q[128];
    log_event(LOG_ERROR, "cannot delete exported spool file", "file=%s/%s err=%s", s->dir, id,
              log_quote(strerror(errno), q, sizeof q));
    rc = SPOOL_EIO;
  }
  pthread_mutex_lock(&s->mu);
  if (spool_set_erase(&s->pending, id, &b))
    s->bytes -= b;
  spool_publish_gauges(s);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

#define RELEASE_CHUNK 64

int spool_release(spool *s, const char (*ids)[SPOOL_ID_MAX], size_t n) {
  int rc = SPOOL_OK;
  for (size_t lo = 0; lo < n; lo += RELEASE_CHUNK) {
    size_t hi = n - lo < RELEASE_CHUNK ? n : lo + RELEASE_CHUNK, k = 0;
    journal_rec recs[RELEASE_CHUNK];
    bool file[RELEASE_CHUNK];
    pthread_mutex_lock(&s->mu);
    for (size_t i = lo; i < hi; i++) {
      spool_entry *e = spool_set_find(&s->held, ids[i]);
      file[i - lo] = !e;
      if (!e)
        continue;
      if (e->state != HELD_LIVE) { /* being spilled: the spill removes its file */
        e->state = HELD_GONE;
        continue;
      }
      recs[k++] = e->rec;
      s->bytes -= e->bytes;
      spool_set_erase(&s->held, ids[i], NULL);
    }
    spool_publish_gauges(s);
    pthread_mutex_unlock(&s->mu);
    /* One sync for the chunk's dead marks. On failure they stay live: a
     * restart replays them, and the batches' identities tell them apart. */
    if (k && journal_release_many(s->j, recs, k) != 0) {
      log_event(LOG_ERROR, "cannot release journal records of pushes already in a batch",
                "records=%zu fix=\"check the disk; a restart replays them as duplicates, which "
                "are recognised and deleted\"",
                k);
      rc = SPOOL_EIO;
    }
    for (size_t i = lo; i < hi; i++)
      if (file[i - lo] && id_ok(ids[i]) && remove_file(s, ids[i]) != SPOOL_OK)
        rc = SPOOL_EIO;
  }
  return rc;
}

int spool_remove(spool *s, const char *id) {
  char one[1][SPOOL_ID_MAX];
  if (!id_ok(id))
    return SPOOL_EIO;
  snprintf(one[0], sizeof one[0], "%s", id);
  return spool_release(s, (const char(*)[SPOOL_ID_MAX])one, 1);
}

void spool_account(spool *s, int64_t bytes, int64_t pushes) {
  pthread_mutex_lock(&s->mu);
  s->batch_bytes = bytes < 0 && (uint64_t)-bytes > s->batch_bytes ? 0 : s->batch_bytes + bytes;
  s->batch_pushes =
      pushes < 0 && (uint64_t)-pushes > s->batch_pushes ? 0 : s->batch_pushes + pushes;
  spool_publish_gauges(s);
  pthread_mutex_unlock(&s->mu);
}

void spool_set_drop_batch(spool *s, spool_drop_batch_fn fn, void *arg) {
  pthread_mutex_lock(&s->mu);
  s->drop_batch = fn;
  s->drop_arg = arg;
  pthread_mutex_unlock(&s->mu);
}

int spool_move_failed(spool *s, const char *id, const char *reason) {
  uint64_t b = 0;
  int rc = SPOOL_OK;
  char q[512], qe[128];
  if (!id_ok(id))
    return SPOOL_EIO;
  /* A held push gets its file first; if it cannot, it stays in the journal
   * (a restart replays it, and it fails again). */
  pthread_mutex_lock(&s->mu);
  bool held = spool_set_find(&s->held, id) != NULL;
  pthread_mutex_unlock(&s->mu);
  if (held && spill(s, id) != 1) {
    /* A spill that was running may have given it its file already. */
    pthread_mutex_lock(&s->mu);
    held = spool_set_find(&s->held, id) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (held) {
      log_event(LOG_ERROR, "cannot move a journaled push to failed/; it stays in the journal",
                "id=%s", id);
      return SPOOL_EIO;
    }
  }
  pthread_mutex_lock(&s->mu);
  if (spool_set_erase(&s->pending, id, &b))
    s->bytes -= b;
  if (renameat(s->dirfd, id, s->ffd, id) != 0) {
    if (errno != ENOENT) {
      log_event(LOG_ERROR, "cannot move spool file to failed/", "file=%s/%s err=%s", s->dir, id,
                log_quote(strerror(errno), qe, sizeof qe));
      rc = SPOOL_EIO;
    }
  } else {
    write_reason(s->ffd, id, reason ? reason : "");
    if (fsync(s->ffd) != 0 || fsync(s->dirfd) != 0)
      log_event(LOG_WARN, "fsync after move to failed/ failed", "file=%s err=%s", id,
                log_quote(strerror(errno), qe, sizeof qe));
    log_event(LOG_WARN, "push moved to failed/", "file=%s/%s/%s reason=%s", s->dir, FAILED_DIR, id,
              log_quote(reason, q, sizeof q));
  }
  spool_publish_gauges(s);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

const char *spool_path(const spool *s) {
  return s->dir;
}

uint64_t spool_bytes(spool *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t b = used_locked(s);
  pthread_mutex_unlock(&s->mu);
  return b;
}

size_t spool_files(spool *s) {
  pthread_mutex_lock(&s->mu);
  size_t n = pushes_locked(s);
  pthread_mutex_unlock(&s->mu);
  return n;
}
