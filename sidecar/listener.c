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
#include "listener.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lockfile.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "pp_decode.h"
#include "pp_frame.h"
#include "pp_push.h"
#include "pushprof.pb-c.h"

#define CONN_STACK_SIZE (1u << 20)
#define WORKER_IDLE_MS 5000 /* default listener_config.worker_idle_ms */
/* At most this many wait for work; the others exit at once: after a burst of
 * hundreds of connections, idle threads would hold their stacks' pages. */
#define WORKER_IDLE_MAX 8
#define TRIM_STACK_MS 200 /* an idle worker's stack is trimmed after this wait */
#define LINGER_MAX 32
#define LINGER_MS 1000
#define REASON_MAX 400
/* Frames of FRAME_POOL_MIN..FRAME_POOL_BUF bytes are read into buffers of
 * FRAME_POOL_BUF kept in a pool of FRAME_POOL (2 MiB at most, held while the
 * sidecar runs); smaller and larger frames get a buffer of their own. */
#define FRAME_POOL 8
#define FRAME_POOL_MIN (16u << 10)
#define FRAME_POOL_BUF (256u << 10)
#define ROOM_WAIT_MS 500 /* at the memory budget, how long a frame waits for room */

enum {
  RC_OK = PUSHPROF__V1__PUSH_REPLY__CODE__OK,
  RC_INVALID_FRAME = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME,
  RC_INVALID_PUSH = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH,
  RC_INVALID_PPROF = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF,
  RC_EXHAUSTED = PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED,
  RC_DENIED = PUSHPROF__V1__PUSH_REPLY__CODE__PERMISSION_DENIED,
  RC_UNAVAILABLE = PUSHPROF__V1__PUSH_REPLY__CODE__UNAVAILABLE,
  RC_INTERNAL = PUSHPROF__V1__PUSH_REPLY__CODE__INTERNAL
};

typedef struct conn conn;
typedef struct uid_count {
  uid_t uid;
  int n;
} uid_count;

struct listener {
  listener_config cfg;
  char *path;
  int lock_fd; /* <socket>.lock, flock'ed while we live */
  uid_t uids[64];
  int fd;
  int wake_fd; /* eventfd, readable once stopping: wakes every poll() */
  dev_t dev;
  ino_t ino;
  spool *sp;
  batcher *b;
  pthread_t accept_thread;
  bool started;
  atomic_bool stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;     /* connection threads alive; guarded by mu */
  int active;   /* of those, not evicted: what --max-connections bounds; mu */
  conn **conns; /* the open connections, cap_conns slots; guarded by mu */
  int cap_conns;
  uid_count *uids_scratch;       /* victim choice, accept thread only */
  atomic_uint_fast64_t inflight; /* bytes of frames being read or handled */
  uint64_t inflight_max;
  uint64_t max_memory; /* --max-memory, for messages */
  int handling;        /* frames being decoded, made durable and merged; guarded by mu */
  int slot_waiters;    /* threads waiting on slot_cv for one of those; mu */
  /* A freed slot wakes one waiter (CLOCK_MONOTONIC). Its own condition
   * variable: a broadcast on cv per push woke every waiting connection
   * thread to find one slot, ~40% of the sidecar's context switches. */
  pthread_cond_t slot_cv;
  /* Connection threads (workers) and connections admitted but not yet taken
   * by one (FIFO through conn.next); all guarded by mu. */
  int workers; /* alive */
  int idle;    /* of those, waiting on work_cv for a connection */
  conn *queue, **queue_tail;
  int queued;
  pthread_cond_t work_cv; /* CLOCK_MONOTONIC */
  /* Frame buffers kept for the next frame (frame_get): a fresh 100 KiB
   * buffer per push was a page fault per 4 KiB, ~20% of the sidecar's. */
  _Atomic(uint8_t *) frame_pool[FRAME_POOL];
};

enum conn_state { CS_WAITING, CS_READING, CS_BUSY };

struct conn {
  listener *l;
  int fd;
  struct ucred cred;
  int slot;                 /* index in l->conns; guarded by l->mu */
  atomic_int state;         /* enum conn_state, set by the connection's thread */
  _Atomic int64_t since_ms; /* when the wait for the current frame began */
  atomic_bool evicted;      /* set once, under l->mu, by the accept thread */
  int64_t evicted_wait_ms;  /* how long the frame had been awaited then */
  conn *next;               /* in l->queue until a worker takes it; l->mu */
};

