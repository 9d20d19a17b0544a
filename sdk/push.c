/* The push path (see push.h). One pusher thread per process owns the
 * periodic cuts; the backlog is a bounded FIFO of cut windows guarded by
 * push_lock; an entry being sent is out of the FIFO, so the final flush and
 * the pusher never send the same window twice. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_internal.h"
#include "control.h"
#include "procstat.h"
#include "profiles.h"
#include "sdk_log.h"
#include "pp_client.h"
#include "pp_frame.h"
#include "push.h"
#include "pushprof.h"
#include "sampler.h"
#include "term.h"
#include "threads_linux.h"
#include "pp_hex.h"

#define PUSH_SEND_TIMEOUT_MS 5000 /* one periodic push, connect to ack */
#define PUSH_REASONS_SEEN 16      /* distinct refusal reasons logged once each */
#define PUSH_NOTICE_CONNECT_MS 20 /* the no-samples notice: connect, never wait */

typedef struct push_entry {
  uint8_t *pprof; /* one profile type's window */
  size_t len;
  unsigned type; /* its PUSHPROF_PROFILE_* bit */
  int64_t start_ns, end_ns;
  uint64_t seq;
  uint64_t session; /* an on-demand session's answer: sent once, never backlogged */
} push_entry;

#define PUSH_SESSIONS_PENDING 4 /* session cuts asked for and not yet sent */

static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t push_cond = PTHREAD_COND_INITIALIZER;
static struct {
  /* Set at start, read-only after. */
  char socket_path[108];
  char spool_dir[PATH_MAX];
  char service[ENV_CONFIG_SERVICE_MAX + 1];
  char hostname[PP_HOSTNAME_MAX + 1];
  char labels[ENV_CONFIG_LABELS_BYTES]; /* env_config's packed pairs */
  size_t nlabels;
  int period_ms, exit_timeout_ms;
  unsigned profiles; /* PUSHPROF_PROFILE_* */
  int wake_r, wake_w;
  pthread_t thread;
  void (*on_term)(void); /* the owner's stop, run by the pusher on a term signal */
  /* Guarded by push_lock. */
  push_entry *q; /* ring of capacity qcap */
  size_t qcap, qhead, qlen;
  uint64_t seq;
  uint64_t dropped_unreported, dropped_total;
  uint64_t flush_req, flush_done;
  int flush_rc;
  int stop;
  struct {
    unsigned type;
    uint64_t id;
  } sess[PUSH_SESSIONS_PENDING];
  size_t nsess;
  char reasons[PUSH_REASONS_SEEN][96];
  size_t nreasons;
} P = {.wake_r = -1, .wake_w = -1};
static atomic_int push_on;      /* pusher running (start .. final) */
static atomic_int push_term_ok; /* term handlers may wake the pusher */
static atomic_int push_thread_on;
/* Guards starting the pusher against push_final/push_leave_empty. The
 * pusher starts lazily (ensure_pusher): most short processes never need it. */
static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_first_due_ns; /* CLOCK_MONOTONIC: the first periodic push */

static int64_t now_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- backlog (push_lock held) ---- */

static void entry_free(push_entry *e) {
  free(e->pprof);
  e->pprof = NULL;
}

static void drop_oldest_locked(const char *why) {
  push_entry *e = &P.q[P.qhead];
  entry_free(e);
  P.qhead = (P.qhead + 1) % P.qcap;
  P.qlen--;
  P.dropped_unreported++;
  P.dropped_total++;
  sdk_log("pushprof: dropped the profile of %.3f s (%s); %llu dropped so far",
          (double)(e->end_ns - e->start_ns) / 1e9, why, (unsigned long long)P.dropped_total);
}

static void q_push_back_locked(push_entry e) {
  if (P.qlen == P.qcap)
    drop_oldest_locked("backlog full: raise PUSHPROF_BACKLOG or check the sidecar");
  P.q[(P.qhead + P.qlen) % P.qcap] = e;
  P.qlen++;
}

