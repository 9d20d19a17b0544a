/* The accept thread: peer credentials, the uid allow-list, admission,
 * and at --max-connections the eviction of the connection with no
 * complete frame that has been awaited longest (listener.c's comment). */
#include "listener_int.h"

typedef struct linger_fd {
  int fd;
  int64_t until;
} linger_fd;

static bool uid_allowed(const listener *l, uid_t uid) {
  if (l->cfg.n_allow_uids == 0)
    return true;
  for (size_t i = 0; i < l->cfg.n_allow_uids; i++)
    if (l->cfg.allow_uids[i] == uid)
      return true;
  return false;
}

/* A refused peer gets its reply, then we read and discard what it sends for
 * a moment: closing with unread data would reset the connection and could
 * swallow the reply before the client reads it. */
static void linger_add(linger_fd *lg, int *n, int fd) {
  shutdown(fd, SHUT_WR);
  if (*n == LINGER_MAX) {
    close(fd);
    return;
  }
  lg[(*n)++] = (linger_fd){fd, now_ms() + LINGER_MS};
}

static void refuse(listener *l, linger_fd *lg, int *nlg, int fd, int code, const char *metric,
                   const char *why, const struct ucred *cr) {
  metrics_reject(metric);
  char q[REASON_MAX + 8];
  if (listener_reject_log_allowed())
    log_event(LOG_WARN, "connection refused", "reason=%s peer_pid=%d peer_uid=%u why=%s", metric,
              (int)cr->pid, (unsigned)cr->uid, log_quote(why, q, sizeof q));
  (void)l;
  listener_send_reply(fd, code, why, 0, NULL, now_ms() + 100);
  linger_add(lg, nlg, fd);
}

/* Picks the connection to evict to admit a new one, or NULL if every one is
 * busy with a complete frame. Fairness first: the uid holding the most
 * connections gives one up; among its connections, the one whose current
 * frame has been awaited longest. O(open x distinct uids). Lock held. */
static conn *pick_victim_locked(listener *l, int64_t now) {
  uid_count *uc = l->uids_scratch;
  int nu = 0;
  for (int i = 0; i < l->open; i++) {
    conn *c = l->conns[i];
    if (atomic_load(&c->evicted))
      continue;
    int k = 0;
    while (k < nu && uc[k].uid != c->cred.uid)
      k++;
    if (k == nu)
      uc[nu++] = (uid_count){c->cred.uid, 0};
    uc[k].n++;
  }
  conn *best = NULL;
  int best_n = -1;
  int64_t best_wait = -1;
  for (int i = 0; i < l->open; i++) {
    conn *c = l->conns[i];
    if (atomic_load(&c->evicted) || atomic_load(&c->state) == CS_BUSY)
      continue;
    int k = 0;
    while (uc[k].uid != c->cred.uid)
      k++;
    int64_t wait = now - atomic_load(&c->since_ms);
    if (uc[k].n > best_n || (uc[k].n == best_n && wait > best_wait)) {
      best = c;
      best_n = uc[k].n;
      best_wait = wait;
    }
  }
  return best;
}

typedef struct eviction {
  const char *reason;
  pid_t pid;
  uid_t uid;
  int64_t wait_ms;
} eviction;

/* Marks v evicted and wakes its thread with EOF. Lock held. */
static void evict_locked(listener *l, conn *v, int64_t now, eviction *out) {
  v->evicted_wait_ms = now - atomic_load(&v->since_ms);
  atomic_store(&v->evicted, true);
  l->active--;
  *out = (eviction){atomic_load(&v->state) == CS_READING ? "slow_frame" : "idle", v->cred.pid,
                    v->cred.uid, v->evicted_wait_ms};
  metrics_evict(out->reason);
  if (shutdown(v->fd, SHUT_RD) != 0)
    log_event(LOG_ERROR, "cannot shut down an evicted connection", "errno=%d", errno);
}

