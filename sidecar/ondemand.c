/* On-demand profiles (ondemand.h). One mutex guards the subscriptions and
 * the sessions; cv (CLOCK_MONOTONIC) wakes a session's thread when a push
 * arrives, a joined process goes, a DELETE comes or the sidecar stops. */
#include "ondemand.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "pp_arena.h"
#include "pp_builder.h"
#include "pp_frame.h"
#include "pp_gzip.h"
#include "pp_merge.h"

#define SEEN_MAX 256
#define SEEN_FOR_MS (10 * 60 * 1000) /* a push older than this no longer lists its process */
#define JOINED_MAX OD_MAX_SUBSCRIBERS

static const char *const type_names[OD_NTYPES] = {"cpu", "heap"};

typedef struct sub {
  uint64_t id; /* never reused: epoll events name subscriptions by it */
  int fd;
  uid_t uid;
  uint32_t pid, hz;
  unsigned types; /* 1 << od_type */
  char *service, *hostname;
  size_t nlabels;
  char **keys, **values;
  int64_t since_ms;
} sub;

typedef struct joined {
  uint64_t sub_id; /* 0 once the subscription is gone */
  uint32_t pid;
  char service[PP_SERVICE_MAX + 1];
  bool delivered, gone;
  char error[160]; /* a push that could not be merged */
} joined;

typedef struct session {
  bool running, stop, window_over;
  uint64_t id;
  const od_request *rq; /* the running POST's, valid while running */
  int hz, seconds;
  int64_t started_real_ns, deadline_ms;
  joined *j;
  size_t nj;
  pp_builder *b;
  size_t delivered;
} session;

typedef struct seen {
  char service[PP_SERVICE_MAX + 1];
  uint32_t pid;
  int64_t at_ms;
} seen;

struct ondemand {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sub **subs;
  size_t nsubs;
  uint64_t next_sub_id, next_session_id;
  session sess[OD_NTYPES];
  seen seen[SEEN_MAX];
  size_t seen_next;
  bool closing;
  int ep, wake;
  pthread_t thread;
};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- subscriptions ---- */

static int send_control(int fd, Pushprof__V1__Control__Kind kind, uint64_t id, const char *type,
                        int hz, int duration_ms, const char *reason) {
  Pushprof__V1__Control m = PUSHPROF__V1__CONTROL__INIT;
  m.kind = kind;
  m.session_id = id;
  m.profile_type = (char *)(type ? type : "");
  m.sampling_hz = (uint32_t)hz;
  m.duration_ms = (uint32_t)duration_ms;
  m.reason = (char *)(reason ? reason : "");
  m.control_version = PP_CONTROL_VERSION;
  size_t n;
  uint8_t *f = pp_frame_pack(PP_FRAME_CONTROL, &m.base, PP_CONTROL_MAX, &n);
  if (!f)
    return -1;
  /* The client reads its subscription at every drain and sends nothing on
   * it: a frame this small fits its empty socket buffer, never waits. */
  ssize_t w = send(fd, f, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  free(f);
  return w == (ssize_t)n ? 0 : -1;
}

static void sub_free(sub *s) {
  if (!s)
    return;
  free(s->service);
  free(s->hostname);
  for (size_t i = 0; i < s->nlabels; i++) {
    free(s->keys[i]);
    free(s->values[i]);
  }
  free(s->keys);
  free(s->values);
  free(s);
}

static bool type_name_ok(const char *t) {
  size_t n = strlen(t);
  if (n < 1 || n > PP_PROFILE_TYPE_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '_'))
      return false;
  return true;
}

