/* The listener in-process with the real spool, batcher and file exporter:
 * socket mode, acks from concurrent clients, refusals by reason, peer uid
 * checks, the connection limit, shutdown.
 * Threaded: runs under TSan in CI (labels unit;tsan). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "batcher.h"
#include "exporter.h"
#include "listener.h"
#include "membudget.h"
#include "metrics.h"
#include "metrics_test_util.h"
#include "pp_client.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pp_test.h"
#include "spool.h"

static char dir[64], sock_path[100], spool_dir[100], out_url[100];
static int rig_worker_idle_ms; /* listener_config.worker_idle_ms of the next rig_up */

typedef struct rig {
  spool *sp;
  exporter *ex;
  batcher *b;
  listener *l;
} rig;

static int rig_up(rig *r, const uid_t *uids, size_t nuids, int max_conns, int timeout_ms) {
  char err[512] = "";
  memset(r, 0, sizeof *r);
  spool_config sc = {.dir = spool_dir, .max_bytes = 64u << 20};
  r->sp = spool_open(&sc, err, sizeof err);
  exporter_options eo = {0};
  r->ex = exporter_create(out_url, &eo, err, sizeof err);
  batcher_config bc = {.window_s = 1, .node = "n", .subdir = "", .max_age_s = 86400};
  r->b = r->sp && r->ex ? batcher_new(&bc, r->ex, r->sp) : NULL;
  listener_config lc = {.socket_path = sock_path,
                        .max_frame_bytes = 1u << 20,
                        .max_connections = max_conns,
                        .read_timeout_ms = timeout_ms,
                        .allow_uids = uids,
                        .n_allow_uids = nuids,
                        .worker_idle_ms = rig_worker_idle_ms};
  r->l = listener_open(&lc, err, sizeof err);
  if (!r->l)
    fprintf(stderr, "listener_open: %s\n", err);
  if (!r->sp || !r->ex || !r->b || !r->l || batcher_start(r->b) != 0 ||
      listener_start(r->l, r->sp, r->b) != 0)
    return -1;
  return 0;
}

static void rig_down(rig *r) {
  listener_stop(r->l);
  if (r->b) {
    batcher_shutdown(r->b, 5);
    batcher_free(r->b);
  }
  listener_free(r->l);
  if (r->ex)
    exporter_destroy(r->ex);
  if (r->sp)
    spool_close(r->sp);
}

static int make_frame(uint8_t **frame, size_t *len, const char *service) {
  pp_builder *b = pp_builder_new();
  uint8_t *prof = NULL;
  size_t plen = 0;
  int rc = -1;
  if (!b || pp_builder_add_sample_type(b, "samples", "count") != 0)
    goto out;
  uint64_t fid = pp_builder_function(b, "main", "main", "main.c", 1);
  int64_t line = 3;
  uint64_t loc = pp_builder_location(b, 0, 0x1000, &fid, &line, 1);
  int64_t v = 5;
  if (!fid || !loc || pp_builder_sample(b, &loc, 1, &v, 1, NULL, 0) != 0 ||
      pp_builder_pack(b, &prof, &plen) != 0)
    goto out;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = (char *)service;
  req.pid = 1;
  req.hostname = "h";
  req.start_time_nanos = 1700000000000000000;
  req.end_time_nanos = req.start_time_nanos + 1000;
  req.sequence = 42;
  req.pprof.data = prof;
  req.pprof.len = plen;
  rc = pp_client_encode_push(&req, frame, len);
out:
  free(prof);
  pp_builder_free(b);
  return rc;
}

static void test_listener_socket_is_0660_in_a_0750_dir(void) {
  rig r;
  PP_CHECK_INT(rig_up(&r, NULL, 0, 8, 2000), ==, 0);
  struct stat st;
  PP_CHECK_INT(lstat(sock_path, &st), ==, 0);
  PP_CHECK(S_ISSOCK(st.st_mode));
  PP_CHECK_INT(st.st_mode & 0777, ==, 0660);
  char d[256];
  snprintf(d, sizeof d, "%s/sock", dir);
  PP_CHECK_INT(stat(d, &st), ==, 0);
  PP_CHECK_INT(st.st_mode & 0777, ==, 0750);
  rig_down(&r);
  PP_CHECK_INT(access(sock_path, F_OK), ==, -1); /* unlinked on stop */
}

