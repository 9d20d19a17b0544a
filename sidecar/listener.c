/* Unix-socket listener: accept thread + one thread per admitted connection.
 * A connection thread that is done waits a while (worker_idle_ms) for the
 * next admitted connection before it exits: the SDK opens a connection per
 * push, and a new thread per push cost its creation, fresh stack pages and
 * its exit every time. Connection threads only block in poll() bounded by
 * the frame deadline, in spool_put (fsync) and in sending a small reply; a
 * shutdown wakes them through an eventfd every poll() also watches.
 *
 * At --max-connections a new connection is not simply refused: silent or
 * trickling clients could then lock everyone out for a whole read timeout.
 * The accept thread instead evicts one connection that has no complete
 * frame: from the peer uid holding the most connections, the one whose
 * current frame has been awaited longest (a frame that is being handled,
 * spooled or acked is never cut). It marks it and shuts its read side down;
 * the connection's own thread then sees EOF, replies RESOURCE_EXHAUSTED and
 * ends. The registry of live connections (l->conns) is guarded by l->mu, and
 * a connection leaves it before its fd is closed, so the accept thread never
 * shuts down a reused fd. */
#include "listener_int.h"

/* ---- socket creation ---- */

static int mkdir_parents(const char *path, char *err, size_t errlen) {
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
    snprintf(err, errlen, "socket path %s too long", path);
    return -1;
  }
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return 0;
  *slash = 0;
  struct stat st;
  if (stat(dir, &st) == 0)
    return 0;
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
      goto fail;
    *p = '/';
  }
  if (mkdir(dir, 0750) != 0 && errno != EEXIST)
    goto fail;
  return 0;
fail:
  snprintf(err, errlen,
           "cannot create socket directory %s: %s (create it or pick another --socket)", dir,
           strerror(errno));
  return -1;
}

/* A socket file nobody listens on is left over from a crash: remove it.
 * A live socket or any other kind of file is an error. */
static int remove_stale(const char *path, const struct sockaddr_un *sa, char *err, size_t errlen) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT)
      return 0;
    snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISSOCK(st.st_mode)) {
    snprintf(err, errlen, "%s exists and is not a socket; remove it or pick another --socket",
             path);
    return -1;
  }
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return -1;
  }
  int rc = connect(probe, (const struct sockaddr *)sa, sizeof *sa);
  int e = errno;
  close(probe);
  if (rc == 0) {
    snprintf(err, errlen, "%s is in use by a running sidecar; stop it or pick another --socket",
             path);
    return -1;
  }
  if (e != ECONNREFUSED) {
    snprintf(err, errlen, "cannot probe %s: %s", path, strerror(e));
    return -1;
  }
  if (unlink(path) != 0 && errno != ENOENT) {
    snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
    return -1;
  }
  log_event(LOG_INFO, "removed stale socket", "path=%s", path);
  return 0;
}