/* NULL and why if m breaks a rule of PROTOCOL.md. */
static sub *sub_from(const Pushprof__V1__Subscribe *m, char *why, size_t whylen) {
  size_t sl = m->service ? strlen(m->service) : 0;
  if (m->control_version < 1) {
    od_why(why, whylen, "control_version 0: this sidecar speaks version %d", PP_CONTROL_VERSION);
    return NULL;
  }
  if (sl < 1 || sl > PP_SERVICE_MAX) {
    od_why(why, whylen, "service must be 1..%d bytes", PP_SERVICE_MAX);
    return NULL;
  }
  if (m->hostname && strlen(m->hostname) > PP_HOSTNAME_MAX) {
    od_why(why, whylen, "hostname over %d bytes", PP_HOSTNAME_MAX);
    return NULL;
  }
  if (m->n_labels > PP_LABELS_MAX) {
    od_why(why, whylen, "more than %d labels", PP_LABELS_MAX);
    return NULL;
  }
  for (size_t i = 0; i < m->n_labels; i++) {
    const char *k = m->labels[i]->key, *v = m->labels[i]->value;
    if (!k || !*k || strlen(k) > PP_LABEL_KEY_MAX || (v && strlen(v) > PP_LABEL_VALUE_MAX)) {
      od_why(why, whylen, "label %zu: key 1..%d bytes, value at most %d", i, PP_LABEL_KEY_MAX,
             PP_LABEL_VALUE_MAX);
      return NULL;
    }
  }
  if (m->n_profile_types > 16) {
    od_why(why, whylen, "more than 16 profile types");
    return NULL;
  }
  sub *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  for (size_t i = 0; i < m->n_profile_types; i++) {
    if (!type_name_ok(m->profile_types[i])) {
      od_why(why, whylen, "profile type %zu: 1..%d bytes of [a-z0-9_]", i, PP_PROFILE_TYPE_MAX);
      sub_free(s);
      return NULL;
    }
    for (int t = 0; t < OD_NTYPES; t++)
      if (strcmp(m->profile_types[i], type_names[t]) == 0)
        s->types |= 1u << t;
  }
  s->pid = m->pid;
  s->hz = m->hz;
  s->service = strdup(m->service);
  s->hostname = strdup(m->hostname ? m->hostname : "");
  s->keys = calloc(m->n_labels + 1, sizeof *s->keys);
  s->values = calloc(m->n_labels + 1, sizeof *s->values);
  if (!s->service || !s->hostname || !s->keys || !s->values) {
    sub_free(s);
    od_why(why, whylen, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < m->n_labels; i++) {
    s->keys[i] = strdup(m->labels[i]->key);
    s->values[i] = strdup(m->labels[i]->value ? m->labels[i]->value : "");
    s->nlabels = i + 1;
    if (!s->keys[i] || !s->values[i]) {
      sub_free(s);
      od_why(why, whylen, "out of memory");
      return NULL;
    }
  }
  return s;
}

static bool matches(const sub *s, const od_request *rq) {
  if (!(s->types & (1u << rq->type)))
    return false;
  if (rq->service && strcmp(rq->service, s->service) != 0)
    return false;
  if (rq->pid && rq->pid != s->pid)
    return false;
  for (size_t i = 0; i < rq->nlabels; i++) {
    size_t k = 0;
    while (k < s->nlabels && strcmp(s->keys[k], rq->keys[i]) != 0)
      k++;
    if (k == s->nlabels || strcmp(s->values[k], rq->values[i]) != 0)
      return false;
  }
  return true;
}

/* Sends START for session t to s and adds it to the joined list. Lock held. */
static void join_locked(ondemand *od, enum od_type t, sub *s) {
  session *se = &od->sess[t];
  if (se->nj >= JOINED_MAX)
    return;
  int dur = t == OD_CPU ? (int)(se->deadline_ms - mono_ms()) : 1;
  if (dur < 1)
    dur = 1;
  if (send_control(s->fd, PUSHPROF__V1__CONTROL__KIND__START, se->id, type_names[t],
                   t == OD_CPU ? se->hz : 1, dur, NULL) != 0)
    return; /* its connection is going: the epoll thread ends it */
  joined *j = &se->j[se->nj++];
  memset(j, 0, sizeof *j);
  j->sub_id = s->id;
  j->pid = s->pid;
  snprintf(j->service, sizeof j->service, "%s", s->service);
}

void ondemand_adopt(ondemand *od, int fd, const Pushprof__V1__Subscribe *m, uid_t uid) {
  char why[256] = "";
  sub *s = sub_from(m, why, sizeof why);
  pthread_mutex_lock(&od->mu);
  if (s && od->nsubs >= OD_MAX_SUBSCRIBERS)
    snprintf(why, sizeof why,
             "too many subscriptions (%d): on-demand profiles leave this process out",
             OD_MAX_SUBSCRIBERS);
  if (!s || why[0] || od->closing) {
    pthread_mutex_unlock(&od->mu);
    metrics_reject("bad_subscribe");
    log_event(LOG_WARN, "subscription refused", "pid=%u reason=\"%s\"", m->pid,
              why[0] ? why : "shutting down");
    (void)send_control(fd, PUSHPROF__V1__CONTROL__KIND__REFUSED, 0, NULL, 0, 0,
                       why[0] ? why : "the sidecar is shutting down");
    close(fd);
    sub_free(s);
    return;
  }
  s->fd = fd;
  s->uid = uid;
  s->id = ++od->next_sub_id;
  s->since_ms = mono_ms();
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u64 = s->id};
  if (epoll_ctl(od->ep, EPOLL_CTL_ADD, fd, &ev) != 0 ||
      send_control(fd, PUSHPROF__V1__CONTROL__KIND__WELCOME, 0, NULL, 0, 0, NULL) != 0) {
    pthread_mutex_unlock(&od->mu);
    close(fd);
    sub_free(s);
    return;
  }
  od->subs[od->nsubs++] = s;
  /* A process that starts during a window joins it. */
  for (int t = 0; t < OD_NTYPES; t++) {
    session *se = &od->sess[t];
    if (se->running && !se->window_over && matches(s, se->rq))
      join_locked(od, (enum od_type)t, s);
  }
  metrics_set(G_SUBSCRIBERS, (int64_t)od->nsubs);
  pthread_mutex_unlock(&od->mu);
  log_event(LOG_DEBUG, "subscribed", "pid=%u service=%s", s->pid, s->service);
}

