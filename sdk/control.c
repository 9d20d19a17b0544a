/* The on-demand subscription (control.h). Everything runs under C.mu; the
 * socket is non-blocking, so no call here waits on the sidecar. */
#include "control.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "pp_frame.h"
#include "profiles.h"
#include "push.h"
#include "pushprof.pb-c.h"
#include "sdk_log.h"

#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 60000
/* A sidecar that answered our Subscribe as an unknown frame does not speak
 * on-demand profiles: asked again only this much later (it may be
 * upgraded meanwhile). */
#define RETRY_OLD_SIDECAR_MS 600000
#define STABLE_MS 10000 /* a subscription that lasted this long resets the backoff */

static struct {
  pthread_mutex_t mu;
  int on;
  int fd;
  char socket_path[108];
  uint8_t *sub; /* the Subscribe frame, header included */
  size_t sublen;
  unsigned profiles;
  uint8_t rbuf[PP_FRAME_HEADER_SIZE + PP_CONTROL_MAX];
  size_t rlen;
  int64_t next_try_ns, connected_ns;
  int backoff_ms;
  uint64_t sess_id; /* the CPU session running, 0 if none */
  int64_t sess_end_ns;
  int refused_logged;
} C = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void close_locked(int retry_ms) {
  if (C.fd >= 0)
    close(C.fd);
  C.fd = -1;
  C.rlen = 0;
  if (C.connected_ns && mono_ns() - C.connected_ns >= (int64_t)STABLE_MS * 1000000)
    C.backoff_ms = RETRY_MIN_MS;
  C.connected_ns = 0;
  if (retry_ms <= 0) {
    retry_ms = C.backoff_ms;
    C.backoff_ms = C.backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : C.backoff_ms * 2;
  }
  C.next_try_ns = mono_ns() + (int64_t)retry_ms * 1000000;
}

static int encode_subscribe(const env_config *cfg) {
  Pushprof__V1__Label lab[ENV_CONFIG_LABELS_MAX];
  Pushprof__V1__Label *labp[ENV_CONFIG_LABELS_MAX];
  size_t nlabels = push_labels_view(cfg->labels, cfg->nlabels, lab, labp);
  char host[PP_HOSTNAME_MAX + 1];
  if (gethostname(host, sizeof host) != 0)
    snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  char *types[2];
  size_t ntypes = 0;
  if (cfg->profiles & PUSHPROF_PROFILE_CPU)
    types[ntypes++] = "cpu";
  if (cfg->profiles & PUSHPROF_PROFILE_HEAP)
    types[ntypes++] = "heap";
  Pushprof__V1__Subscribe s = PUSHPROF__V1__SUBSCRIBE__INIT;
  s.control_version = PP_CONTROL_VERSION;
  s.service = (char *)cfg->service;
  s.n_labels = nlabels;
  s.labels = labp;
  s.pid = (uint32_t)getpid();
  s.hostname = host;
  s.n_profile_types = ntypes;
  s.profile_types = types;
  s.hz = (uint32_t)cfg->hz;
  size_t n;
  uint8_t *f = pp_frame_pack(PP_FRAME_SUBSCRIBE, &s.base, PP_SUBSCRIBE_MAX, &n);
  if (!f)
    return -1;
  free(C.sub);
  C.sub = f;
  C.sublen = n;
  return 0;
}

void control_start(const env_config *cfg) {
  pthread_mutex_lock(&C.mu);
  if (C.fd >= 0)
    close(C.fd);
  C.fd = -1;
  C.rlen = 0;
  C.on = 0;
  C.sess_id = 0;
  if (cfg->ondemand && cfg->socket_path[0] && encode_subscribe(cfg) == 0) {
    snprintf(C.socket_path, sizeof C.socket_path, "%s", cfg->socket_path);
    C.profiles = cfg->profiles;
    C.backoff_ms = RETRY_MIN_MS;
    C.next_try_ns = 0; /* at the first tick */
    C.connected_ns = 0;
    C.on = 1;
  }
  pthread_mutex_unlock(&C.mu);
}

static void try_connect_locked(void) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    close_locked(0);
    return;
  }
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, C.socket_path, strlen(C.socket_path));
  /* A Unix stream connect completes at once or fails (EAGAIN: the
   * sidecar's backlog is full); the Subscribe fits the empty send buffer. */
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      send(fd, C.sub, C.sublen, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)C.sublen) {
    close(fd);
    close_locked(0);
    return;
  }
  C.fd = fd;
  C.connected_ns = mono_ns();
}