typedef struct pusher {
  const uint8_t *frame;
  size_t len;
  int acked;
} pusher;

static void *push_many(void *arg) {
  pusher *p = arg;
  for (int i = 0; i < 10; i++) {
    pp_client_reply rep;
    if (pp_client_push_frame(sock_path, p->frame, p->len, 10000, &rep) == PP_CLIENT_ACKED &&
        rep.push_id[0])
      p->acked++;
  }
  return NULL;
}

static void test_listener_acks_concurrent_clients(void) {
  rig r;
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  PP_CHECK_INT(rig_up(&r, NULL, 0, 16, 5000), ==, 0);
  pthread_t t[4];
  pusher p[4];
  for (int i = 0; i < 4; i++) {
    p[i] = (pusher){frame, len, 0};
    PP_CHECK_INT(pthread_create(&t[i], NULL, push_many, &p[i]), ==, 0);
  }
  int acked = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    acked += p[i].acked;
  }
  PP_CHECK_INT(acked, ==, 40);
  rig_down(&r); /* exports the open batch */
  free(frame);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connection per push (as the SDK pushes) is served by a thread that is
 * kept for the next connection, not by a new thread each time. The idle
 * wait is a minute here: a connection handed to a waiting thread that
 * missed its wake-up would stall past the clients' 10 s timeout, and a
 * stop that did not wake the waiting threads would take that minute. */
static void test_listener_serves_connections_on_kept_threads(void) {
  rig r;
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  rig_worker_idle_ms = 60000;
  PP_CHECK_INT(rig_up(&r, NULL, 0, 16, 5000), ==, 0);
  uint64_t started0 = mtu_value("pushprof_connection_threads_started_total");
  int acked = 0;
  for (int i = 0; i < 40; i++) {
    pp_client_reply rep;
    if (pp_client_push_frame(sock_path, frame, len, 10000, &rep) == PP_CLIENT_ACKED)
      acked++;
  }
  PP_CHECK_INT(acked, ==, 40);
  /* The next connection may come before the last one's thread is free. */
  uint64_t started = mtu_value("pushprof_connection_threads_started_total") - started0;
  PP_CHECK(started >= 1 && started <= 4);
  PP_CHECK(mtu_value("pushprof_connection_threads") >= 1);
  for (int round = 0; round < 5; round++) {
    pthread_t t[6];
    pusher p[6];
    for (int i = 0; i < 6; i++) {
      p[i] = (pusher){frame, len, 0};
      PP_CHECK_INT(pthread_create(&t[i], NULL, push_many, &p[i]), ==, 0);
    }
    acked = 0;
    for (int i = 0; i < 6; i++) {
      pthread_join(t[i], NULL);
      acked += p[i].acked;
    }
    PP_CHECK_INT(acked, ==, 60);
  }
  /* Never more threads than connections open at once (16 + evictions). */
  PP_CHECK(mtu_value("pushprof_connection_threads") <= 32);
  double t0 = mono_s();
  rig_down(&r);
  PP_CHECK(mono_s() - t0 < 30);
  PP_CHECK_INT(mtu_value("pushprof_connection_threads"), ==, 0);
  rig_worker_idle_ms = 0;
  free(frame);
}

static void test_listener_refuses_bad_frames_by_reason(void) {
  rig r;
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  PP_CHECK_INT(rig_up(&r, NULL, 0, 16, 500), ==, 0);
  pp_client_reply rep;
  uint64_t before = metrics_reason_value("rejected", "bad_magic");
  frame[0] = 'X';
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_REFUSED);
  PP_CHECK_INT(rep.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
  PP_CHECK_INT(metrics_reason_value("rejected", "bad_magic"), ==, before + 1);
  frame[0] = 'P';
  /* An empty service fails the push checks. */
  uint8_t *bad = NULL;
  size_t blen = 0;
  PP_CHECK_INT(make_frame(&bad, &blen, ""), ==, 0);
  PP_CHECK_INT(pp_client_push_frame(sock_path, bad, blen, 5000, &rep), ==, PP_CLIENT_REFUSED);
  PP_CHECK_INT(rep.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  PP_CHECK(rep.reason[0] != 0);
  /* A silent client is cut off after the read timeout and counted. */
  before = metrics_reason_value("rejected", "read_timeout");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
  PP_CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof sa), ==, 0);
  uint8_t buf[512];
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ssize_t n = recv(fd, buf, sizeof buf, MSG_WAITALL);
  PP_CHECK(n >= PP_FRAME_HEADER_SIZE); /* the timeout reply, then EOF */
  close(fd);
  PP_CHECK_INT(metrics_reason_value("rejected", "read_timeout"), ==, before + 1);
  /* And a valid push still goes through. */
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_ACKED);
  rig_down(&r);
  free(bad);
  free(frame);
}

