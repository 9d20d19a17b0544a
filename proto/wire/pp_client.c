/* The push client: one frame out, one PushReply back, over a Unix socket,
 * every step bounded by one deadline (non-blocking socket + poll). */
#include "pp_client.h"
#include "pp_frame.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REPLY_MAX (64u << 10) /* a PushReply is a code and two short strings */
#define CONNECT_RETRY_MS 10   /* pause when the listen backlog is full */

static void say(pp_client_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(pp_client_reply *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
}

int pp_client_encode_push(const Pushprof__V1__PushRequest *req, uint8_t **out, size_t *len) {
  uint8_t *f = pp_frame_pack(PP_FRAME_PUSH, &req->base, SIZE_MAX, len);
  if (!f)
    return -1;
  *out = f;
  return 0;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline. 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0)
      return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
    if (n > 0)
      return 1;
    if (n == 0)
      continue; /* re-check the deadline */
    if (errno != EINTR)
      return -1;
  }
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* Connects within the deadline. Returns fd or -1 with status/reason set. */
static int connect_to(const char *path, int64_t deadline, int *status, pp_client_reply *r) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t plen = strlen(path);
  if (plen == 0 || plen >= sizeof sa.sun_path) {
    say(r, "socket path is %s (%zu bytes, at most %zu): \"%s\"", plen ? "too long" : "empty", plen,
        sizeof sa.sun_path - 1, path);
    *status = PP_CLIENT_UNAVAILABLE;
    return -1;
  }
  memcpy(sa.sun_path, path, plen + 1);
  for (;;) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      say(r, "cannot create a socket: %s", strerror(errno));
      *status = PP_CLIENT_UNAVAILABLE;
      return -1;
    }
    int rc;
    do
      rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    while (rc != 0 && errno == EINTR);
    if (rc == 0)
      return fd;
    int err = errno;
    if (err == EINPROGRESS) {
      /* Not expected for AF_UNIX, but handled like any stream socket. */
      int w = wait_fd(fd, POLLOUT, deadline);
      socklen_t elen = sizeof err;
      if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0)
        return fd;
      if (w == 0) {
        close(fd);
        say(r, "connecting to %s timed out", path);
        *status = PP_CLIENT_TIMEOUT;
        return -1;
      }
    }
    close(fd);
    if (err == EAGAIN) {
      /* The sidecar's listen backlog is full: wait a little and retry. */
      if (now_ms() + CONNECT_RETRY_MS >= deadline) {
        say(r, "cannot connect to %s: the sidecar's backlog stayed full until the deadline", path);
        *status = PP_CLIENT_TIMEOUT;
        return -1;
      }
      sleep_ms(CONNECT_RETRY_MS);
      continue;
    }
    const char *hint = "";
    if (err == ENOENT || err == ECONNREFUSED)
      hint = " (is the sidecar running? set PUSHPROF_SOCKET)";
    else if (err == EACCES || err == EPERM)
      hint = " (check the socket's permissions and the sidecar's --allow-uid)";
    say(r, "cannot connect to %s: %s%s", path, strerror(err), hint);
    *status = PP_CLIENT_UNAVAILABLE;
    return -1;
  }
}

/* Reads exactly len bytes. 0 ok; 1 timeout; 2 EOF (got set); -1 error (errno). */
static int read_full(int fd, uint8_t *buf, size_t len, int64_t deadline, size_t *got) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = recv(fd, buf + off, len - off, 0);
    if (n > 0) {
      off += (size_t)n;
      continue;
    }
    if (n == 0) {
      *got = off;
      return 2;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return -1;
    int w = wait_fd(fd, POLLIN, deadline);
    if (w == 0)
      return 1;
    if (w < 0)
      return -1;
  }
  *got = off;
  return 0;
}