typedef struct linger_fd {
  int fd;
  int64_t until;
} linger_fd;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* ---- replies ---- */

int listener_peek_sequence(const uint8_t *payload, size_t len, uint64_t *seq) {
  enum { SEQUENCE_FIELD = 7 }; /* PushRequest.sequence, pushprof.proto */
  return listener_peek_varint(payload, len, SEQUENCE_FIELD, seq);
}

int listener_peek_varint(const uint8_t *payload, size_t len, unsigned field, uint64_t *out) {
  int found = -1;
  const uint8_t *p = payload, *end = payload + len;
  pp_wire_field f;
  /* Up to the first field protobuf-c could not frame; the last one wins. */
  while (p < end && pp_wire_next(&p, end, &f))
    if (f.wire_type == 0 && f.num == field) {
      *out = f.v;
      found = 0;
    }
  return found;
}

/* Sends one PushReply frame within the deadline. 0 or -1. */
static int send_reply(int fd, int code, const char *reason, uint64_t seq, const char *push_id,
                      int64_t deadline) {
  char why[REASON_MAX + 1];
  snprintf(why, sizeof why, "%s", reason ? reason : "");
  Pushprof__V1__PushReply r = PUSHPROF__V1__PUSH_REPLY__INIT;
  r.code = (Pushprof__V1__PushReply__Code)code;
  r.reason = why;
  r.sequence = seq;
  if (push_id)
    r.push_id = (char *)push_id;
  uint8_t buf[PP_FRAME_HEADER_SIZE + 1024];
  size_t n = pushprof__v1__push_reply__get_packed_size(&r);
  if (n > sizeof buf - PP_FRAME_HEADER_SIZE)
    return -1;
  pushprof__v1__push_reply__pack(&r, buf + PP_FRAME_HEADER_SIZE);
  pp_frame_header_encode(buf, PP_FRAME_REPLY, (uint32_t)n);
  size_t total = n + PP_FRAME_HEADER_SIZE, off = 0;
  while (off < total) {
    ssize_t w = send(fd, buf + off, total - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int64_t left = deadline - now_ms();
      if (left <= 0)
        return -1;
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
        return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

/* ---- connection threads ---- */

enum rd { RD_OK, RD_EOF, RD_TIMEOUT, RD_STOP, RD_ERR, RD_EVICTED };

/* Reads exactly len bytes before the deadline. At a frame boundary
 * (boundary=true, nothing read yet) a shutdown ends the wait. The first
 * byte moves the connection to CS_READING. */
static enum rd read_full(conn *c, uint8_t *buf, size_t len, int64_t deadline, bool boundary,
                         size_t *got_out) {
  listener *l = c->l;
  int fd = c->fd;
  size_t got = 0;
  while (got < len) {
    ssize_t n = recv(fd, buf + got, len - got, MSG_DONTWAIT);
    if (n > 0) {
      got += (size_t)n;
      if (boundary)
        atomic_store(&c->state, CS_READING);
      boundary = false;
      continue;
    }
    if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
      *got_out = got;
      if (atomic_load(&c->evicted))
        return RD_EVICTED; /* our read side was shut down to make room */
      return n == 0 ? RD_EOF : RD_ERR;
    }
    if (errno == EINTR)
      continue;
    if (boundary && atomic_load(&l->stopping))
      return RD_STOP;
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      *got_out = got;
      return RD_TIMEOUT;
    }
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = l->wake_fd, .events = POLLIN}};
    if (poll(p, boundary ? 2 : 1, (int)left) < 0 && errno != EINTR) {
      *got_out = got;
      return RD_ERR;
    }
  }
  *got_out = got;
  return RD_OK;
}

static const char *header_reason(const uint8_t h[PP_FRAME_HEADER_SIZE], uint32_t max) {
  if (memcmp(h, PP_FRAME_MAGIC, 4) != 0)
    return "bad_magic";
  if (((unsigned)h[4] << 8 | h[5]) != PP_FRAME_VERSION)
    return "bad_version";
  if (((unsigned)h[6] << 8 | h[7]) != PP_FRAME_PUSH)
    return "bad_frame_type";
  uint32_t len = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
  if (len > max || (uint64_t)len + PP_FRAME_HEADER_SIZE > max)
    return "frame_too_large";
  return "invalid_frame";
}