listener *listener_open(const listener_config *cfg, char *err, size_t errlen) {
  listener *l = calloc(1, sizeof *l);
  if (!l) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  l->fd = -1;
  l->wake_fd = -1;
  l->lock_fd = -1;
  l->cfg = *cfg;
  if (cfg->max_connections < 1) {
    snprintf(err, errlen, "--max-connections must be at least 1");
    goto fail_early;
  }
  /* Evicted connections end within moments, but until then hold a thread:
   * at most as many again as the limit. */
  l->cap_conns = cfg->max_connections * 2;
  l->conns = calloc((size_t)l->cap_conns, sizeof *l->conns);
  l->uids_scratch = calloc((size_t)l->cap_conns, sizeof *l->uids_scratch);
  if (!l->conns || !l->uids_scratch) {
    snprintf(err, errlen, "out of memory");
    goto fail_early;
  }
  if (cfg->n_allow_uids > sizeof l->uids / sizeof l->uids[0]) {
    snprintf(err, errlen, "too many uids in --allow-uid");
    goto fail_early;
  }
  if (cfg->n_allow_uids)
    memcpy(l->uids, cfg->allow_uids, cfg->n_allow_uids * sizeof(uid_t));
  l->cfg.allow_uids = l->uids;
  l->path = strdup(cfg->socket_path);
  if (!l->path) {
    snprintf(err, errlen, "out of memory");
    goto fail_early;
  }
  l->cfg.socket_path = l->path;
  /* A quarter of the memory budget, and always room for one whole frame. */
  l->max_memory = cfg->max_memory ? cfg->max_memory : (uint64_t)48 << 20;
  l->inflight_max = l->max_memory / 4;
  if (l->inflight_max < cfg->max_frame_bytes)
    l->inflight_max = cfg->max_frame_bytes;
  pthread_condattr_t ca;
  bool cv_ok = pthread_condattr_init(&ca) == 0;
  if (cv_ok) {
    cv_ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
            pthread_cond_init(&l->work_cv, &ca) == 0;
    if (cv_ok && pthread_cond_init(&l->slot_cv, &ca) != 0) {
      pthread_cond_destroy(&l->work_cv);
      cv_ok = false;
    }
    pthread_condattr_destroy(&ca);
  }
  if (!cv_ok) {
    snprintf(err, errlen, "pthread init failed");
    free(l->path);
    goto fail_early;
  }
  if (pthread_mutex_init(&l->mu, NULL) != 0 || pthread_cond_init(&l->cv, NULL) != 0) {
    snprintf(err, errlen, "pthread init failed");
    pthread_cond_destroy(&l->work_cv);
    pthread_cond_destroy(&l->slot_cv);
    free(l->path);
    goto fail_early;
  }
  l->queue_tail = &l->queue;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(l->path) >= sizeof sa.sun_path) {
    snprintf(err, errlen, "socket path %s is longer than %zu bytes; pick a shorter --socket",
             l->path, sizeof sa.sun_path - 1);
    goto fail;
  }
  memcpy(sa.sun_path, l->path, strlen(l->path) + 1);
  if (mkdir_parents(l->path, err, errlen) != 0)
    goto fail;
  /* Before touching the socket: two sidecars starting at once would
   * otherwise both take it for stale and remove each other's. */
  char lock_path[PATH_MAX];
  if (snprintf(lock_path, sizeof lock_path, "%s.lock", l->path) >= (int)sizeof lock_path) {
    snprintf(err, errlen, "socket path %s too long", l->path);
    goto fail;
  }
  l->lock_fd = lockfile_acquire(lock_path, "it", err, errlen);
  if (l->lock_fd < 0)
    goto fail;
  if (remove_stale(l->path, &sa, err, errlen) != 0)
    goto fail;
  l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l->fd < 0 || l->wake_fd < 0) {
    snprintf(err, errlen, "socket/eventfd: %s", strerror(errno));
    goto fail;
  }
  /* 0777 & ~0117 = 0660 at creation: there is no window with a wider mode. */
  mode_t old = umask(0117);
  int rc = bind(l->fd, (struct sockaddr *)&sa, sizeof sa);
  int e = errno;
  umask(old);
  if (rc != 0) {
    snprintf(err, errlen, "cannot bind %s: %s (check the directory's permissions)", l->path,
             strerror(e));
    goto fail;
  }
  struct stat st;
  if (lstat(l->path, &st) != 0) {
    snprintf(err, errlen, "cannot stat %s after bind: %s", l->path, strerror(errno));
    goto fail;
  }
  l->dev = st.st_dev;
  l->ino = st.st_ino;
  /* A deep backlog absorbs a burst of connections (well-behaved or not)
   * while the accept thread admits or evicts; a full one makes clients'
   * connect() fail with EAGAIN. The kernel caps it at net.core.somaxconn. */
  if (listen(l->fd, SOMAXCONN) != 0) {
    snprintf(err, errlen, "listen %s: %s", l->path, strerror(errno));
    unlink(l->path);
    goto fail;
  }
  return l;
fail:
  if (l->fd >= 0)
    close(l->fd);
  if (l->wake_fd >= 0)
    close(l->wake_fd);
  if (l->lock_fd >= 0)
    close(l->lock_fd);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  pthread_cond_destroy(&l->work_cv);
  pthread_cond_destroy(&l->slot_cv);
  free(l->path);
fail_early:
  free(l->conns);
  free(l->uids_scratch);
  free(l);
  return NULL;
}

int listener_start(listener *l, spool *sp, batcher *b) {
  l->sp = sp;
  l->b = b;
  int rc = pthread_create(&l->accept_thread, NULL, listener_accept_main, l);
  if (rc != 0) {
    log_event(LOG_ERROR, "cannot start the accept thread", "errno=%d", rc);
    return -1;
  }
  l->started = true;
  return 0;
}

void listener_stop(listener *l) {
  if (!l)
    return;
  atomic_store(&l->stopping, true);
  uint64_t one = 1;
  if (write(l->wake_fd, &one, sizeof one) != sizeof one)
    log_event(LOG_ERROR, "cannot wake the listener", "errno=%d", errno);
  if (l->started) {
    pthread_join(l->accept_thread, NULL);
    l->started = false;
  }
  if (l->fd >= 0) {
    /* Unlink only our own socket: another sidecar may have replaced it. */
    struct stat st;
    if (lstat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino)
      unlink(l->path);
    close(l->fd);
    l->fd = -1;
  }
  pthread_mutex_lock(&l->mu);
  pthread_cond_broadcast(&l->work_cv); /* idle workers exit */
  while (l->open > 0 || l->workers > 0)
    pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
}

void listener_free(listener *l) {
  if (!l)
    return;
  listener_stop(l);
  if (l->wake_fd >= 0)
    close(l->wake_fd);
  if (l->lock_fd >= 0)
    close(l->lock_fd); /* the lock file stays: removing it would race a starting sidecar */
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  pthread_cond_destroy(&l->work_cv);
  for (int i = 0; i < FRAME_POOL; i++) {
    uint8_t *b = atomic_load(&l->frame_pool[i]);
    if (b)
      munmap(b, FRAME_POOL_BUF);
  }
  free(l->conns);
  free(l->uids_scratch);
  free(l->path);
  free(l);
}
