/* The push client against a tiny in-process socket server (one thread per
 * case): ack, refusal with a reason, refusal before the payload was read,
 * a silent server (TIMEOUT within the deadline), a server that hangs up or
 * answers garbage (IO_ERROR), and no server at all (UNAVAILABLE). */
#include "pp_client.h"
#include "pp_frame.h"
#include "pp_test.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum mode { ACK, REFUSE, REFUSE_EARLY, SILENT, HANG_UP, GARBAGE };

typedef struct server {
  int lfd;
  enum mode mode;
  pthread_t thread;
  /* Written by the server thread, read after join. */
  size_t got_bytes;
  uint64_t got_sequence;
  char got_service[64];
} server;

static char dir[40];
static char sock_path[100];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads into, or sends (out), all of buf[0..len), through EINTR; 0, or -1
 * at the end of the stream or on an error. */
static int io_all(int fd, uint8_t *buf, size_t len, bool out) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = out ? send(fd, buf + off, len - off, MSG_NOSIGNAL) : read(fd, buf + off, len - off);
    if (n <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      return -1;
    }
    off += (size_t)n;
  }
  return 0;
}

static int read_all(int fd, uint8_t *buf, size_t len) {
  return io_all(fd, buf, len, false);
}

static int write_all(int fd, const uint8_t *buf, size_t len) {
  return io_all(fd, (uint8_t *)buf, len, true);
}

static void send_reply(int fd, Pushprof__V1__PushReply__Code code, const char *reason,
                       uint64_t seq) {
  Pushprof__V1__PushReply r = PUSHPROF__V1__PUSH_REPLY__INIT;
  r.code = code;
  r.reason = (char *)reason;
  r.sequence = seq;
  r.push_id = (char *)(code == PUSHPROF__V1__PUSH_REPLY__CODE__OK ? "push-0001" : "");
  size_t n = pushprof__v1__push_reply__get_packed_size(&r);
  uint8_t *buf = malloc(PP_FRAME_HEADER_SIZE + n);
  pp_frame_header_encode(buf, PP_FRAME_REPLY, (uint32_t)n);
  pushprof__v1__push_reply__pack(&r, buf + PP_FRAME_HEADER_SIZE);
  write_all(fd, buf, PP_FRAME_HEADER_SIZE + n);
  free(buf);
}

static void *serve(void *arg) {
  server *s = arg;
  struct pollfd p = {.fd = s->lfd, .events = POLLIN};
  if (poll(&p, 1, 10000) != 1)
    return NULL;
  int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return NULL;
  uint8_t hdr[PP_FRAME_HEADER_SIZE];
  pp_frame_header h;
  const char *why = NULL;
  if (read_all(fd, hdr, sizeof hdr) != 0 ||
      pp_frame_header_decode(hdr, PP_FRAME_MAX_DEFAULT, &h, &why) != 0)
    goto out;
  if (s->mode == REFUSE_EARLY) {
    /* Like a sidecar refusing a peer uid: answer at once, never read the rest. */
    send_reply(fd, PUSHPROF__V1__PUSH_REPLY__CODE__PERMISSION_DENIED, "uid 1234 not allowed", 0);
    goto out;
  }
  uint8_t *payload = malloc(h.length ? h.length : 1);
  if (read_all(fd, payload, h.length) != 0) {
    free(payload);
    goto out;
  }
  s->got_bytes = PP_FRAME_HEADER_SIZE + h.length;
  Pushprof__V1__PushRequest *req = pushprof__v1__push_request__unpack(NULL, h.length, payload);
  free(payload);
  if (req) {
    s->got_sequence = req->sequence;
    snprintf(s->got_service, sizeof s->got_service, "%s", req->service);
    pushprof__v1__push_request__free_unpacked(req, NULL);
  }
  switch (s->mode) {
  case ACK:
    send_reply(fd, PUSHPROF__V1__PUSH_REPLY__CODE__OK, "", s->got_sequence);
    break;
  case REFUSE:
    send_reply(fd, PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED,
               "spool full (512 MiB): retry later", s->got_sequence);
    break;
  case SILENT: {
    /* Say nothing until the client gives up and closes. */
    uint8_t b;
    struct pollfd c = {.fd = fd, .events = POLLIN};
    while (poll(&c, 1, 10000) == 1 && read(fd, &b, 1) > 0)
      ;
    break;
  }
  case GARBAGE:
    write_all(fd, (const uint8_t *)"HTTP/1.1 400 Bad Request\r\n\r\n", 28);
    break;
  case HANG_UP:
  case REFUSE_EARLY:
    break;
  }
out:
  close(fd);
  return NULL;
}