static void q_push_front_locked(push_entry e) {
  if (P.qlen == P.qcap) {
    /* e is older than everything queued: it is the one to give up. */
    P.dropped_unreported++;
    P.dropped_total++;
    sdk_log("pushprof: dropped the profile of %.3f s (backlog full: raise PUSHPROF_BACKLOG or "
            "check the sidecar); %llu dropped so far",
            (double)(e.end_ns - e.start_ns) / 1e9, (unsigned long long)P.dropped_total);
    entry_free(&e);
    return;
  }
  P.qhead = (P.qhead + P.qcap - 1) % P.qcap;
  P.q[P.qhead] = e;
  P.qlen++;
}

static int q_pop_front_locked(push_entry *e) {
  if (P.qlen == 0)
    return 0;
  *e = P.q[P.qhead];
  P.q[P.qhead].pprof = NULL;
  P.qhead = (P.qhead + 1) % P.qcap;
  P.qlen--;
  return 1;
}

/* Logs a refusal or failure reason once per distinct reason (push_lock held). */
static void log_once_locked(const char *what, const char *reason) {
  char key[96];
  snprintf(key, sizeof key, "%s: %s", what, reason);
  for (size_t i = 0; i < P.nreasons; i++)
    if (strcmp(P.reasons[i], key) == 0)
      return;
  if (P.nreasons < PUSH_REASONS_SEEN)
    memcpy(P.reasons[P.nreasons++], key, sizeof key);
  sdk_log("pushprof: %s: %s (logged once; retrying with the backlog, at most %zu profiles)", what,
          reason, P.qcap);
}

/* ---- one push ---- */

static _Atomic int64_t g_process_start_ns; /* 0: not read yet (reset by push_start) */

/* When the process started: read from /proc at the first push (a process
 * that never pushes a profile never reads it). */
static int64_t process_start_once(void) {
  int64_t v = atomic_load(&g_process_start_ns);
  if (v == 0) {
    v = procstat_start_ns();
    atomic_store(&g_process_start_ns, v);
  }
  return v;
}

size_t push_labels_view(const char *kv, size_t n, Pushprof__V1__Label *lab,
                        Pushprof__V1__Label **labp) {
  if (n > ENV_CONFIG_LABELS_MAX)
    n = ENV_CONFIG_LABELS_MAX;
  for (size_t i = 0; i < n; i++) {
    pushprof__v1__label__init(&lab[i]);
    lab[i].key = (char *)kv;
    kv += strlen(kv) + 1;
    lab[i].value = (char *)kv;
    kv += strlen(kv) + 1;
    labp[i] = &lab[i];
  }
  return n;
}

static int encode(const push_entry *e, uint64_t dropped, uint8_t **frame, size_t *len) {
  Pushprof__V1__Label lab[ENV_CONFIG_LABELS_MAX];
  Pushprof__V1__Label *labp[ENV_CONFIG_LABELS_MAX];
  push_labels_view(P.labels, P.nlabels, lab, labp);
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = P.service;
  req.n_labels = P.nlabels;
  req.labels = labp;
  req.pid = (uint32_t)getpid();
  req.hostname = P.hostname;
  req.start_time_nanos = e->start_ns;
  req.end_time_nanos = e->end_ns;
  req.sequence = e->seq;
  req.pprof.data = e->pprof;
  req.pprof.len = e->len;
  req.process_start_time_nanos = e->pprof ? process_start_once() : 0;
  req.dropped_profiles = dropped;
  req.no_samples = e->pprof == NULL; /* notify_empty */
  req.profile_type = e->pprof ? (char *)env_config_profile_name(e->type) : "";
  req.session_id = e->session;
  return pp_client_encode_push(&req, frame, len);
}

enum { SENT_ACKED, SENT_RETRY, SENT_DROPPED };

