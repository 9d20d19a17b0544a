/* Unit tests for sidecar/listener_conn.c: frames read, checked, stored and
 * acked on connection threads that are kept for the next connection, and
 * refusals by reason. Threaded: runs under TSan in CI (labels unit;tsan). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "listener_test_util.h"
#include "pp_test.h"

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

int main(void) {
  if (lt_setup("listener-conn") != 0)
    return 1;
  PP_RUN(test_listener_acks_concurrent_clients);
  PP_RUN(test_listener_serves_connections_on_kept_threads);
  PP_RUN(test_listener_refuses_bad_frames_by_reason);
  PP_RUN(test_listener_refuses_pushes_over_the_rss_limit);
  PP_RUN(test_listener_error_replies_echo_the_sequence);
  PP_RUN(test_listener_counts_no_samples_pushes_and_stores_nothing);
  lt_cleanup();
  PP_DONE();
}