static int start_server(server *s, enum mode mode) {
  memset(s, 0, sizeof *s);
  s->mode = mode;
  unlink(sock_path);
  s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
  if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(s->lfd, 8) != 0) {
    perror("test server");
    return -1;
  }
  return pthread_create(&s->thread, NULL, serve, s);
}

static void stop_server(server *s) {
  pthread_join(s->thread, NULL);
  close(s->lfd);
  unlink(sock_path);
}

static uint8_t *make_frame(size_t pprof_bytes, uint64_t seq, size_t *len) {
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  Pushprof__V1__Label l = PUSHPROF__V1__LABEL__INIT, *lp = &l;
  l.key = (char *)"env";
  l.value = (char *)"test";
  req.service = (char *)"test-svc";
  req.n_labels = 1;
  req.labels = &lp;
  req.pid = 4242;
  req.sequence = seq;
  req.start_time_nanos = 1;
  req.end_time_nanos = 2;
  req.pprof.len = pprof_bytes;
  req.pprof.data = calloc(pprof_bytes ? pprof_bytes : 1, 1);
  uint8_t *out = NULL;
  PP_CHECK_INT(pp_client_encode_push(&req, &out, len), ==, 0);
  free(req.pprof.data);
  return out;
}

static void test_encode_push_frame(void) {
  size_t len = 0;
  uint8_t *f = make_frame(1000, 7, &len);
  PP_CHECK(f != NULL && len > PP_FRAME_HEADER_SIZE + 1000);
  pp_frame_header h;
  const char *why = NULL;
  PP_CHECK_INT(pp_frame_header_decode(f, PP_FRAME_MAX_DEFAULT, &h, &why), ==, 0);
  PP_CHECK_INT(h.type, ==, PP_FRAME_PUSH);
  PP_CHECK_INT(h.length + PP_FRAME_HEADER_SIZE, ==, len);
  Pushprof__V1__PushRequest *r =
      pushprof__v1__push_request__unpack(NULL, h.length, f + PP_FRAME_HEADER_SIZE);
  PP_CHECK(r != NULL);
  if (r) {
    PP_CHECK_STR(r->service, "test-svc");
    PP_CHECK_INT(r->sequence, ==, 7);
    PP_CHECK_INT(r->pprof.len, ==, 1000);
    PP_CHECK_INT(r->n_labels, ==, 1);
    pushprof__v1__push_request__free_unpacked(r, NULL);
  }
  free(f);
}

/* Pushes a frame of pprof_bytes (sequence seq) to a server in mode, with
 * timeout_ms: the client's status, its reply in *r, what the server saw in
 * *s, the frame's length in *len. */
static int push_once(server *s, enum mode mode, size_t pprof_bytes, uint64_t seq, int timeout_ms,
                     pp_client_reply *r, size_t *len) {
  PP_CHECK_INT(start_server(s, mode), ==, 0);
  *len = 0;
  uint8_t *f = make_frame(pprof_bytes, seq, len);
  int st = pp_client_push_frame(sock_path, f, *len, timeout_ms, r);
  stop_server(s);
  free(f);
  return st;
}

static void test_client_acked(void) {
  server s;
  pp_client_reply r;
  size_t len;
  int st = push_once(&s, ACK, 4u << 20, 11, 10000, &r, &len); /* 4 MiB: many partial sends */
  PP_CHECK_INT(st, ==, PP_CLIENT_ACKED);
  PP_CHECK_INT(r.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__OK);
  PP_CHECK_STR(r.push_id, "push-0001");
  PP_CHECK_INT(s.got_bytes, ==, len);
  PP_CHECK_INT(s.got_sequence, ==, 11);
  PP_CHECK_STR(s.got_service, "test-svc");
}