/* Resident memory over the guard's limit: a frame waits unread, then is
 * told to retry (UNAVAILABLE, counted as memory_rss); once under, the same
 * push is taken in. */
static void test_listener_refuses_pushes_over_the_rss_limit(void) {
  rig r;
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  PP_CHECK_INT(rig_up(&r, NULL, 0, 16, 2000), ==, 0);
  pp_client_reply rep;
  uint64_t before = metrics_reason_value("rejected", "memory_rss");
  membudget_guard(1); /* any process is over one byte */
  PP_CHECK(membudget_over());
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_REFUSED);
  PP_CHECK_INT(rep.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__UNAVAILABLE);
  PP_CHECK(strstr(rep.reason, "--max-memory") != NULL);
  PP_CHECK_INT(metrics_reason_value("rejected", "memory_rss"), ==, before + 1);
  membudget_guard(1ull << 50);
  PP_CHECK(!membudget_over());
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_ACKED);
  membudget_guard(0);
  rig_down(&r);
  free(frame);
}

static int connect_sock(void) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  struct timeval tv = {5, 0};
  if (fd >= 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

/* Reads one reply frame from fd; NULL on EOF, timeout or garbage. */
static Pushprof__V1__PushReply *read_reply(int fd) {
  uint8_t hdr[PP_FRAME_HEADER_SIZE], body[2048];
  if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr)
    return NULL;
  uint32_t n = (uint32_t)hdr[8] << 24 | (uint32_t)hdr[9] << 16 | (uint32_t)hdr[10] << 8 | hdr[11];
  if (n > sizeof body || (n && recv(fd, body, n, MSG_WAITALL) != (ssize_t)n))
    return NULL;
  return pushprof__v1__push_reply__unpack(NULL, n, body);
}

/* Sends frame on a new connection and returns the reply (NULL if none). */
static Pushprof__V1__PushReply *raw_push(const uint8_t *frame, size_t len) {
  int fd = connect_sock();
  if (fd < 0)
    return NULL;
  Pushprof__V1__PushReply *r = NULL;
  if (send(fd, frame, len, MSG_NOSIGNAL) == (ssize_t)len)
    r = read_reply(fd);
  close(fd);
  return r;
}

/* Checks a reply's code (and sequence, unless seq < 0), then frees it. */
static void expect_reply(Pushprof__V1__PushReply *rep, int code, int64_t seq) {
  PP_CHECK(rep != NULL);
  if (!rep)
    return;
  PP_CHECK_INT(rep->code, ==, code);
  if (seq >= 0)
    PP_CHECK_INT(rep->sequence, ==, (uint64_t)seq);
  PP_CHECK(rep->reason && rep->reason[0]);
  pushprof__v1__push_reply__free_unpacked(rep, NULL);
}

/* Every prefix of a real payload (the sequence, field 7, is found in those
 * that reach past it) and random bytes: in bounds (ASan), never a crash. */
static void test_listener_peek_sequence_survives_prefixes_and_noise(void) {
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  if (!frame)
    return;
  const uint8_t *payload = frame + PP_FRAME_HEADER_SIZE;
  size_t plen = len - PP_FRAME_HEADER_SIZE, found = 0;
  for (size_t n = 0; n <= plen; n++) {
    uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
    memcpy(copy, payload, n);
    uint64_t seq = 0;
    if (listener_peek_sequence(copy, n, &seq) == 0) {
      PP_CHECK_INT(seq, ==, 42);
      found++;
    }
    free(copy);
  }
  PP_CHECK(found > 0);
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; i++) {
    size_t n = (size_t)(i % 64);
    uint8_t *b = malloc(n ? n : 1);
    for (size_t k = 0; k < n; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b[k] = (uint8_t)x;
    }
    uint64_t seq;
    (void)listener_peek_sequence(b, n, &seq);
    free(b);
  }
  free(frame);
}