/* Ends subscription i: its joined entries are gone. Lock held. */
static void remove_locked(ondemand *od, size_t i) {
  sub *s = od->subs[i];
  epoll_ctl(od->ep, EPOLL_CTL_DEL, s->fd, NULL);
  close(s->fd);
  for (int t = 0; t < OD_NTYPES; t++)
    for (size_t k = 0; k < od->sess[t].nj; k++)
      if (od->sess[t].j[k].sub_id == s->id) {
        od->sess[t].j[k].sub_id = 0;
        od->sess[t].j[k].gone = true;
      }
  od->subs[i] = od->subs[--od->nsubs];
  sub_free(s);
  metrics_set(G_SUBSCRIBERS, (int64_t)od->nsubs);
  pthread_cond_broadcast(&od->cv);
}

static void *watch_main(void *arg) {
  ondemand *od = arg;
  struct epoll_event evs[64];
  for (;;) {
    int n = epoll_wait(od->ep, evs, 64, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    pthread_mutex_lock(&od->mu);
    bool closing = od->closing;
    for (int e = 0; e < n && !closing; e++) {
      for (size_t i = 0; i < od->nsubs; i++) {
        if (od->subs[i]->id != evs[e].data.u64)
          continue;
        char buf[64];
        ssize_t r = recv(od->subs[i]->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0)
          log_event(LOG_WARN, "subscription closed: the client sent data on it",
                    "pid=%u hint=\"a subscription carries only the sidecar's Control frames\"",
                    od->subs[i]->pid);
        if (r >= 0 || (errno != EAGAIN && errno != EINTR))
          remove_locked(od, i);
        break;
      }
    }
    pthread_mutex_unlock(&od->mu);
    if (closing)
      break;
  }
  return NULL;
}

ondemand *ondemand_new(char *err, size_t errlen) {
  ondemand *od = calloc(1, sizeof *od);
  if (!od || !(od->subs = calloc(OD_MAX_SUBSCRIBERS, sizeof *od->subs))) {
    free(od);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  for (int t = 0; t < OD_NTYPES; t++)
    if (!(od->sess[t].j = calloc(JOINED_MAX, sizeof *od->sess[t].j)))
      goto fail;
  pthread_mutex_init(&od->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&od->cv, &ca);
  pthread_condattr_destroy(&ca);
  /* Session ids differ across restarts: a late push from before one is
   * never taken for a new session's. */
  od->next_session_id = (uint64_t)(real_ns() / 1000000000) << 16; /* below 2^53: JSON-safe */
  od->ep = epoll_create1(EPOLL_CLOEXEC);
  od->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
  if (od->ep < 0 || od->wake < 0 || epoll_ctl(od->ep, EPOLL_CTL_ADD, od->wake, &ev) != 0 ||
      pthread_create(&od->thread, NULL, watch_main, od) != 0)
    goto fail;
  return od;
fail:
  snprintf(err, errlen, "cannot start the on-demand watcher: %s", strerror(errno));
  if (od->ep >= 0)
    close(od->ep);
  if (od->wake >= 0)
    close(od->wake);
  for (int t = 0; t < OD_NTYPES; t++)
    free(od->sess[t].j);
  free(od->subs);
  free(od);
  return NULL;
}

void ondemand_close(ondemand *od) {
  if (!od)
    return;
  pthread_mutex_lock(&od->mu);
  od->closing = true;
  pthread_cond_broadcast(&od->cv);
  pthread_mutex_unlock(&od->mu);
  uint64_t one = 1;
  ssize_t w = write(od->wake, &one, sizeof one);
  (void)w;
}

void ondemand_free(ondemand *od) {
  if (!od)
    return;
  ondemand_close(od);
  pthread_join(od->thread, NULL);
  while (od->nsubs)
    remove_locked(od, od->nsubs - 1);
  for (int t = 0; t < OD_NTYPES; t++) {
    free(od->sess[t].j);
    pp_builder_free(od->sess[t].b);
  }
  close(od->ep);
  close(od->wake);
  pthread_mutex_destroy(&od->mu);
  pthread_cond_destroy(&od->cv);
  free(od->subs);
  free(od);
}

size_t ondemand_subscribers(ondemand *od) {
  pthread_mutex_lock(&od->mu);
  size_t n = od->nsubs;
  pthread_mutex_unlock(&od->mu);
  return n;
}

/* ---- pushes ---- */

void ondemand_seen(ondemand *od, const Pushprof__V1__PushRequest *req) {
  if (!od || !req->service)
    return;
  pthread_mutex_lock(&od->mu);
  int64_t now = mono_ms();
  size_t i = 0;
  while (i < SEEN_MAX && !(od->seen[i].pid == req->pid && od->seen[i].at_ms &&
                           strcmp(od->seen[i].service, req->service) == 0))
    i++;
  if (i == SEEN_MAX) {
    i = od->seen_next;
    od->seen_next = (od->seen_next + 1) % SEEN_MAX;
  }
  snprintf(od->seen[i].service, sizeof od->seen[i].service, "%s", req->service);
  od->seen[i].pid = req->pid;
  od->seen[i].at_ms = now;
  pthread_mutex_unlock(&od->mu);
}

int ondemand_deliver(ondemand *od, const pp_push *push, char *why, size_t whylen) {
  const Pushprof__V1__PushRequest *req = push->req;
  if (!od)
    return od_why(why, whylen, "this sidecar runs no on-demand sessions");
  pthread_mutex_lock(&od->mu);
  session *se = NULL;
  for (int t = 0; t < OD_NTYPES; t++)
    if (od->sess[t].running && od->sess[t].id == req->session_id)
      se = &od->sess[t];
  int rc = 0;
  joined *j = NULL;
  for (size_t k = 0; se && k < se->nj && !j; k++)
    if (se->j[k].pid == req->pid && strcmp(se->j[k].service, req->service) == 0)
      j = &se->j[k];
  if (!se)
    rc =
        od_why(why, whylen, "session %" PRIu64 " is not running (it ended, or was never asked for)",
               req->session_id);
  else if (!j)
    rc = od_why(why, whylen, "process %u (%s) was not asked to join session %" PRIu64, req->pid,
                req->service, req->session_id);
  else if (j->delivered)
    rc = od_why(why, whylen, "process %u already delivered session %" PRIu64, req->pid,
                req->session_id);
  if (rc == 0 && !push->prof)
    rc = od_why(why, whylen, "an on-demand push must carry a profile");
  if (rc == 0 && !se->b && !(se->b = pp_builder_new()))
    rc = od_why(why, whylen, "out of memory");
  if (rc == 0 && pp_merge_add(se->b, pp_pprof_profile(push->prof), why, whylen) != 0) {
    snprintf(j->error, sizeof j->error, "%s", why);
    rc = -1;
  }
  if (j && rc == 0) {
    j->delivered = true;
    se->delivered++;
  }
  pthread_cond_broadcast(&od->cv);
  pthread_mutex_unlock(&od->mu);
  if (rc != 0)
    metrics_drop("ondemand_push_refused", 1);
  return rc;
}

/* ---- answers ---- */

static void answer_json(od_answer *a, unsigned status, json_t *j) {
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  a->ctype = "application/json";
  a->filename = NULL;
  if (!s) {
    a->status = 500;
    a->body = (uint8_t *)strdup("{\"error\":\"out of memory\"}\n");
    a->len = a->body ? strlen((char *)a->body) : 0;
    return;
  }
  size_t n = strlen(s);
  char *t = realloc(s, n + 2); /* one newline, for terminals */
  if (t) {
    s = t;
    s[n++] = '\n';
    s[n] = 0;
  }
  a->status = status;
  a->body = (uint8_t *)s;
  a->len = n;
}

void od_answer_error(od_answer *a, unsigned status, const char *msg) {
  answer_json(a, status, json_pack("{s:s}", "error", msg));
}

static void rfc3339(int64_t ns, char *out, size_t n) {
  time_t t = (time_t)(ns / 1000000000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Processes seen pushing lately with no subscription: an SDK that predates
 * on-demand profiles, or one run with PUSHPROF_ONDEMAND=0. Lock held. */
static json_t *not_subscribed_locked(ondemand *od) {
  json_t *arr = json_array();
  int64_t now = mono_ms();
  for (size_t i = 0; i < SEEN_MAX && arr; i++) {
    const seen *s = &od->seen[i];
    if (!s->at_ms || now - s->at_ms > SEEN_FOR_MS)
      continue;
    size_t k = 0;
    while (k < od->nsubs &&
           !(od->subs[k]->pid == s->pid && strcmp(od->subs[k]->service, s->service) == 0))
      k++;
    if (k == od->nsubs)
      json_array_append_new(
          arr, json_pack("{s:I,s:s}", "pid", (json_int_t)s->pid, "service", s->service));
  }
  return arr;
}

static json_t *joined_json_locked(const session *se) {
  json_t *arr = json_array();
  for (size_t k = 0; k < se->nj && arr; k++) {
    const joined *j = &se->j[k];
    json_t *o = json_pack("{s:I,s:s,s:b,s:b}", "pid", (json_int_t)j->pid, "service", j->service,
                          "delivered", j->delivered, "exited", j->gone && !j->delivered);
    if (o && j->error[0])
      json_object_set_new(o, "error", json_string(j->error));
    json_array_append_new(arr, o);
  }
  return arr;
}

static size_t pending_locked(const session *se) {
  size_t n = 0;
  for (size_t k = 0; k < se->nj; k++)
    n += !se->j[k].delivered && !se->j[k].gone && !se->j[k].error[0];
  return n;
}

static void wait_until_locked(ondemand *od, int64_t until_ms) {
  int64_t ns = until_ms * 1000000;
  struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
  pthread_cond_timedwait(&od->cv, &od->mu, &ts);
}

static void pack_answer_locked(ondemand *od, session *se, const od_request *rq, od_answer *a) {
  char c[256];
  snprintf(c, sizeof c,
           "pushprof: on-demand %s session %" PRIu64 ": %zu of %zu processes delivered%s",
           type_names[rq->type], se->id, se->delivered, se->nj,
           se->stop ? " (stopped early by DELETE)" : "");
  uint8_t *raw = NULL, *gz = NULL;
  size_t rawlen = 0, gzlen = 0;
  (void)od;
  if (pp_builder_add_comment(se->b, c) != 0 || pp_builder_pack(se->b, &raw, &rawlen) != 0) {
    od_answer_error(a, 500, "out of memory packing the profile");
    return;
  }
  if (rq->archive) {
    if (pp_gzip(raw, rawlen, &gz, &gzlen) != 0) {
      free(raw);
      od_answer_error(a, 500, "out of memory compressing the profile");
      return;
    }
    free(raw);
    raw = gz;
    rawlen = gzlen;
  }
  a->status = 200;
  a->ctype = "application/octet-stream";
  a->filename = rq->archive ? "profile.pb.gz" : "profile.pb";
  a->body = raw;
  a->len = rawlen;
}

void ondemand_run(ondemand *od, const od_request *rq, od_answer *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_lock(&od->mu);
  session *se = &od->sess[rq->type];
  if (se->running) {
    char since[40];
    rfc3339(se->started_real_ns, since, sizeof since);
    char msg[160];
    snprintf(msg, sizeof msg, "a %s session is already running: one at a time",
             type_names[rq->type]);
    answer_json(
        a, 409,
        json_pack("{s:s,s:I,s:s}", "error", msg, "session_id", (json_int_t)se->id, "since", since));
    pthread_mutex_unlock(&od->mu);
    return;
  }
  if (od->closing) {
    pthread_mutex_unlock(&od->mu);
    od_answer_error(a, 503, "the sidecar is shutting down");
    return;
  }
  pp_builder_free(se->b);
  se->b = NULL;
  se->running = true;
  se->stop = false;
  se->window_over = false;
  se->id = ++od->next_session_id;
  se->rq = rq;
  se->hz = rq->hz;
  se->seconds = rq->type == OD_CPU ? rq->seconds : 0;
  se->started_real_ns = real_ns();
  se->deadline_ms = mono_ms() + (int64_t)se->seconds * 1000;
  se->nj = 0;
  se->delivered = 0;
  for (size_t i = 0; i < od->nsubs; i++)
    if (matches(od->subs[i], rq))
      join_locked(od, rq->type, od->subs[i]);
  log_event(LOG_INFO, "on-demand session started",
            "type=%s id=%" PRIu64 " hz=%d seconds=%d joined=%zu", type_names[rq->type], se->id,
            se->hz, se->seconds, se->nj);
  while (!se->stop && !od->closing && mono_ms() < se->deadline_ms)
    wait_until_locked(od, se->deadline_ms);
  se->window_over = true;
  if (se->stop) /* the joined processes end theirs now */
    for (size_t k = 0; k < se->nj; k++)
      for (size_t i = 0; i < od->nsubs; i++)
        if (od->subs[i]->id == se->j[k].sub_id && !se->j[k].delivered)
          (void)send_control(od->subs[i]->fd, PUSHPROF__V1__CONTROL__KIND__STOP, se->id,
                             type_names[rq->type], se->hz, 1, NULL);
  int64_t grace = mono_ms() + OD_GRACE_MS;
  while (pending_locked(se) && !od->closing && mono_ms() < grace)
    wait_until_locked(od, grace);
  if (se->nj == 0) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "no profiled process matched%s%s%s%s within the window: %zu subscribed (see GET "
             "/profile/%s for who pushes without subscribing)",
             rq->service ? " service=" : "", rq->service ? rq->service : "", rq->pid ? " pid" : "",
             rq->nlabels ? " and the labels" : "", od->nsubs, type_names[rq->type]);
    answer_json(a, 404,
                json_pack("{s:s,s:I,s:o}", "error", msg, "session_id", (json_int_t)se->id,
                          "not_subscribed", not_subscribed_locked(od)));
  } else if (se->delivered == 0) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "%zu processes joined, none delivered its profile within %d ms after the window",
             se->nj, OD_GRACE_MS);
    answer_json(a, 504,
                json_pack("{s:s,s:I,s:o}", "error", msg, "session_id", (json_int_t)se->id, "joined",
                          joined_json_locked(se)));
  } else {
    pack_answer_locked(od, se, rq, a);
  }
  log_event(LOG_INFO, "on-demand session ended",
            "type=%s id=%" PRIu64 " joined=%zu delivered=%zu status=%u", type_names[rq->type],
            se->id, se->nj, se->delivered, a->status);
  pp_builder_free(se->b);
  se->b = NULL;
  se->rq = NULL;
  se->running = false;
  pthread_mutex_unlock(&od->mu);
}