/* Sends e; *rc gets the PUSHPROF_E* code of a failure. */
static int send_entry(const push_entry *e, int timeout_ms, int *rc) {
  uint8_t *frame = NULL;
  size_t len = 0;
  pthread_mutex_lock(&push_lock);
  uint64_t dropped = P.dropped_unreported;
  pthread_mutex_unlock(&push_lock);
  if (encode(e, dropped, &frame, &len) != 0) {
    *rc = PUSHPROF_ENOMEM;
    return SENT_RETRY;
  }
  pp_client_reply reply;
  memset(&reply, 0, sizeof reply);
  int st = pp_client_push_frame(P.socket_path, frame, len, timeout_ms, &reply);
  free(frame);
  int out = SENT_RETRY;
  pthread_mutex_lock(&push_lock);
  switch (st) {
  case PP_CLIENT_ACKED:
    P.dropped_unreported -= dropped < P.dropped_unreported ? dropped : P.dropped_unreported;
    *rc = PUSHPROF_OK;
    out = SENT_ACKED;
    break;
  case PP_CLIENT_REFUSED:
    *rc = PUSHPROF_EREFUSED;
    if (reply.code == PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED ||
        reply.code == PUSHPROF__V1__PUSH_REPLY__CODE__UNAVAILABLE) {
      log_once_locked("the sidecar asked to retry later", reply.reason);
    } else {
      /* Retrying the same bytes cannot succeed: give this one up, counted. */
      P.dropped_unreported++;
      P.dropped_total++;
      sdk_log("pushprof: the sidecar refused a profile for good: %s; %llu dropped so far",
              reply.reason, (unsigned long long)P.dropped_total);
      out = SENT_DROPPED;
    }
    break;
  case PP_CLIENT_TIMEOUT:
    *rc = PUSHPROF_ETIMEDOUT;
    log_once_locked("push timed out", reply.reason);
    break;
  default:
    *rc = PUSHPROF_EUNAVAILABLE;
    log_once_locked("cannot push", reply.reason);
    break;
  }
  pthread_mutex_unlock(&push_lock);
  return out;
}

/* Cuts a window into the backlog, then sends the backlog oldest first until
 * one fails or the deadline (CLOCK_MONOTONIC ns) passes. Returns 0 when the
 * backlog is empty, else the last failure's code. */
static int cut_and_send(int64_t deadline, int per_send_ms) {
  push_entry e = {0};
  int rc = 0;
  /* One push per profile type: each has its own sample types, and the
   * sidecar batches and merges each by its meaning. */
  for (unsigned bit = PROFILES_FIRST; bit <= PROFILES_LAST; bit <<= 1) {
    if (!(P.profiles & bit))
      continue;
    memset(&e, 0, sizeof e);
    int r = profiles_cut(bit, &e.pprof, &e.len, &e.start_ns, &e.end_ns);
    e.type = bit;
    pthread_mutex_lock(&push_lock);
    if (r == 0) {
      e.seq = ++P.seq;
      q_push_back_locked(e);
    }
    pthread_mutex_unlock(&push_lock);
    if (r != 0 && rc == 0)
      rc = r;
  }
  int last = rc;
  for (;;) {
    int64_t left_ms = (deadline - now_ns(CLOCK_MONOTONIC)) / 1000000;
    if (left_ms <= 0)
      return last ? last : PUSHPROF_ETIMEDOUT;
    pthread_mutex_lock(&push_lock);
    int have = q_pop_front_locked(&e);
    pthread_mutex_unlock(&push_lock);
    if (!have)
      return last;
    int t = left_ms < per_send_ms ? (int)left_ms : per_send_ms;
    int r = send_entry(&e, t, &last);
    if (r == SENT_RETRY) {
      pthread_mutex_lock(&push_lock);
      q_push_front_locked(e);
      pthread_mutex_unlock(&push_lock);
      return last;
    }
    entry_free(&e);
    if (r == SENT_ACKED)
      last = 0;
  }
}

/* ---- spool drop-in ---- */

static int write_dropin(const push_entry *e, uint64_t dropped) {
  uint8_t *frame = NULL;
  size_t len = 0;
  char name[64], tmp[66];
  int dfd = -1, fd = -1, rc = -1;
  if (encode(e, dropped, &frame, &len) != 0)
    return -1;
  snprintf(name, sizeof name, "%020lld-%d-%llu%s", (long long)now_ns(CLOCK_REALTIME), (int)getpid(),
           (unsigned long long)e->seq, PP_SPOOL_SUFFIX);
  snprintf(tmp, sizeof tmp, ".%s", name);
  dfd = open(P.spool_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    goto out;
  fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0)
    goto out;
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, frame + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      goto out;
    off += (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    fd = -1;
    goto out;
  }
  fd = -1;
  if (renameat(dfd, tmp, dfd, name) != 0)
    goto out;
  (void)fsync(dfd);
  rc = 0;
out:;
  int saved = errno;
  if (fd >= 0) {
    close(fd);
  }
  if (rc != 0 && dfd >= 0)
    unlinkat(dfd, tmp, 0);
  if (dfd >= 0)
    close(dfd);
  free(frame);
  errno = saved;
  return rc;
}