static const char *code_reason(int code) {
  switch (code) {
  case RC_INVALID_FRAME:
    return "invalid_frame";
  case RC_INVALID_PUSH:
    return "invalid_push";
  case RC_INVALID_PPROF:
    return "invalid_pprof";
  case RC_EXHAUSTED:
    return "resource_exhausted";
  case RC_DENIED:
    return "permission_denied";
  case RC_UNAVAILABLE:
    return "unavailable";
  default:
    return "internal";
  }
}

/* A client looping on bad frames must not flood the log: at most
 * LOG_REJECTS_PER_S lines a second, then one line saying how many were not
 * logged (every rejection is still counted in /metrics). */
#define LOG_REJECTS_PER_S 20
static pthread_mutex_t rl_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t rl_second;
static unsigned rl_count, rl_suppressed;

static bool reject_log_allowed(void) {
  int64_t sec = now_ms() / 1000;
  unsigned suppressed = 0;
  bool ok;
  pthread_mutex_lock(&rl_mu);
  if (sec != rl_second) {
    suppressed = rl_suppressed;
    rl_second = sec;
    rl_count = 0;
    rl_suppressed = 0;
  }
  ok = rl_count < LOG_REJECTS_PER_S;
  if (ok)
    rl_count++;
  else
    rl_suppressed++;
  pthread_mutex_unlock(&rl_mu);
  if (suppressed)
    log_event(LOG_WARN, "rejections not logged (rate limit; see /metrics)", "count=%u", suppressed);
  return ok;
}

static void reject(conn *c, const char *metric_reason, int code, const char *why, uint64_t seq,
                   int64_t deadline) {
  char q[REASON_MAX + 8];
  metrics_reject(metric_reason);
  if (reject_log_allowed())
    log_event(LOG_WARN, "push rejected", "reason=%s peer_pid=%d peer_uid=%u why=%s", metric_reason,
              (int)c->cred.pid, (unsigned)c->cred.uid, log_quote(why, q, sizeof q));
  if (send_reply(c->fd, code, why, seq, NULL, deadline) != 0)
    log_event(LOG_DEBUG, "reply not delivered", "peer_pid=%d", (int)c->cred.pid);
}

/* At most HANDLE_SLOTS frames are decoded, made durable and merged at once.
 * An ack no longer waits for the merge, so without this bound a client that
 * pushes again right after each ack would have every earlier push still
 * being merged, each holding its decoded profile: memory would grow with the
 * rate instead of staying flat. A frame waiting for a slot holds only its
 * bytes (bounded by the in-flight limit). */
#define HANDLE_SLOTS 4

static bool handle_slot_get(listener *l, int64_t deadline) {
  bool ok = true;
  pthread_mutex_lock(&l->mu);
  while (l->handling >= HANDLE_SLOTS) {
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      ok = false;
      break;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (left % 1000) * 1000000;
    ts.tv_sec += left / 1000 + ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    l->slot_waiters++;
    pthread_cond_timedwait(&l->slot_cv, &l->mu, &ts);
    l->slot_waiters--;
  }
  if (ok)
    l->handling++;
  else if (l->handling < HANDLE_SLOTS && l->slot_waiters > 0)
    pthread_cond_signal(&l->slot_cv); /* a wake-up this thread may have taken */
  pthread_mutex_unlock(&l->mu);
  return ok;
}

static void handle_slot_put(listener *l) {
  pthread_mutex_lock(&l->mu);
  l->handling--;
  if (l->slot_waiters > 0)
    pthread_cond_signal(&l->slot_cv);
  pthread_mutex_unlock(&l->mu);
}

static bool frame_pooled(size_t total) {
  return total >= FRAME_POOL_MIN && total <= FRAME_POOL_BUF;
}

/* A buffer for a frame of total bytes: FRAME_POOL_BUF from the pool (or
 * new) when frame_pooled(total), else total capped at *cap. */