static void test_client_refused_with_reason(void) {
  server s;
  pp_client_reply r;
  size_t len;
  PP_CHECK_INT(push_once(&s, REFUSE, 100, 12, 5000, &r, &len), ==, PP_CLIENT_REFUSED);
  PP_CHECK_INT(r.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED);
  PP_CHECK_STR(r.reason, "spool full (512 MiB): retry later");
}

static void test_client_refused_before_payload_read(void) {
  server s;
  pp_client_reply r;
  size_t len; /* 8 MiB: more than the socket buffers hold */
  PP_CHECK_INT(push_once(&s, REFUSE_EARLY, 8u << 20, 13, 5000, &r, &len), ==, PP_CLIENT_REFUSED);
  PP_CHECK_INT(r.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__PERMISSION_DENIED);
  PP_CHECK_STR(r.reason, "uid 1234 not allowed");
}

static void test_client_silent_server_times_out(void) {
  server s;
  pp_client_reply r;
  size_t len;
  int64_t t0 = now_ms();
  PP_CHECK_INT(push_once(&s, SILENT, 100, 14, 300, &r, &len), ==, PP_CLIENT_TIMEOUT);
  int64_t took = now_ms() - t0;
  PP_CHECK_INT(took, >=, 290);
  PP_CHECK_INT(took, <, 2000);
  PP_CHECK(strstr(r.reason, "no reply") && strstr(r.reason, "300 ms"));
}

static void test_client_hang_up_and_garbage_are_io_errors(void) {
  server s;
  pp_client_reply r;
  size_t len;
  PP_CHECK_INT(push_once(&s, HANG_UP, 100, 15, 5000, &r, &len), ==, PP_CLIENT_IO_ERROR);
  PP_CHECK(strstr(r.reason, "closed the connection") != NULL);
  PP_CHECK_INT(push_once(&s, GARBAGE, 100, 15, 5000, &r, &len), ==, PP_CLIENT_IO_ERROR);
  PP_CHECK(strstr(r.reason, "bad magic") != NULL);
}

static void test_client_no_server_is_unavailable(void) {
  size_t len = 0;
  uint8_t *f = make_frame(100, 16, &len);
  pp_client_reply r;
  char missing[160];
  snprintf(missing, sizeof missing, "%s/nobody.sock", dir);
  int64_t t0 = now_ms();
  int st = pp_client_push_frame(missing, f, len, 5000, &r);
  PP_CHECK_INT(st, ==, PP_CLIENT_UNAVAILABLE);
  PP_CHECK(now_ms() - t0 < 1000); /* fails fast, no waiting for the deadline */
  PP_CHECK(strstr(r.reason, missing) && strstr(r.reason, "No such file") &&
           strstr(r.reason, "is the sidecar running"));
  /* A socket file nobody listens on: connection refused. */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
  PP_CHECK_INT(bind(fd, (struct sockaddr *)&sa, sizeof sa), ==, 0);
  close(fd);
  st = pp_client_push_frame(sock_path, f, len, 5000, &r);
  PP_CHECK_INT(st, ==, PP_CLIENT_UNAVAILABLE);
  PP_CHECK(strstr(r.reason, "refused") != NULL);
  unlink(sock_path);
  char longp[300];
  memset(longp, 'x', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  st = pp_client_push_frame(longp, f, len, 5000, &r);
  PP_CHECK_INT(st, ==, PP_CLIENT_UNAVAILABLE);
  PP_CHECK(strstr(r.reason, "too long") != NULL);
  free(f);
}

int main(void) {
  pp_test_mkdtemp(dir, sizeof dir, "test-client");
  snprintf(sock_path, sizeof sock_path, "%s/s.sock", dir);
  PP_RUN(test_encode_push_frame);
  PP_RUN(test_client_acked);
  PP_RUN(test_client_refused_with_reason);
  PP_RUN(test_client_refused_before_payload_read);
  PP_RUN(test_client_silent_server_times_out);
  PP_RUN(test_client_hang_up_and_garbage_are_io_errors);
  PP_RUN(test_client_no_server_is_unavailable);
  rmdir(dir);
  PP_DONE();
}