/* ---- the empty exit ---- */

/* Tells the sidecar, without waiting, that this process took no sample since
 * its last push: it counts it (pushprof_pushes_empty_total) and the drops it
 * carries. Costs a connect and one small send; failure changes nothing. */
static void notify_empty(void) {
  push_entry e = {0};
  uint8_t *frame = NULL;
  size_t len = 0;
  pthread_mutex_lock(&push_lock);
  uint64_t dropped = P.dropped_unreported;
  e.seq = ++P.seq;
  pthread_mutex_unlock(&push_lock);
  e.start_ns = e.end_ns = now_ns(CLOCK_REALTIME);
  if (encode(&e, dropped, &frame, &len) != 0)
    return;
  (void)pp_client_send_frame_noreply(P.socket_path, frame, len, PUSH_NOTICE_CONNECT_MS);
  free(frame);
}

/* ---- the pusher thread ---- */

/* What the pusher is woken for: one byte each on its pipe. A term signal's
 * number travels beside it (g_term_signo): the pipe carries commands only. */
enum push_cmd {
  PUSH_CMD_FLUSH = 'F',
  PUSH_CMD_STOP = 'S',
  PUSH_CMD_TERM = 'T',
  PUSH_CMD_SESSION = 'O'
};
static atomic_int g_term_signo; /* the first term signal caught; 0: none */

static void wake(enum push_cmd cmd) {
  char what = (char)cmd;
  if (P.wake_w >= 0) {
    ssize_t w = write(P.wake_w, &what, 1);
    (void)w; /* a full pipe already holds a wake-up */
  }
}

static void log_spawn_failure(int rc) {
  pthread_mutex_lock(&push_lock);
  log_once_locked("cannot start the pusher thread (periodic pushes wait; the exit push does not)",
                  strerror(rc));
  pthread_mutex_unlock(&push_lock);
}

static void push_tick(void);
static void ensure_pusher(void);

static void run_flush_cycle(int64_t deadline) {
  pthread_mutex_lock(&push_lock);
  uint64_t req = P.flush_req;
  pthread_mutex_unlock(&push_lock);
  int rc = cut_and_send(deadline, PUSH_SEND_TIMEOUT_MS);
  pthread_mutex_lock(&push_lock);
  P.flush_rc = rc;
  P.flush_done = req;
  pthread_cond_broadcast(&push_cond);
  pthread_mutex_unlock(&push_lock);
}

/* Cuts an on-demand session's profile and pushes it once: the sidecar
 * answers the session's requester with it, so a retry after the session's
 * end would be too late. A failure is logged (once per reason). */
static void send_session(unsigned type, uint64_t id, int timeout_ms) {
  push_entry e = {.type = type, .session = id};
  int r = profiles_session_cut(type, id, &e.pprof, &e.len, &e.start_ns, &e.end_ns);
  if (r != 0)
    return; /* a session this process does not run (ended, or never started) */
  pthread_mutex_lock(&push_lock);
  e.seq = ++P.seq;
  pthread_mutex_unlock(&push_lock);
  int rc;
  if (send_entry(&e, timeout_ms, &rc) != SENT_ACKED) {
    pthread_mutex_lock(&push_lock);
    log_once_locked("an on-demand profile was not delivered", pushprof_strerror(rc));
    pthread_mutex_unlock(&push_lock);
  }
  entry_free(&e);
}

static void run_sessions(void) {
  for (;;) {
    pthread_mutex_lock(&push_lock);
    if (P.nsess == 0) {
      pthread_mutex_unlock(&push_lock);
      return;
    }
    unsigned type = P.sess[0].type;
    uint64_t id = P.sess[0].id;
    memmove(P.sess, P.sess + 1, (P.nsess - 1) * sizeof P.sess[0]);
    P.nsess--;
    pthread_mutex_unlock(&push_lock);
    send_session(type, id, PUSH_SEND_TIMEOUT_MS);
  }
}

void push_session(unsigned type, uint64_t id) {
  pthread_mutex_lock(&push_lock);
  int ok = P.nsess < PUSH_SESSIONS_PENDING;
  if (ok) {
    P.sess[P.nsess].type = type;
    P.sess[P.nsess].id = id;
    P.nsess++;
  }
  pthread_mutex_unlock(&push_lock);
  if (!ok)
    return; /* the sidecar asked faster than we push: it answers without us */
  ensure_pusher();
  wake(PUSH_CMD_SESSION);
}