static void test_listener_error_replies_echo_the_sequence(void) {
  rig r;
  uint8_t *bad = NULL;
  size_t blen = 0;
  PP_CHECK_INT(make_frame(&bad, &blen, ""), ==, 0); /* decodes, fails validation; seq 42 */
  PP_CHECK_INT(rig_up(&r, NULL, 0, 4, 2000), ==, 0);
  expect_reply(raw_push(bad, blen), PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, 42);
  /* A payload torn after the sequence field: not a PushRequest, seq kept. */
  uint8_t torn[PP_FRAME_HEADER_SIZE + 6];
  const uint8_t payload[] = {0x38, 0x2a, 0x42, 0x7f, 'x', 'y'};
  memcpy(torn + PP_FRAME_HEADER_SIZE, payload, sizeof payload);
  pp_frame_header_encode(torn, PP_FRAME_PUSH, sizeof payload);
  expect_reply(raw_push(torn, sizeof torn), PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, 42);
  rig_down(&r);
  free(bad);
}

/* A no_samples push (a process that took no sample): answered OK with no
 * push id, counted, never stored; with a pprof or without a service it is
 * refused like any bad push. Also sent with the SDK's fire-and-forget call. */
static int make_empty_frame(uint8_t **frame, size_t *len, const char *service, int with_pprof) {
  static uint8_t junk[] = {1, 2, 3};
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = (char *)service;
  req.pid = 7;
  req.sequence = 9;
  req.no_samples = 1;
  if (with_pprof) {
    req.pprof.data = junk;
    req.pprof.len = sizeof junk;
  }
  return pp_client_encode_push(&req, frame, len);
}

static void test_listener_counts_no_samples_pushes_and_stores_nothing(void) {
  rig r;
  uint8_t *ok = NULL, *with = NULL, *nosvc = NULL;
  size_t okl = 0, withl = 0, nosvcl = 0;
  PP_CHECK_INT(make_empty_frame(&ok, &okl, "svc", 0), ==, 0);
  PP_CHECK_INT(make_empty_frame(&with, &withl, "svc", 1), ==, 0);
  PP_CHECK_INT(make_empty_frame(&nosvc, &nosvcl, "", 0), ==, 0);
  PP_CHECK_INT(rig_up(&r, NULL, 0, 4, 2000), ==, 0);
  Pushprof__V1__PushReply *rep = raw_push(ok, okl);
  PP_CHECK(rep != NULL);
  if (rep) {
    PP_CHECK_INT(rep->code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__OK);
    PP_CHECK_INT(rep->sequence, ==, 9);
    PP_CHECK(rep->push_id == NULL || rep->push_id[0] == 0);
    pushprof__v1__push_reply__free_unpacked(rep, NULL);
  }
  PP_CHECK_INT(pp_client_send_frame_noreply(sock_path, ok, okl, 1000), ==, 0);
  expect_reply(raw_push(with, withl), PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, 9);
  expect_reply(raw_push(nosvc, nosvcl), PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, 9);
  char *m = NULL;
  for (int i = 0; i < 200; i++) { /* the fire-and-forget one lands on its own time */
    free(m);
    m = metrics_render();
    if (m && strstr(m, "\npushprof_pushes_empty_total 2\n"))
      break;
    usleep(10000);
  }
  PP_CHECK(m && strstr(m, "\npushprof_pushes_empty_total 2\n"));
  free(m);
  PP_CHECK_INT(spool_bytes(r.sp), ==, 0);
  rig_down(&r);
  free(ok);
  free(with);
  free(nosvc);
}

/* At the limit, the connection idle longest makes room; one busy with a
 * frame is never cut; the evicted one is told why and counted. */
