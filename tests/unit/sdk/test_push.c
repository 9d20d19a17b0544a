/* Unit tests for sdk/push.c against a listening Unix socket made here (no
 * sampler: every profile type's window is empty): push_labels_view points
 * at the packed pairs; push_leave_empty sends one no_samples notice with
 * the process's service, labels, pid and host and no profile; push_final
 * with nothing to send does the same and never blocks on a sidecar that
 * does not answer; push_session for a session this process does not run
 * sends nothing. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pp_frame.h"
#include "pp_test.h"
#include "sock_test_util.h"
#include "push.h"
#include "pushprof.pb-c.h"

static char g_path[108];

/* The next PushRequest sent to lfd within ms, or NULL. */
static Pushprof__V1__PushRequest *next_push(int lfd, int ms) {
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  if (poll(&p, 1, ms) != 1)
    return NULL;
  int fd = accept(lfd, NULL, NULL);
  uint8_t buf[8192];
  size_t have = 0;
  ssize_t r;
  while ((r = read(fd, buf + have, sizeof buf - have)) > 0)
    have += (size_t)r;
  close(fd);
  pp_frame_header h;
  if (have < PP_FRAME_HEADER_SIZE || pp_frame_header_decode(buf, sizeof buf, &h, NULL) != 0 ||
      h.type != PP_FRAME_PUSH || PP_FRAME_HEADER_SIZE + h.length != have)
    return NULL;
  return pushprof__v1__push_request__unpack(NULL, h.length, buf + PP_FRAME_HEADER_SIZE);
}

static void cfg_for(env_config *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->socket_path, sizeof c->socket_path, "%s", g_path);
  snprintf(c->service, sizeof c->service, "push-test");
  static const char kv[] = "env\0prod\0zone\0b";
  memcpy(c->labels, kv, sizeof kv);
  c->labels_len = sizeof kv;
  c->nlabels = 2;
  c->hz = 100;
  c->upload_period_s = 60;
  c->exit_timeout_ms = 500;
  c->backlog = 2;
  c->profiles = PUSHPROF_PROFILE_CPU;
}

static void check_notice(Pushprof__V1__PushRequest *r) {
  PP_CHECK(r != NULL);
  if (!r)
    return;
  PP_CHECK(r->no_samples);
  PP_CHECK_INT(r->pprof.len, ==, 0);
  PP_CHECK_STR(r->service, "push-test");
  PP_CHECK_INT(r->pid, ==, (uint32_t)getpid());
  PP_CHECK(r->hostname && r->hostname[0]);
  PP_CHECK(r->n_labels == 2 && strcmp(r->labels[1]->key, "zone") == 0 &&
           strcmp(r->labels[1]->value, "b") == 0);
  PP_CHECK_INT(r->session_id, ==, 0);
  pushprof__v1__push_request__free_unpacked(r, NULL);
}

static void test_labels_view(void) {
  static const char kv[] = "a\0one\0bb\0\0c\0three";
  Pushprof__V1__Label lab[4];
  Pushprof__V1__Label *labp[4];
  PP_CHECK_INT(push_labels_view(kv, 3, lab, labp), ==, 3);
  PP_CHECK_STR(labp[0]->key, "a");
  PP_CHECK_STR(labp[1]->value, "");
  PP_CHECK_STR(labp[2]->value, "three");
}

static void test_empty_exit_sends_one_notice(void) {
  char dir[64], err[256];
  pp_test_mkdtemp(dir, sizeof dir, "push");
  int lfd = stu_listen(dir, g_path);
  env_config c;
  cfg_for(&c);
  c.ondemand = 0;
  PP_CHECK_INT(push_start(&c, NULL, err, sizeof err), ==, 0);
  PP_CHECK(push_active());
  PP_CHECK(push_nothing_to_send());
  push_session(PUSHPROF_PROFILE_CPU, 99); /* not running here: nothing sent */
  PP_CHECK(next_push(lfd, 300) == NULL);
  PP_CHECK_INT(push_leave_empty(), ==, 0);
  check_notice(next_push(lfd, 2000));
  PP_CHECK(!push_active());

  /* Started again, push_final with nothing to send: the same notice, and
   * it returns at once although nobody answers. */
  PP_CHECK_INT(push_start(&c, NULL, err, sizeof err), ==, 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  PP_CHECK_INT(push_final(500), ==, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  PP_CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 400);
  check_notice(next_push(lfd, 2000));
  PP_CHECK_INT(push_final(500), ==, PUSHPROF_ENOTSTARTED); /* once */
  close(lfd);
  unlink(g_path);
  rmdir(dir);
}

int main(void) {
  PP_RUN(test_labels_view);
  PP_RUN(test_empty_exit_sends_one_notice);
  PP_DONE();
}