/* Reads and decodes the PushReply frame. Returns a pp_client_status. */
static int read_reply(int fd, const char *path, int timeout_ms, int64_t deadline,
                      pp_client_reply *r) {
  uint8_t hdr[PP_FRAME_HEADER_SIZE];
  uint8_t *payload = NULL;
  size_t got = 0;
  int rc = read_full(fd, hdr, sizeof hdr, deadline, &got);
  if (rc == 1) {
    say(r, "no reply from the sidecar at %s within %d ms", path, timeout_ms);
    return PP_CLIENT_TIMEOUT;
  }
  if (rc == 2) {
    say(r, "the sidecar at %s closed the connection without replying", path);
    return PP_CLIENT_IO_ERROR;
  }
  if (rc < 0) {
    say(r, "reading the reply from %s failed: %s", path, strerror(errno));
    return PP_CLIENT_IO_ERROR;
  }
  pp_frame_header h;
  const char *why = NULL;
  if (pp_frame_header_decode(hdr, REPLY_MAX, &h, &why) != 0) {
    say(r, "malformed reply from %s: %s", path, why);
    return PP_CLIENT_IO_ERROR;
  }
  if (h.type != PP_FRAME_REPLY) {
    say(r, "malformed reply from %s: frame type %u, want 2 (PushReply)", path, h.type);
    return PP_CLIENT_IO_ERROR;
  }
  payload = malloc(h.length ? h.length : 1);
  if (!payload) {
    say(r, "out of memory reading the reply from %s", path);
    return PP_CLIENT_IO_ERROR;
  }
  rc = read_full(fd, payload, h.length, deadline, &got);
  if (rc != 0) {
    free(payload);
    if (rc == 1) {
      say(r, "reply from the sidecar at %s incomplete after %d ms", path, timeout_ms);
      return PP_CLIENT_TIMEOUT;
    }
    say(r, "reading the reply from %s failed: %s", path,
        rc == 2 ? "connection closed mid-frame" : strerror(errno));
    return PP_CLIENT_IO_ERROR;
  }
  Pushprof__V1__PushReply *rep = pushprof__v1__push_reply__unpack(NULL, h.length, payload);
  free(payload);
  if (!rep) {
    say(r, "malformed reply from %s: the PushReply did not decode", path);
    return PP_CLIENT_IO_ERROR;
  }
  r->code = (int)rep->code;
  snprintf(r->push_id, sizeof r->push_id, "%s", rep->push_id ? rep->push_id : "");
  const char *reason = rep->reason ? rep->reason : "";
  int status =
      rep->code == PUSHPROF__V1__PUSH_REPLY__CODE__OK ? PP_CLIENT_ACKED : PP_CLIENT_REFUSED;
  if (status == PP_CLIENT_REFUSED && reason[0] == '\0') {
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
        &pushprof__v1__push_reply__code__descriptor, rep->code);
    say(r, "refused by the sidecar: %s", v ? v->name : "unknown code");
  } else {
    say(r, "%s", reason);
  }
  pushprof__v1__push_reply__free_unpacked(rep, NULL);
  return status;
}

int pp_client_push_frame(const char *socket_path, const uint8_t *frame, size_t len, int timeout_ms,
                         pp_client_reply *reply) {
  int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int status = PP_CLIENT_IO_ERROR;
  memset(reply, 0, sizeof *reply);
  reply->code = -1;
  int fd = connect_to(socket_path, deadline, &status, reply);
  if (fd < 0)
    return status;

  size_t off = 0;
  while (off < len) {
    ssize_t n = send(fd, frame + off, len - off, MSG_NOSIGNAL);
    if (n >= 0) {
      off += (size_t)n;
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int w = wait_fd(fd, POLLOUT, deadline);
      if (w == 1)
        continue;
      if (w == 0) {
        say(reply, "sending to the sidecar at %s did not finish within %d ms", socket_path,
            timeout_ms);
        status = PP_CLIENT_TIMEOUT;
        goto out;
      }
    }
    int err = errno;
    /* The sidecar may have answered (e.g. refused) and closed before reading
     * everything: prefer its reply to the broken pipe. */
    if (err == EPIPE || err == ECONNRESET) {
      status = read_reply(fd, socket_path, timeout_ms, deadline, reply);
      if (status == PP_CLIENT_ACKED || status == PP_CLIENT_REFUSED)
        goto out;
    }
    say(reply, "sending to the sidecar at %s failed: %s", socket_path, strerror(err));
    status = PP_CLIENT_IO_ERROR;
    goto out;
  }
  status = read_reply(fd, socket_path, timeout_ms, deadline, reply);
out:
  close(fd);
  return status;
}

int pp_client_send_frame_noreply(const char *socket_path, const uint8_t *frame, size_t len,
                                 int timeout_ms) {
  pp_client_reply r;
  int status = PP_CLIENT_IO_ERROR;
  memset(&r, 0, sizeof r);
  int fd = connect_to(socket_path, now_ms() + (timeout_ms > 0 ? timeout_ms : 0), &status, &r);
  if (fd < 0)
    return status;
  ssize_t n;
  do
    n = send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  close(fd); /* what was sent stays readable by the sidecar */
  return n == (ssize_t)len ? 0 : PP_CLIENT_IO_ERROR;
}