static void end_session_locked(void) {
  uint64_t id = C.sess_id;
  C.sess_id = 0;
  push_session(PUSHPROF_PROFILE_CPU, id);
}

/* One Control frame. Returns -1 if the subscription must close. */
static int handle_control(const uint8_t *p, size_t n) {
  Pushprof__V1__Control *m = pushprof__v1__control__unpack(NULL, n, p);
  if (!m)
    return -1;
  int rc = 0;
  switch (m->kind) {
  case PUSHPROF__V1__CONTROL__KIND__WELCOME:
    break;
  case PUSHPROF__V1__CONTROL__KIND__REFUSED:
    if (!C.refused_logged++)
      sdk_log("pushprof: the sidecar at %s refused on-demand profiles for this process: %.200s",
              C.socket_path, m->reason ? m->reason : "");
    rc = -1;
    break;
  case PUSHPROF__V1__CONTROL__KIND__START:
    if (m->session_id == 0 || m->sampling_hz < 1 || m->sampling_hz > COLLECTOR_SESSION_HZ_MAX ||
        m->duration_ms < 1 || m->duration_ms > 300000 || !m->profile_type) {
      rc = -1; /* not what this protocol version sends: drop the subscription */
    } else if (strcmp(m->profile_type, "heap") == 0 && (C.profiles & PUSHPROF_PROFILE_HEAP)) {
      push_session(PUSHPROF_PROFILE_HEAP, m->session_id);
    } else if (strcmp(m->profile_type, "cpu") == 0 && (C.profiles & PUSHPROF_PROFILE_CPU)) {
      if (C.sess_id)
        end_session_locked();
      if (collector_session_begin(m->session_id, (int)m->sampling_hz) == 0) {
        C.sess_id = m->session_id;
        C.sess_end_ns = mono_ns() + (int64_t)m->duration_ms * 1000000;
      }
    }
    break;
  case PUSHPROF__V1__CONTROL__KIND__STOP:
    if (C.sess_id && C.sess_id == m->session_id)
      end_session_locked();
    break;
  default:
    break; /* a kind of a later version: nothing to do */
  }
  pushprof__v1__control__free_unpacked(m, NULL);
  return rc;
}

static void read_locked(void) {
  for (;;) {
    ssize_t r = recv(C.fd, C.rbuf + C.rlen, sizeof C.rbuf - C.rlen, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return;
    if (r <= 0) {
      close_locked(0);
      return;
    }
    C.rlen += (size_t)r;
    while (C.rlen >= PP_FRAME_HEADER_SIZE) {
      pp_frame_header h = {0};
      if (pp_frame_header_decode(C.rbuf, PP_CONTROL_MAX, &h, NULL) != 0 ||
          h.type != PP_FRAME_CONTROL) {
        /* A sidecar without subscriptions answers with a PushReply
         * (INVALID_FRAME) and closes: ask it again much later. */
        close_locked(h.type == PP_FRAME_REPLY ? RETRY_OLD_SIDECAR_MS : RETRY_MAX_MS);
        return;
      }
      size_t total = PP_FRAME_HEADER_SIZE + h.length;
      if (C.rlen < total)
        break;
      if (handle_control(C.rbuf + PP_FRAME_HEADER_SIZE, h.length) != 0) {
        close_locked(RETRY_MAX_MS);
        return;
      }
      memmove(C.rbuf, C.rbuf + total, C.rlen - total);
      C.rlen -= total;
    }
  }
}

void control_tick(void) {
  pthread_mutex_lock(&C.mu);
  if (C.on) {
    int64_t now = mono_ns();
    if (C.fd < 0 && now >= C.next_try_ns)
      try_connect_locked();
    if (C.fd >= 0)
      read_locked();
    if (C.sess_id && mono_ns() >= C.sess_end_ns)
      end_session_locked();
  }
  pthread_mutex_unlock(&C.mu);
}

uint64_t control_stop(void) {
  pthread_mutex_lock(&C.mu);
  uint64_t id = C.sess_id;
  C.sess_id = 0;
  C.on = 0;
  if (C.fd >= 0)
    close(C.fd);
  C.fd = -1;
  pthread_mutex_unlock(&C.mu);
  return id;
}

void control_atfork_child(void) {
  pthread_mutex_init(&C.mu, NULL);
  if (C.fd >= 0)
    close(C.fd); /* the parent's subscription stays the parent's */
  C.fd = -1;
  C.rlen = 0;
  C.on = 0;
  C.sess_id = 0;
}