static uint8_t *frame_get(listener *l, size_t total, size_t cap) {
  if (!frame_pooled(total))
    return malloc(cap);
  for (int i = 0; i < FRAME_POOL; i++) {
    uint8_t *b = atomic_exchange(&l->frame_pool[i], NULL);
    if (b)
      return b;
  }
  /* A mapping of its own: a kept buffer inside a malloc arena would pin
   * the arena's free memory above it (+2 MiB RSS under the bench). */
  void *m = mmap(NULL, FRAME_POOL_BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* Gives back frame_get's buffer for a frame of total bytes (NULL is fine). */
static void frame_put(listener *l, uint8_t *buf, size_t total) {
  if (!buf)
    return;
  if (!frame_pooled(total)) {
    free(buf);
    return;
  }
  for (int i = 0; i < FRAME_POOL; i++) {
    uint8_t *none = NULL;
    if (atomic_compare_exchange_strong(&l->frame_pool[i], &none, buf))
      return;
  }
  munmap(buf, FRAME_POOL_BUF);
}

/* A no_samples push (decoded and validated like any other): counted, acked,
 * never stored. The client need not read the answer (it may be gone
 * already). */
static bool handle_empty(conn *c, pp_push *push, int64_t deadline) {
  const Pushprof__V1__PushRequest *req = push->req;
  metrics_add(M_PUSHES_EMPTY, 1);
  if (req->dropped_profiles)
    metrics_drop("sdk_backlog_full", req->dropped_profiles);
  char svc[PP_SERVICE_MAX * 2 + 8];
  log_event(LOG_DEBUG, "empty push", "service=%s pid=%u seq=%llu sdk_dropped=%llu",
            log_quote(req->service, svc, sizeof svc), req->pid, (unsigned long long)req->sequence,
            (unsigned long long)req->dropped_profiles);
  (void)send_reply(c->fd, RC_OK, "", req->sequence, "", deadline);
  pp_push_free(push);
  return false; /* one notice per connection: the client has closed */
}

/* Whether a PushRequest payload says no_samples, before it is decoded. */
static bool peek_no_samples(const uint8_t *payload, size_t len) {
  enum { NO_SAMPLES_FIELD = 11 }; /* PushRequest.no_samples, pushprof.proto */
  uint64_t v = 0;
  return listener_peek_varint(payload, len, NO_SAMPLES_FIELD, &v) == 0 && v;
}

/* Handles one complete frame and frees it (*framep = NULL) as soon as it is
 * durable. Returns false if the connection must close. */
static bool handle_frame(conn *c, uint8_t **framep, size_t len, int64_t deadline) {
  listener *l = c->l;
  uint8_t *frame = *framep;
  int code = RC_INTERNAL;
  char why[REASON_MAX];
  why[0] = 0;
  /* The disk writes the frame while we decode and validate it (once, here:
   * the batcher takes the decoded push); nothing is renamed into the spool
   * (or acked) before the push proved valid. A push that says no_samples is
   * not spooled at all; should the decode disagree with the peek, the
   * decode wins. */
  spool_txn txn;
  bool spooling = !peek_no_samples(frame + PP_FRAME_HEADER_SIZE, len - PP_FRAME_HEADER_SIZE);
  int rc = spooling ? spool_begin(l->sp, frame, len, &txn) : SPOOL_EIO;
  pp_push *push = pp_push_decode(frame, len, l->cfg.max_frame_bytes, &code, why, sizeof why);
  bool empty = push && push->req->no_samples;
  if ((!push || empty) && rc == SPOOL_OK) /* nothing of it is stored */
    spool_abort(l->sp, &txn);
  if (!push) {
    if (code == RC_OK)
      code = RC_INTERNAL;
    uint64_t seq = 0; /* echoed if the payload still shows it */
    listener_peek_sequence(frame + PP_FRAME_HEADER_SIZE, len - PP_FRAME_HEADER_SIZE, &seq);
    reject(c, code_reason(code), code, why[0] ? why : "frame did not decode", seq, deadline);
    return spooling && code != RC_INVALID_FRAME;
  }
  if (empty)
    return handle_empty(c, push, deadline);
  if (!spooling)
    rc = spool_begin(l->sp, frame, len, &txn);
  const Pushprof__V1__PushRequest *req = push->req;
  uint64_t seq = req->sequence;
  char id[SPOOL_ID_MAX];
  if (rc == SPOOL_OK)
    rc = spool_commit(l->sp, &txn, id);
  else if (rc == SPOOL_FULL)
    rc = spool_put(l->sp, frame, len, id); /* may drop the oldest (--spool-drop-oldest) */
  frame_put(l, frame, len);
  *framep = NULL;
  if (rc != SPOOL_OK) {
    pp_push_free(push);
    if (rc == SPOOL_FULL) {
      snprintf(why, sizeof why,
               "spool full (%llu bytes pending): retry later; space frees as batches export "
               "(raise --max-spool-bytes or check the export target)",
               (unsigned long long)spool_bytes(l->sp));
      reject(c, "spool_full", RC_EXHAUSTED, why, seq, deadline);
    } else if (rc == SPOOL_NOSPACE) {
      snprintf(why, sizeof why,
               "spool disk full: no space left to store the push durably: retry later (free "
               "space on the spool's file system or give it a larger volume)");
      reject(c, "disk_full", RC_EXHAUSTED, why, seq, deadline);
    } else {
      snprintf(why, sizeof why, "spool write failed (disk error): retry later");
      reject(c, "spool_error", RC_UNAVAILABLE, why, seq, deadline);
    }
    return true;
  }
  metrics_add(M_PUSHES_ACCEPTED, 1);
  metrics_add(M_PUSH_BYTES, len);
  bool delivered = send_reply(c->fd, RC_OK, "", seq, id, deadline) == 0;
  char svc[PP_SERVICE_MAX * 2 + 8];
  log_event(LOG_DEBUG, "push accepted",
            "id=%s service=%s pid=%u bytes=%zu seq=%llu sdk_dropped=%llu", id,
            log_quote(req->service, svc, sizeof svc), req->pid, len, (unsigned long long)seq,
            (unsigned long long)req->dropped_profiles);
  /* Profiles the SDK had to give up (its backlog was full) are counted here,
   * the first place they can be seen. */
  if (req->dropped_profiles)
    metrics_drop("sdk_backlog_full", req->dropped_profiles);
  /* Durable now (held in the journal, or a file): the batcher owns it
   * whether or not the ack arrived, and releases it from the spool once its
   * batch's manifest is durable. */
  batcher_add(l->b, id, push);
  return delivered;
}

/* The accept thread shut our read side down to make room (see the top of
 * this file); say so, so the client knows to reconnect and send at once. */
static void reply_evicted(conn *c) {
  char why[REASON_MAX];
  snprintf(why, sizeof why,
           "connection closed to make room: no complete frame after %lld ms while the sidecar "
           "was at its connection limit (%d, --max-connections): reconnect and send the whole "
           "frame without pausing",
           (long long)c->evicted_wait_ms, c->l->cfg.max_connections);
  if (send_reply(c->fd, RC_EXHAUSTED, why, 0, NULL, now_ms() + 100) != 0)
    log_event(LOG_DEBUG, "reply not delivered", "peer_pid=%d", (int)c->cred.pid);
}

void listener_set_budget(listener *l, uint64_t dynamic) {
  l->inflight_max = dynamic / 4;
  if (l->inflight_max < l->cfg.max_frame_bytes)
    l->inflight_max = l->cfg.max_frame_bytes;
}

/* Memory for frames is bounded process-wide, not only per frame: 256
 * clients each sending 16 MiB would otherwise need 4 GiB. */
static bool inflight_reserve(listener *l, uint64_t n) {
  uint_fast64_t cur = atomic_load(&l->inflight);
  do {
    if (cur + n > l->inflight_max)
      return false;
  } while (!atomic_compare_exchange_weak(&l->inflight, &cur, cur + n));
  metrics_set(G_MEMORY_FRAMES, (int64_t)(cur + n));
  return true;
}

static void inflight_release(listener *l, uint64_t n) {
  uint_fast64_t left = atomic_fetch_sub(&l->inflight, n) - n;
  metrics_set(G_MEMORY_FRAMES, (int64_t)left);
}

static void reject_busy(conn *c) {
  char text[200];
  snprintf(
      text, sizeof text, "sidecar busy: %llu bytes of frames in flight (limit %llu): retry later",
      (unsigned long long)atomic_load(&c->l->inflight), (unsigned long long)c->l->inflight_max);
  reject(c, "inflight_limit", RC_EXHAUSTED, text, 0, now_ms() + 1000);
}

/* The batcher is over its share of --max-memory (profiles being merged
 * faster than they are packed into manifests): tell the client to retry
 * instead of taking the push in (UNAVAILABLE, which SDKs retry). The
 * connection closes, as for the in-flight limit: its body is not read. */
static void reject_memory(conn *c, const char *reason, int64_t deadline) {
  char text[REASON_MAX];
  if (strcmp(reason, "memory_rss") == 0)
    snprintf(text, sizeof text,
             "sidecar near its memory limit (--max-memory %llu MiB, resident memory over "
             "%llu MiB); retry later",
             (unsigned long long)(c->l->max_memory >> 20),
             (unsigned long long)(membudget_guard_limit() >> 20));
  else
    snprintf(text, sizeof text,
             "sidecar at its memory budget (--max-memory %llu MiB): profiles are being merged "
             "faster than they are written out; retry later",
             (unsigned long long)(c->l->max_memory >> 20));
  reject(c, reason, RC_UNAVAILABLE, text, 0, deadline);
}

/* Waits up to wait_ms, unread, while the resident memory is over the
 * guard's limit (membudget_over) or the batcher has no room; the reason
 * to refuse the frame with, or NULL when it may be read. */
static const char *wait_memory(listener *l, int wait_ms) {
  int64_t give_up = now_ms() + wait_ms;
  while (membudget_over()) {
    if (now_ms() >= give_up)
      return "memory_rss";
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  int64_t left = give_up - now_ms();
  return batcher_wait_room(l->b, left > 0 ? (int)left : 0) ? NULL : "memory_budget";
}

/* Reads the payload behind hdr; the whole frame (header included) comes back
 * from frame_get, or NULL after the reply/count for what went wrong. *reserved
 * says how much of the in-flight budget to give back afterwards. */
static uint8_t *read_body(conn *c, const uint8_t hdr[PP_FRAME_HEADER_SIZE], size_t total,
                          int64_t deadline, size_t *reserved) {
  listener *l = c->l;
  /* Grow with what actually arrives: a header claiming 16 MiB costs little until sent. */
  size_t cap = total < (1u << 20) ? total : (1u << 20);
  if (!inflight_reserve(l, cap)) {
    reject_busy(c);
    return NULL;
  }
  *reserved = cap;
  uint8_t *buf = frame_get(l, total, cap);
  if (!buf) {
    reject(c, "out_of_memory", RC_EXHAUSTED, "sidecar out of memory: retry later", 0,
           now_ms() + 1000);
    return NULL;
  }
  memcpy(buf, hdr, PP_FRAME_HEADER_SIZE);
  size_t have = PP_FRAME_HEADER_SIZE;
  enum rd r = RD_OK;
  while (have < total) {
    if (have == cap) {
      size_t ncap = cap * 2 < total ? cap * 2 : total;
      if (!inflight_reserve(l, ncap - cap)) {
        free(buf);
        reject_busy(c);
        return NULL;
      }
      *reserved += ncap - cap;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        reject(c, "out_of_memory", RC_EXHAUSTED, "sidecar out of memory: retry later", 0,
               now_ms() + 1000);
        return NULL;
      }
      buf = nb;
      cap = ncap;
    }
    size_t n = 0;
    r = read_full(c, buf + have, cap - have, deadline, false, &n);
    have += n;
    if (r != RD_OK)
      break;
  }
  if (r == RD_OK)
    return buf;
  frame_put(l, buf, total);
  char text[160];
  if (r == RD_EVICTED) {
    reply_evicted(c);
  } else if (r == RD_TIMEOUT) {
    snprintf(text, sizeof text, "read timeout: frame incomplete after %d ms (%zu of %zu bytes)",
             l->cfg.read_timeout_ms, have, total);
    reject(c, "read_timeout", RC_INVALID_FRAME, text, 0, now_ms() + 1000);
  } else if (r == RD_EOF) {
    snprintf(text, sizeof text, "truncated frame: connection closed after %zu of %zu bytes", have,
             total);
    reject(c, "truncated_frame", RC_INVALID_FRAME, text, 0, now_ms() + 1000);
  } else {
    metrics_reject("connection_error");
  }
  return NULL;
}

static void conn_loop(conn *c) {
  listener *l = c->l;
  uint8_t hdr[PP_FRAME_HEADER_SIZE];
  unsigned frames = 0;
  for (;;) {
    /* Waiting for a frame and receiving it are each bounded by the read
     * timeout: the frame's deadline starts with its first byte. */
    size_t got = 0;
    atomic_store(&c->since_ms, now_ms());
    atomic_store(&c->state, CS_WAITING);
    enum rd r = read_full(c, hdr, 1, now_ms() + l->cfg.read_timeout_ms, true, &got);
    int64_t deadline = now_ms() + l->cfg.read_timeout_ms;
    if (r == RD_OK) {
      size_t more = 0;
      r = read_full(c, hdr + 1, sizeof hdr - 1, deadline, false, &more);
      got += more;
    }
    if (r == RD_STOP)
      return;
    if (r == RD_EVICTED) {
      reply_evicted(c);
      return;
    }
    if (r == RD_EOF && got == 0)
      return; /* clean close between frames */
    if (r == RD_TIMEOUT && got == 0 && frames > 0)
      return; /* idle keep-alive ends */
    if (r == RD_ERR) {
      if (got)
        metrics_reject("connection_error");
      return;
    }
    if (r == RD_TIMEOUT) {
      char why[128];
      snprintf(why, sizeof why, "read timeout: no complete frame within %d ms",
               l->cfg.read_timeout_ms);
      reject(c, "read_timeout", RC_INVALID_FRAME, why, 0, now_ms() + 1000);
      return;
    }
    if (r == RD_EOF) {
      reject(c, "truncated_frame", RC_INVALID_FRAME,
             "truncated frame: connection closed inside the header", 0, now_ms() + 1000);
      return;
    }
    metrics_add(M_PUSHES_RECEIVED, 1); /* every frame with a whole header */
    pp_frame_header h;
    const char *why = "invalid frame header";
    if (pp_frame_header_decode(hdr, l->cfg.max_frame_bytes, &h, &why) != 0 ||
        h.type != PP_FRAME_PUSH ||
        (uint64_t)h.length + PP_FRAME_HEADER_SIZE > l->cfg.max_frame_bytes) {
      const char *mr = header_reason(hdr, l->cfg.max_frame_bytes);
      char text[REASON_MAX];
      if (strcmp(mr, "frame_too_large") == 0)
        snprintf(text, sizeof text, "%s: limit is %u bytes (--max-frame-bytes)",
                 why ? why : "frame too large", l->cfg.max_frame_bytes);
      else if (strcmp(mr, "bad_frame_type") == 0)
        snprintf(text, sizeof text, "unexpected frame type: only PushRequest (1) is accepted");
      else
        snprintf(text, sizeof text, "%s", why ? why : "invalid frame header");
      reject(c, mr, RC_INVALID_FRAME, text, 0, now_ms() + 1000);
      return;
    }
    size_t total = PP_FRAME_HEADER_SIZE + (size_t)h.length;
    size_t reserved = 0;
    /* At the memory budget a frame waits a moment, unread, for packing to
     * make room, rather than being refused at once and sent again (the
     * round trip costs both sides more than the wait); past the wait it is
     * told to retry. */
    const char *no_room = wait_memory(l, ROOM_WAIT_MS);
    if (no_room) {
      reject_memory(c, no_room, deadline);
      return;
    }
    uint8_t *buf = read_body(c, hdr, total, deadline, &reserved);
    if (buf)
      atomic_store(&c->state, CS_BUSY);
    int64_t hdeadline = now_ms() + l->cfg.read_timeout_ms;
    bool keep = false;
    if (buf && handle_slot_get(l, hdeadline)) {
      keep = handle_frame(c, &buf, total, hdeadline);
      handle_slot_put(l);
    } else if (buf) {
      uint64_t seq = 0;
      listener_peek_sequence(buf + PP_FRAME_HEADER_SIZE, total - PP_FRAME_HEADER_SIZE, &seq);
      reject(c, "busy", RC_UNAVAILABLE,
             "sidecar busy: every frame slot stayed taken for the whole read timeout; retry later",
             seq, now_ms() + 1000);
    }
    frame_put(l, buf, total);
    inflight_release(l, reserved);
    frames++;
    if (!keep)
      return;
  }
}

/* Takes c out of the registry; its fd may be closed only after this. */
static void conn_end(listener *l, conn *c) {
  pthread_mutex_lock(&l->mu);
  int last = --l->open;
  assert(c->slot >= 0 && c->slot <= last && l->conns[c->slot] == c);
  l->conns[c->slot] = l->conns[last];
  l->conns[c->slot]->slot = c->slot;
  l->conns[last] = NULL;
  if (!atomic_load(&c->evicted))
    l->active--;
  metrics_set(G_OPEN_CONNECTIONS, l->active);
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* Gives back the pages of this thread's stack below the caller's frame: a
 * push that was packed and gzipped on this thread touched far more stack
 * than waiting does, and a worker kept for the next connection would hold
 * them (a thread that exits has glibc do the same). Pages below the stack
 * pointer hold nothing live; they come back zero-filled when touched. */
static void trim_stack(uintptr_t lo) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  uintptr_t end = here > 4 * page ? ((here - 4 * page) & ~(page - 1)) : 0;
  if (lo && end > lo)
    (void)madvise((void *)lo, end - lo, MADV_DONTNEED); /* advice: failing is harmless */
}

/* The lowest page of the calling thread's stack, 0 if unknown. */
static uintptr_t stack_low(void) {
  pthread_attr_t a;
  void *addr = NULL;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &a) != 0)
    return 0;
  if (pthread_attr_getstack(&a, &addr, &size) != 0)
    addr = NULL;
  pthread_attr_destroy(&a);
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  return addr ? ((uintptr_t)addr + page - 1) & ~(page - 1) : 0;
}

