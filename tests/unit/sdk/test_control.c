/* Unit tests for sdk/control.c against a listening Unix socket made here:
 * the first tick connects and sends a Subscribe with the process's
 * service, labels, pid, profile types and rate; WELCOME keeps the
 * subscription; REFUSED, a START outside the protocol's bounds and a
 * PushReply (a sidecar without subscriptions) end it, the last one for
 * long; with PUSHPROF_ONDEMAND=0 nothing connects. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "pp_frame.h"
#include "pp_test.h"
#include "sock_test_util.h"
#include "pushprof.pb-c.h"

static char g_path[108];

static int accept_within(int lfd, int ms) {
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  return poll(&p, 1, ms) == 1 ? accept(lfd, NULL, NULL) : -1;
}

static void cfg_for(env_config *c, int ondemand) {
  memset(c, 0, sizeof *c);
  snprintf(c->socket_path, sizeof c->socket_path, "%s", g_path);
  snprintf(c->service, sizeof c->service, "ctl-test");
  static const char kv[] = "env\0prod";
  memcpy(c->labels, kv, sizeof kv);
  c->labels_len = sizeof kv;
  c->nlabels = 1;
  c->hz = 97;
  c->profiles = PUSHPROF_PROFILE_CPU | PUSHPROF_PROFILE_HEAP;
  c->ondemand = ondemand;
}

static void send_control(int fd, Pushprof__V1__Control *m) {
  uint8_t buf[256];
  size_t n = pushprof__v1__control__get_packed_size(m);
  pp_frame_header_encode(buf, PP_FRAME_CONTROL, (uint32_t)n);
  pushprof__v1__control__pack(m, buf + PP_FRAME_HEADER_SIZE);
  PP_CHECK(write(fd, buf, PP_FRAME_HEADER_SIZE + n) == (ssize_t)(PP_FRAME_HEADER_SIZE + n));
}

/* 1 if the peer closed fd within ms. */
static int closed_within(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char b;
  return poll(&p, 1, ms) == 1 && read(fd, &b, 1) == 0;
}

static void test_subscribes_and_ends_as_told(void) {
  char dir[64];
  pp_test_mkdtemp(dir, sizeof dir, "ctl");
  int lfd = stu_listen(dir, g_path);
  env_config c;
  cfg_for(&c, 1);
  control_start(&c);
  control_tick();
  int fd = accept_within(lfd, 1000);
  PP_CHECK(fd >= 0);
  uint8_t buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  pp_frame_header h;
  PP_CHECK(n > PP_FRAME_HEADER_SIZE && pp_frame_header_decode(buf, 4096, &h, NULL) == 0);
  PP_CHECK_INT(h.type, ==, PP_FRAME_SUBSCRIBE);
  Pushprof__V1__Subscribe *s =
      pushprof__v1__subscribe__unpack(NULL, h.length, buf + PP_FRAME_HEADER_SIZE);
  PP_CHECK(s != NULL);
  if (s) {
    PP_CHECK_STR(s->service, "ctl-test");
    PP_CHECK_INT(s->pid, ==, (uint32_t)getpid());
    PP_CHECK_INT(s->hz, ==, 97);
    PP_CHECK_INT(s->control_version, ==, PP_CONTROL_VERSION);
    PP_CHECK(s->n_labels == 1 && strcmp(s->labels[0]->value, "prod") == 0);
    PP_CHECK(s->n_profile_types == 2 && strcmp(s->profile_types[1], "heap") == 0);
    pushprof__v1__subscribe__free_unpacked(s, NULL);
  }
  Pushprof__V1__Control m = PUSHPROF__V1__CONTROL__INIT;
  m.kind = PUSHPROF__V1__CONTROL__KIND__WELCOME;
  send_control(fd, &m);
  usleep(20000);
  control_tick();
  PP_CHECK(!closed_within(fd, 100)); /* WELCOME: the subscription stays */
  m.kind = PUSHPROF__V1__CONTROL__KIND__START;
  m.session_id = 7;
  m.profile_type = "cpu";
  m.sampling_hz = 0; /* outside 1..1000 */
  m.duration_ms = 1000;
  send_control(fd, &m);
  usleep(20000);
  control_tick();
  PP_CHECK(closed_within(fd, 1000));
  close(fd);

  /* A sidecar without subscriptions answers with a PushReply: asked again
   * only much later, so the next ticks do not reconnect. */
  control_start(&c);
  control_tick();
  fd = accept_within(lfd, 1000);
  PP_CHECK(fd >= 0);
  PP_CHECK(read(fd, buf, sizeof buf) > 0); /* its Subscribe */
  Pushprof__V1__PushReply r = PUSHPROF__V1__PUSH_REPLY__INIT;
  r.code = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME;
  size_t rn = pushprof__v1__push_reply__get_packed_size(&r);
  pp_frame_header_encode(buf, PP_FRAME_REPLY, (uint32_t)rn);
  pushprof__v1__push_reply__pack(&r, buf + PP_FRAME_HEADER_SIZE);
  PP_CHECK(write(fd, buf, PP_FRAME_HEADER_SIZE + rn) == (ssize_t)(PP_FRAME_HEADER_SIZE + rn));
  close(fd);
  usleep(20000);
  for (int i = 0; i < 5; i++)
    control_tick();
  PP_CHECK_INT(accept_within(lfd, 300), ==, -1);
  PP_CHECK_INT(control_stop(), ==, 0);

  /* PUSHPROF_ONDEMAND=0: nothing connects. */
  cfg_for(&c, 0);
  control_start(&c);
  control_tick();
  PP_CHECK_INT(accept_within(lfd, 200), ==, -1);
  close(lfd);
  unlink(g_path);
  rmdir(dir);
}

int main(void) {
  PP_RUN(test_subscribes_and_ends_as_told);
  PP_DONE();
}
