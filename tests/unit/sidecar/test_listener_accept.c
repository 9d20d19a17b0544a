/* Unit tests for sidecar/listener_accept.c: the uid allow-list, the
 * connection limit and the eviction of the longest idle connection.
 * Threaded: runs under TSan in CI (labels unit;tsan). */
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

int main(void) {
  if (lt_setup("listener-accept") != 0)
    return 1;
  PP_RUN(test_listener_checks_peer_uid_and_connection_limit);
  PP_RUN(test_listener_evicts_the_longest_idle_at_the_limit);
  lt_cleanup();
  PP_DONE();
}