static void *pusher_main(void *arg) {
  (void)arg;
  threads_exclude_self();
  int64_t next = g_first_due_ns; /* started late: the period runs from push_start */
  for (;;) {
    int64_t left = (next - now_ns(CLOCK_MONOTONIC)) / 1000000;
    struct pollfd pfd = {.fd = P.wake_r, .events = POLLIN};
    int n = poll(&pfd, 1, left > 0 ? (int)(left > 60000 ? 60000 : left) : 0);
    int flush = 0, term = 0, sessions = 0;
    if (n > 0) {
      char buf[64];
      ssize_t r = read(P.wake_r, buf, sizeof buf);
      for (ssize_t i = 0; i < r; i++) {
        if (buf[i] == PUSH_CMD_FLUSH)
          flush = 1;
        else if (buf[i] == PUSH_CMD_SESSION)
          sessions = 1;
        else if (buf[i] == PUSH_CMD_TERM)
          term = atomic_load(&g_term_signo);
      }
    }
    pthread_mutex_lock(&push_lock);
    int stop = P.stop;
    pthread_mutex_unlock(&push_lock);
    if (stop)
      break;
    if (term) {
      /* The owner's stop (sampling off, the last window pushed within the
       * exit timeout, through push_final), then die of the signal as if we
       * were not here. */
      if (P.on_term)
        P.on_term();
      term_die_of(term);
      break; /* not reached unless the signal was ignored meanwhile */
    }
    if (sessions)
      run_sessions();
    if (flush || now_ns(CLOCK_MONOTONIC) >= next) {
      int64_t deadline = now_ns(CLOCK_MONOTONIC) + (int64_t)P.period_ms * 1000000;
      run_flush_cycle(deadline);
      if (!flush || now_ns(CLOCK_MONOTONIC) >= next)
        next = now_ns(CLOCK_MONOTONIC) + (int64_t)P.period_ms * 1000000;
    }
  }
  threads_exclude_end();
  return NULL;
}

/* ---- public to the SDK ---- */

int push_start(const env_config *cfg, void (*on_term)(void), char *err, size_t errlen) {
  if (atomic_load(&push_thread_on)) {
    /* Left by push_leave_empty (an exec that failed restarts us). */
    wake(PUSH_CMD_STOP);
    pthread_join(P.thread, NULL);
    atomic_store(&push_thread_on, 0);
  }
  if (P.wake_r >= 0) {
    close(P.wake_r);
    close(P.wake_w);
    P.wake_r = P.wake_w = -1;
  }
  free(P.q);
  P.q = NULL;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    snprintf(err, errlen, "cannot create the pusher's pipe: %s", strerror(errno));
    return PUSHPROF_ESYS;
  }
  pthread_mutex_lock(&push_lock);
  P.q = calloc((size_t)cfg->backlog, sizeof *P.q);
  if (!P.q) {
    pthread_mutex_unlock(&push_lock);
    close(fds[0]);
    close(fds[1]);
    snprintf(err, errlen, "out of memory");
    return PUSHPROF_ENOMEM;
  }
  P.qcap = (size_t)cfg->backlog;
  P.qhead = P.qlen = 0;
  memcpy(P.labels, cfg->labels, cfg->labels_len);
  P.nlabels = cfg->nlabels;
  snprintf(P.socket_path, sizeof P.socket_path, "%s", cfg->socket_path);
  snprintf(P.spool_dir, sizeof P.spool_dir, "%s", cfg->spool_dir);
  snprintf(P.service, sizeof P.service, "%s", cfg->service);
  if (gethostname(P.hostname, sizeof P.hostname) != 0)
    snprintf(P.hostname, sizeof P.hostname, "unknown");
  P.hostname[sizeof P.hostname - 1] = '\0';
  P.period_ms = cfg->upload_period_s * 1000;
  P.profiles = cfg->profiles;
  P.on_term = on_term;
  atomic_store(&g_term_signo, 0);
  atomic_store(&g_process_start_ns, 0); /* a forked child has its own */
  P.exit_timeout_ms = cfg->exit_timeout_ms;
  P.wake_r = fds[0];
  P.wake_w = fds[1];
  P.stop = 0;
  P.flush_req = P.flush_done = 0;
  P.nreasons = 0;
  pthread_mutex_unlock(&push_lock);
  g_first_due_ns = now_ns(CLOCK_MONOTONIC) + (int64_t)P.period_ms * 1000000;
  /* The pusher starts when first needed (ensure_pusher): at the first
   * period, a flush or a term signal. A short process never starts it. */
  atomic_store(&push_on, 1);
  atomic_store(&push_term_ok, 1);
  control_start(cfg);
  sampler_set_tick(push_tick);
  return 0;
}

