/* The connection threads: each reads a frame within the read timeout,
 * checks it, makes it durable in the spool, hands it to the batcher and
 * answers; then the next frame on the same connection, or waits a while
 * for the next admitted connection (listener_int.h). */
#include "listener_int.h"

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

bool listener_reject_log_allowed(void) {
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
  if (listener_reject_log_allowed())
    log_event(LOG_WARN, "push rejected", "reason=%s peer_pid=%d peer_uid=%u why=%s", metric_reason,
              (int)c->cred.pid, (unsigned)c->cred.uid, log_quote(why, q, sizeof q));
  if (listener_send_reply(c->fd, code, why, seq, NULL, deadline) != 0)
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
   * the arena's free memory above it. */
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
  (void)listener_send_reply(c->fd, RC_OK, "", req->sequence, "", deadline);
  pp_push_free(push);
  return false; /* one notice per connection: the client has closed */
}

/* Whether a PushRequest payload says no_samples, before it is decoded. */
static bool peek_no_samples(const uint8_t *payload, size_t len) {
  enum { NO_SAMPLES_FIELD = 11 }; /* PushRequest.no_samples, pushprof.proto */
  uint64_t v = 0;
  return listener_peek_varint(payload, len, NO_SAMPLES_FIELD, &v) == 0 && v;
}

/* Whether a PushRequest payload names an on-demand session, before it is
 * decoded: such a push is answered from memory, never spooled. */
static bool peek_session(const uint8_t *payload, size_t len) {
  enum { SESSION_ID_FIELD = 13 }; /* PushRequest.session_id, pushprof.proto */
  uint64_t v = 0;
  return listener_peek_varint(payload, len, SESSION_ID_FIELD, &v) == 0 && v;
}

/* A push answering an on-demand session: merged into the session's answer
 * (not spooled, not exported: the continuous profile has those samples at
 * its own rate). Acked OK, or INVALID_PUSH if no such session runs. */
static bool handle_session(conn *c, pp_push *push, int64_t deadline) {
  char why[REASON_MAX];
  uint64_t seq = push->req->sequence;
  int rc = ondemand_deliver(c->l->cfg.od, push, why, sizeof why);
  pp_push_free(push);
  if (rc != 0) {
    reject(c, "ondemand_refused", RC_INVALID_PUSH, why, seq, deadline);
    return true;
  }
  metrics_add(M_PUSHES_ACCEPTED, 1);
  return listener_send_reply(c->fd, RC_OK, "", seq, "", deadline) == 0;
}

/* A connection that opens with a Subscribe: the frame is read and decoded
 * here, then the connection belongs to the on-demand module (c->fd = -1). */
static void handle_subscribe(conn *c, const uint8_t hdr[PP_FRAME_HEADER_SIZE], uint32_t length,
                             int64_t deadline) {
  uint8_t *buf = malloc(length ? length : 1);
  size_t got = 0;
  if (!buf) {
    reject(c, "out_of_memory", RC_EXHAUSTED, "sidecar out of memory: retry later", 0,
           now_ms() + 1000);
    return;
  }
  (void)hdr;
  enum rd r = length ? read_full(c, buf, length, deadline, false, &got) : RD_OK;
  if (r != RD_OK) {
    free(buf);
    reject(c, r == RD_TIMEOUT ? "read_timeout" : "truncated_frame", RC_INVALID_FRAME,
           "incomplete Subscribe frame", 0, now_ms() + 1000);
    return;
  }
  Pushprof__V1__Subscribe *m = pushprof__v1__subscribe__unpack(NULL, length, buf);
  free(buf);
  if (!m) {
    reject(c, "bad_subscribe", RC_INVALID_FRAME, "Subscribe payload did not decode", 0,
           now_ms() + 1000);
    return;
  }
  ondemand_adopt(c->l->cfg.od, c->fd, m, c->cred.uid);
  pushprof__v1__subscribe__free_unpacked(m, NULL);
  c->fd = -1;
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
  bool spooling = !peek_no_samples(frame + PP_FRAME_HEADER_SIZE, len - PP_FRAME_HEADER_SIZE) &&
                  !peek_session(frame + PP_FRAME_HEADER_SIZE, len - PP_FRAME_HEADER_SIZE);
  int rc = spooling ? spool_begin(l->sp, frame, len, &txn) : SPOOL_EIO;
  pp_push *push = pp_push_decode(frame, len, l->cfg.max_frame_bytes, &code, why, sizeof why);
  bool empty = push && push->req->no_samples;
  if ((!push || empty || push->req->session_id) && rc == SPOOL_OK) /* nothing of it is stored */
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
  if (push->req->session_id)
    return handle_session(c, push, deadline);
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
  bool delivered = listener_send_reply(c->fd, RC_OK, "", seq, id, deadline) == 0;
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
  ondemand_seen(l->cfg.od, req);
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
  if (listener_send_reply(c->fd, RC_EXHAUSTED, why, 0, NULL, now_ms() + 100) != 0)
    log_event(LOG_DEBUG, "reply not delivered", "peer_pid=%d", (int)c->cred.pid);
}

void listener_set_ondemand(listener *l, struct ondemand *od) {
  l->cfg.od = od;
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
    pp_frame_header h;
    const char *why = "invalid frame header";
    if (frames == 0 && l->cfg.od && pp_frame_header_decode(hdr, PP_SUBSCRIBE_MAX, &h, NULL) == 0 &&
        h.type == PP_FRAME_SUBSCRIBE) {
      handle_subscribe(c, hdr, h.length, deadline);
      return;
    }
    metrics_add(M_PUSHES_RECEIVED, 1); /* every frame with a whole header */
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
void listener_conn_end(listener *l, conn *c) {
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
 * fault the same pages in again. */
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

void *listener_conn_main(void *arg) {
  conn *c = arg;
  listener *l = c->l;
  uintptr_t lo = stack_low();
  do {
    conn_loop(c);
    listener_conn_end(l, c);
    if (c->fd >= 0) /* -1: handed to the on-demand module */
      close(c->fd);
    free(c);
  } while ((c = worker_next(l, lo)));
  return NULL;
}