void ondemand_status(ondemand *od, enum od_type type, od_answer *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_lock(&od->mu);
  const session *se = &od->sess[type];
  json_t *j =
      json_pack("{s:b,s:s,s:I,s:o}", "running", se->running, "type", type_names[type],
                "subscribers", (json_int_t)od->nsubs, "not_subscribed", not_subscribed_locked(od));
  if (j && se->id) {
    char since[40];
    rfc3339(se->started_real_ns, since, sizeof since);
    json_object_set_new(j, se->running ? "session_id" : "last_session_id",
                        json_integer((json_int_t)se->id));
    json_object_set_new(j, "since", json_string(since));
    if (type == OD_CPU) {
      json_object_set_new(j, "sampling_frequency", json_integer(se->hz));
      json_object_set_new(j, "timeout_seconds", json_integer(se->seconds));
    }
    json_object_set_new(j, "joined", joined_json_locked(se));
  }
  pthread_mutex_unlock(&od->mu);
  answer_json(a, 200, j);
}

void ondemand_stop(ondemand *od, enum od_type type, od_answer *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_lock(&od->mu);
  session *se = &od->sess[type];
  if (!se->running || se->window_over) {
    pthread_mutex_unlock(&od->mu);
    char msg[96];
    snprintf(msg, sizeof msg, "no %s session is running: nothing to stop", type_names[type]);
    od_answer_error(a, 412, msg);
    return;
  }
  se->stop = true;
  uint64_t id = se->id;
  pthread_cond_broadcast(&od->cv);
  pthread_mutex_unlock(&od->mu);
  answer_json(a, 200, json_pack("{s:b,s:I}", "stopped", 1, "session_id", (json_int_t)id));
}