static void admit(listener *l, linger_fd *lg, int *nlg, int fd) {
  struct ucred cr = {0, (uid_t)-1, (gid_t)-1};
  socklen_t crlen = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0) {
    log_event(LOG_ERROR, "SO_PEERCRED failed", "errno=%d", errno);
    metrics_reject("peer_credentials");
    close(fd);
    return;
  }
  metrics_add(M_CONNECTIONS, 1);
  if (!uid_allowed(l, cr.uid)) {
    char why[128];
    snprintf(why, sizeof why, "uid %u may not push to this sidecar (see its --allow-uid)",
             (unsigned)cr.uid);
    refuse(l, lg, nlg, fd, RC_DENIED, "permission_denied", why, &cr);
    return;
  }
  conn *c = malloc(sizeof *c);
  if (!c) {
    refuse(l, lg, nlg, fd, RC_EXHAUSTED, "out_of_memory", "sidecar out of memory: retry later",
           &cr);
    return;
  }
  int64_t now = now_ms();
  *c = (conn){.l = l, .fd = fd, .cred = cr, .slot = -1};
  atomic_init(&c->state, CS_WAITING);
  atomic_init(&c->since_ms, now);
  atomic_init(&c->evicted, false);
  eviction ev = {0};
  pthread_mutex_lock(&l->mu);
  bool full = l->active >= l->cfg.max_connections;
  if (full && l->open < l->cap_conns) {
    conn *v = pick_victim_locked(l, now);
    if (v) {
      evict_locked(l, v, now, &ev);
      full = false;
    }
  }
  bool queued = false;
  if (!full) {
    c->slot = l->open++;
    l->conns[c->slot] = c;
    l->active++;
    metrics_set(G_OPEN_CONNECTIONS, l->active);
    /* An idle worker takes it; else a new thread. */
    queued = l->idle > l->queued;
    if (queued) {
      c->next = NULL;
      *l->queue_tail = c;
      l->queue_tail = &c->next;
      l->queued++;
      pthread_cond_signal(&l->work_cv);
    } else {
      l->workers++;
      metrics_set(G_CONN_THREADS, l->workers);
    }
  }
  pthread_mutex_unlock(&l->mu);
  if (ev.reason && listener_reject_log_allowed())
    log_event(LOG_WARN, "connection evicted", "reason=%s peer_pid=%d peer_uid=%u waited_ms=%lld",
              ev.reason, (int)ev.pid, (unsigned)ev.uid, (long long)ev.wait_ms);
  if (full) {
    free(c);
    char why[200];
    snprintf(why, sizeof why,
             "too many connections (limit %d, --max-connections), all busy with frames: retry "
             "later",
             l->cfg.max_connections);
    refuse(l, lg, nlg, fd, RC_EXHAUSTED, "too_many_connections", why, &cr);
    return;
  }
  if (queued)
    return;
  pthread_attr_t attr;
  pthread_t t;
  bool attr_ok = pthread_attr_init(&attr) == 0;
  if (attr_ok) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, CONN_STACK_SIZE);
  }
  int rc = attr_ok ? pthread_create(&t, &attr, listener_conn_main, c) : ENOMEM;
  if (attr_ok)
    pthread_attr_destroy(&attr);
  if (rc == 0)
    metrics_add(M_CONN_THREADS, 1);
  if (rc != 0) {
    pthread_mutex_lock(&l->mu);
    l->workers--;
    metrics_set(G_CONN_THREADS, l->workers);
    pthread_mutex_unlock(&l->mu);
    listener_conn_end(l, c);
    free(c);
    refuse(l, lg, nlg, fd, RC_EXHAUSTED, "thread_create_failed",
           "sidecar cannot start a connection thread: retry later", &cr);
  }
}

void *listener_accept_main(void *arg) {
  listener *l = arg;
  linger_fd lg[LINGER_MAX];
  int nlg = 0;
  while (!atomic_load(&l->stopping)) {
    struct pollfd p[2 + LINGER_MAX];
    p[0] = (struct pollfd){.fd = l->fd, .events = POLLIN};
    p[1] = (struct pollfd){.fd = l->wake_fd, .events = POLLIN};
    int64_t now = now_ms(), wait = -1;
    for (int i = 0; i < nlg; i++) {
      p[2 + i] = (struct pollfd){.fd = lg[i].fd, .events = POLLIN};
      int64_t left = lg[i].until - now;
      if (left < 0)
        left = 0;
      if (wait < 0 || left < wait)
        wait = left;
    }
    int n = poll(p, (nfds_t)(2 + nlg), (int)wait);
    if (n < 0 && errno != EINTR) {
      log_event(LOG_ERROR, "poll failed", "errno=%d", errno);
      break;
    }
    now = now_ms();
    for (int i = nlg - 1; i >= 0; i--) {
      bool done = lg[i].until <= now;
      if (n > 0 && (p[2 + i].revents & (POLLIN | POLLHUP | POLLERR))) {
        uint8_t scratch[4096];
        ssize_t r = recv(lg[i].fd, scratch, sizeof scratch, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
          done = true;
      }
      if (done) {
        close(lg[i].fd);
        lg[i] = lg[--nlg];
      }
    }
    if (n > 0 && (p[0].revents & POLLIN)) {
      for (int k = 0; k < 64; k++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EMFILE || errno == ENFILE) {
            metrics_reject("fd_limit");
            log_event(LOG_ERROR, "accept failed: out of file descriptors", "errno=%d", errno);
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
          }
          break;
        }
        admit(l, lg, &nlg, fd);
      }
    }
  }
  for (int i = 0; i < nlg; i++)
    close(lg[i].fd);
  return NULL;
}