/* Starts the pusher thread unless it runs or the push path is over. Not
 * sampled: its CPU (cutting, symbolizing, encoding) is the SDK's own, not
 * the host's, and it takes none of the host's signals. */
static void ensure_pusher(void) {
  pthread_mutex_lock(&spawn_lock);
  if (atomic_load(&push_on) && !atomic_load(&push_thread_on)) {
    int rc = threads_spawn_internal(&P.thread, NULL, pusher_main, NULL);
    if (rc == 0)
      atomic_store(&push_thread_on, 1);
    else
      log_spawn_failure(rc);
  }
  pthread_mutex_unlock(&spawn_lock);
}

/* On the collector thread, every drain (and at once when a term signal
 * wakes it): starts the pusher when its first period is due or a term
 * signal waits for it. */
static void push_tick(void) {
  if (!atomic_load(&push_on))
    return;
  control_tick();
  if (atomic_load(&push_thread_on))
    return;
  if (now_ns(CLOCK_MONOTONIC) >= g_first_due_ns || atomic_load(&g_term_signo) != 0)
    ensure_pusher();
}

int push_active(void) {
  return atomic_load(&push_on);
}

int push_flush(int timeout_ms) {
  if (!atomic_load(&push_on))
    return PUSHPROF_ENOTSTARTED;
  if (timeout_ms < 0)
    return PUSHPROF_EINVAL;
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  ensure_pusher();
  pthread_mutex_lock(&push_lock);
  uint64_t my = ++P.flush_req;
  pthread_mutex_unlock(&push_lock);
  wake(PUSH_CMD_FLUSH);
  int rc = 0;
  pthread_mutex_lock(&push_lock);
  while (P.flush_done < my && rc == 0)
    rc = pthread_cond_clockwait(&push_cond, &push_lock, CLOCK_MONOTONIC, &dl);
  int out = P.flush_done >= my ? P.flush_rc : PUSHPROF_ETIMEDOUT;
  pthread_mutex_unlock(&push_lock);
  return out;
}

int push_nothing_to_send(void) {
  pthread_mutex_lock(&push_lock);
  int backlog = P.qlen > 0;
  pthread_mutex_unlock(&push_lock);
  if (backlog)
    return 0;
  return profiles_windows_empty(P.profiles);
}

int push_leave_empty(void) {
  pthread_mutex_lock(&spawn_lock);
  int was_on = atomic_exchange(&push_on, 0);
  pthread_mutex_unlock(&spawn_lock);
  if (!was_on)
    return PUSHPROF_ENOTSTARTED;
  atomic_store(&push_term_ok, 0); /* a late SIGTERM takes its default action */
  pthread_mutex_lock(&push_lock);
  P.stop = 1; /* seen at its next wake-up; not woken, not waited for */
  pthread_mutex_unlock(&push_lock);
  notify_empty();
  return 0;
}