static void test_listener_evicts_the_longest_idle_at_the_limit(void) {
  rig r;
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  PP_CHECK_INT(rig_up(&r, NULL, 0, 3, 5000), ==, 0);
  uint64_t idle0 = metrics_reason_value("evicted", "idle");
  uint64_t slow0 = metrics_reason_value("evicted", "slow_frame");
  struct timespec ts = {0, 50 * 1000 * 1000};
  int oldest = connect_sock(); /* silent */
  nanosleep(&ts, NULL);
  int slow = connect_sock(); /* half a frame */
  PP_CHECK(slow >= 0 && send(slow, frame, len / 2, MSG_NOSIGNAL) == (ssize_t)(len / 2));
  nanosleep(&ts, NULL);
  int young = connect_sock(); /* silent, newer */
  nanosleep(&ts, NULL);
  PP_CHECK(oldest >= 0 && young >= 0);
  /* Full: the next push evicts `oldest` and is acked. */
  pp_client_reply rep;
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_ACKED);
  Pushprof__V1__PushReply *ev = read_reply(oldest);
  PP_CHECK(ev && strstr(ev->reason, "--max-connections") != NULL);
  expect_reply(ev, PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED, 0);
  PP_CHECK_INT(metrics_reason_value("evicted", "idle"), ==, idle0 + 1);
  /* Full again (the pusher has gone); next in line: the half frame,
   * awaited longer than `young` and `filler`. */
  int filler = connect_sock();
  PP_CHECK(filler >= 0);
  nanosleep(&ts, NULL);
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_ACKED);
  expect_reply(read_reply(slow), PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED, 0);
  PP_CHECK_INT(metrics_reason_value("evicted", "slow_frame"), ==, slow0 + 1);
  close(oldest);
  close(slow);
  close(young);
  close(filler);
  rig_down(&r);
  free(frame);
}

static void test_listener_checks_peer_uid_and_connection_limit(void) {
  rig r;
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  uid_t other = getuid() + 4242;
  PP_CHECK_INT(rig_up(&r, &other, 1, 1, 3000), ==, 0);
  pp_client_reply rep;
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_REFUSED);
  PP_CHECK_INT(rep.code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__PERMISSION_DENIED);
  rig_down(&r);

  uid_t me = getuid();
  PP_CHECK_INT(rig_up(&r, &me, 1, 1, 3000), ==, 0);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0); /* holds the only slot */
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
  PP_CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof sa), ==, 0);
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  /* The idle holder gives up its slot (evicted) instead of locking us out. */
  PP_CHECK_INT(pp_client_push_frame(sock_path, frame, len, 5000, &rep), ==, PP_CLIENT_ACKED);
  close(fd);
  rig_down(&r);
  free(frame);
}

static void test_listener_refuses_live_socket_and_regular_file(void) {
  rig r;
  PP_CHECK_INT(rig_up(&r, NULL, 0, 4, 1000), ==, 0);
  char err[512] = "";
  listener_config lc = {.socket_path = sock_path,
                        .max_frame_bytes = 1u << 20,
                        .max_connections = 4,
                        .read_timeout_ms = 1000};
  listener *second = listener_open(&lc, err, sizeof err);
  PP_CHECK(second == NULL);
  PP_CHECK(strstr(err, "in use") != NULL);
  char pid[32]; /* the lock names the holder */
  snprintf(pid, sizeof pid, "pid %d", (int)getpid());
  PP_CHECK(strstr(err, pid) != NULL);
  rig_down(&r);
  char file[256];
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  PP_CHECK(f != NULL);
  if (f)
    fclose(f);
  lc.socket_path = file;
  PP_CHECK(listener_open(&lc, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "not a socket") != NULL);
  PP_CHECK_INT(access(file, F_OK), ==, 0);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/pushprof-test-listener-%d", (int)getpid());
  snprintf(sock_path, sizeof sock_path, "%s/sock/s.sock", dir);
  snprintf(spool_dir, sizeof spool_dir, "%s/spool", dir);
  snprintf(out_url, sizeof out_url, "file://%s/out", dir);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return 1;
  PP_RUN(test_listener_socket_is_0660_in_a_0750_dir);
  PP_RUN(test_listener_acks_concurrent_clients);
  PP_RUN(test_listener_serves_connections_on_kept_threads);
  PP_RUN(test_listener_refuses_bad_frames_by_reason);
  PP_RUN(test_listener_refuses_pushes_over_the_rss_limit);
  PP_RUN(test_listener_checks_peer_uid_and_connection_limit);
  PP_RUN(test_listener_peek_sequence_survives_prefixes_and_noise);
  PP_RUN(test_listener_error_replies_echo_the_sequence);
  PP_RUN(test_listener_counts_no_samples_pushes_and_stores_nothing);
  PP_RUN(test_listener_evicts_the_longest_idle_at_the_limit);
  PP_RUN(test_listener_refuses_live_socket_and_regular_file);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  PP_DONE();
}