/* The next queued connection for a worker that just finished one, waiting
 * up to WORKER_IDLE_MS; NULL: the worker is no longer counted and must exit
 * without touching l (listener_stop may free it as soon as mu is released).
 * The worker's stack (lowest page lo) is trimmed once it has waited
 * TRIM_STACK_MS: under load the next connection comes sooner and would
 * fault the same pages in again (a trim per push was ~1% of the CPU, plus
 * its faults). */
static conn *worker_next(listener *l, uintptr_t lo) {
  int idle_ms = l->cfg.worker_idle_ms > 0 ? l->cfg.worker_idle_ms : WORKER_IDLE_MS;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t now_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
  int64_t end_ns = now_ns + idle_ms * 1000000LL;
  int64_t trim_ns = now_ns + TRIM_STACK_MS * 1000000LL;
  if (trim_ns > end_ns)
    trim_ns = end_ns;
  struct timespec until = {end_ns / 1000000000LL, end_ns % 1000000000LL};
  struct timespec trim_at = {trim_ns / 1000000000LL, trim_ns % 1000000000LL};
  bool trimmed = false;
  pthread_mutex_lock(&l->mu);
  l->idle++;
  int rc = l->idle > WORKER_IDLE_MAX && !l->queue ? ETIMEDOUT : 0;
  while (!l->queue && !atomic_load(&l->stopping) && rc != ETIMEDOUT) {
    if (trimmed) {
      rc = pthread_cond_timedwait(&l->work_cv, &l->mu, &until);
      continue;
    }
    if (pthread_cond_timedwait(&l->work_cv, &l->mu, &trim_at) == ETIMEDOUT && !l->queue) {
      pthread_mutex_unlock(&l->mu);
      trim_stack(lo);
      pthread_mutex_lock(&l->mu);
      trimmed = true;
      if (trim_ns >= end_ns)
        rc = ETIMEDOUT;
    }
  }
  l->idle--;
  conn *c = l->queue;
  if (c) {
    l->queue = c->next;
    if (!l->queue)
      l->queue_tail = &l->queue;
    l->queued--;
  } else {
    l->workers--;
    metrics_set(G_CONN_THREADS, l->workers);
    pthread_cond_broadcast(&l->cv);
  }
  pthread_mutex_unlock(&l->mu);
  return c;
}