int push_final(int timeout_ms) {
  pthread_mutex_lock(&spawn_lock); /* no pusher starts after this */
  int was_on = atomic_exchange(&push_on, 0);
  pthread_mutex_unlock(&spawn_lock);
  if (!was_on)
    return PUSHPROF_ENOTSTARTED;
  atomic_store(&push_term_ok, 0); /* a late SIGTERM takes its default action */
  uint64_t session = control_stop();
  int64_t start = now_ns(CLOCK_MONOTONIC);
  /* Leave a tenth of the budget to write drop-ins for what is left. */
  int64_t deadline = start + (int64_t)timeout_ms * 900000;
  int on_pusher = atomic_load(&push_thread_on) && pthread_equal(pthread_self(), P.thread);
  if (atomic_load(&push_thread_on) && !on_pusher) {
    pthread_mutex_lock(&push_lock);
    P.stop = 1;
    pthread_mutex_unlock(&push_lock);
    wake(PUSH_CMD_STOP);
    struct timespec dl = {.tv_sec = (time_t)(deadline / 1000000000),
                          .tv_nsec = (long)(deadline % 1000000000)};
    /* pthread_timedjoin_np waits against CLOCK_REALTIME: convert. */
    int64_t rt = now_ns(CLOCK_REALTIME) + (deadline - now_ns(CLOCK_MONOTONIC));
    dl.tv_sec = (time_t)(rt / 1000000000);
    dl.tv_nsec = (long)(rt % 1000000000);
    if (pthread_timedjoin_np(P.thread, NULL, &dl) == 0)
      atomic_store(&push_thread_on, 0);
  }
  /* A process that took no sample since its last push (most short commands:
   * /bin/true, ls) has nothing to say: no symbolization, no push, no wait for
   * an ack. The sidecar counts it from a one-way notice (see notify_empty). */
  /* An on-demand session still running: what it holds is its answer. */
  if (session)
    send_session(PUSHPROF_PROFILE_CPU, session, timeout_ms / 4 > 0 ? timeout_ms / 4 : 1);
  int rc;
  if (push_nothing_to_send()) {
    notify_empty();
    return 0;
  }
  rc = cut_and_send(deadline, PUSH_SEND_TIMEOUT_MS);
  /* Whatever is left: the sidecar's spool, or one line saying what is lost. */
  size_t spooled = 0, lost = 0;
  push_entry e;
  for (;;) {
    pthread_mutex_lock(&push_lock);
    int have = q_pop_front_locked(&e);
    uint64_t dropped = P.dropped_unreported;
    pthread_mutex_unlock(&push_lock);
    if (!have)
      break;
    if (P.spool_dir[0] && write_dropin(&e, dropped) == 0)
      spooled++;
    else
      lost++;
    entry_free(&e);
  }
  if (spooled)
    sdk_log("pushprof: the sidecar at %s did not take %zu profile(s) in time; written to its spool "
            "%s",
            P.socket_path, spooled, P.spool_dir);
  if (lost)
    sdk_log("pushprof: %zu profile(s) lost at exit: the sidecar at %s did not take them within "
            "%d ms%s",
            lost, P.socket_path, timeout_ms,
            P.spool_dir[0] ? " and the spool was not writable"
                           : " (set PUSHPROF_SPOOL_DIR to the sidecar's spool to keep them)");
  return spooled + lost ? (rc ? rc : PUSHPROF_ETIMEDOUT) : 0;
}

static void term_handler(int signo) {
  int saved = errno;
  char b = PUSH_CMD_TERM;
  int none = 0;
  (void)atomic_compare_exchange_strong(&g_term_signo, &none, signo); /* the first one wins */
  if (atomic_load(&push_term_ok) && P.wake_w >= 0 && write(P.wake_w, &b, 1) == 1) {
    sampler_wake_from_signal(); /* its tick starts the pusher if it is not running */
  } else {
    /* Nobody to flush: behave exactly as the default action would. */
    term_die_of(signo);
  }
  errno = saved;
}

void push_install_term_handlers(void) {
  term_install(term_handler);
}

void push_atfork_child(void) {
  /* The pusher thread, the backlog and the subscription are the parent's. */
  control_atfork_child();
  P.nsess = 0;
  atomic_store(&push_on, 0);
  atomic_store(&push_thread_on, 0);
  atomic_store(&push_term_ok, 0);
  pthread_mutex_init(&push_lock, NULL);
  pthread_mutex_init(&spawn_lock, NULL);
  pthread_cond_init(&push_cond, NULL);
  for (size_t i = 0; i < P.qlen; i++)
    entry_free(&P.q[(P.qhead + i) % P.qcap]);
  free(P.q);
  P.q = NULL;
  P.qlen = P.qcap = P.qhead = 0;
  if (P.wake_r >= 0)
    close(P.wake_r);
  if (P.wake_w >= 0)
    close(P.wake_w);
  P.wake_r = P.wake_w = -1;
  P.dropped_unreported = P.dropped_total = 0;
  P.seq = 0;
}