static void *conn_main(void *arg) {
  conn *c = arg;
  listener *l = c->l;
  uintptr_t lo = stack_low();
  do {
    conn_loop(c);
    conn_end(l, c);
    close(c->fd);
    free(c);
  } while ((c = worker_next(l, lo)));
  return NULL;
}

/* ---- accept thread ---- */

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
  if (reject_log_allowed())
    log_event(LOG_WARN, "connection refused", "reason=%s peer_pid=%d peer_uid=%u why=%s", metric,
              (int)cr->pid, (unsigned)cr->uid, log_quote(why, q, sizeof q));
  (void)l;
  send_reply(fd, code, why, 0, NULL, now_ms() + 100);
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
  if (ev.reason && reject_log_allowed())
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
  int rc = attr_ok ? pthread_create(&t, &attr, conn_main, c) : ENOMEM;
  if (attr_ok)
    pthread_attr_destroy(&attr);
  if (rc == 0)
    metrics_add(M_CONN_THREADS, 1);
  if (rc != 0) {
    pthread_mutex_lock(&l->mu);
    l->workers--;
    metrics_set(G_CONN_THREADS, l->workers);
    pthread_mutex_unlock(&l->mu);
    conn_end(l, c);
    free(c);
    refuse(l, lg, nlg, fd, RC_EXHAUSTED, "thread_create_failed",
           "sidecar cannot start a connection thread: retry later", &cr);
  }
}

static void *accept_main(void *arg) {
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

int listener_start(listener *l, spool *sp, batcher *b) {
  l->sp = sp;
  l->b = b;
  int rc = pthread_create(&l->accept_thread, NULL, accept_main, l);
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
