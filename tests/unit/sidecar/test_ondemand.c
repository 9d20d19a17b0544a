/* Unit tests for sidecar/ondemand.c over socketpairs: a subscription gets
 * WELCOME; a session sends START to the matching subscribers only, merges
 * what they deliver and answers with it; a second session of the same type
 * gets 409; a push for no running session is refused; a subscriber that
 * goes is dropped and no longer awaited; invalid Subscribe messages get
 * REFUSED. */
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "batch_test_util.h"
#include "ondemand.h"
#include "pp_arena.h"
#include "pp_parse.h"
#include "pp_push.h"
#include "pp_test.h"

/* Reads one Control frame from fd within 3 s; NULL if none. */
static Pushprof__V1__Control *read_control(int fd) {
  uint8_t buf[PP_FRAME_HEADER_SIZE + PP_CONTROL_MAX];
  size_t have = 0, want = PP_FRAME_HEADER_SIZE;
  pp_frame_header h = {0};
  while (have < want) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 3000) != 1)
      return NULL;
    ssize_t r = read(fd, buf + have, want - have);
    if (r <= 0)
      return NULL;
    have += (size_t)r;
    if (have == PP_FRAME_HEADER_SIZE && want == PP_FRAME_HEADER_SIZE) {
      if (pp_frame_header_decode(buf, PP_CONTROL_MAX, &h, NULL) != 0 || h.type != PP_FRAME_CONTROL)
        return NULL;
      want += h.length;
    }
  }
  return pushprof__v1__control__unpack(NULL, h.length, buf + PP_FRAME_HEADER_SIZE);
}

static int subscribe(ondemand *od, const char *service, uint32_t pid, const char *type) {
  int sv[2];
  PP_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  Pushprof__V1__Subscribe m = PUSHPROF__V1__SUBSCRIBE__INIT;
  char *types[1] = {(char *)type};
  m.control_version = 1;
  m.service = (char *)service;
  m.pid = pid;
  m.hostname = "h";
  m.profile_types = types;
  m.n_profile_types = 1;
  m.hz = 100;
  ondemand_adopt(od, sv[0], &m, 0);
  return sv[1];
}

typedef struct run_arg {
  ondemand *od;
  od_request rq;
  od_answer a;
} run_arg;

static void *run_thread(void *p) {
  run_arg *r = p;
  ondemand_run(r->od, &r->rq, &r->a);
  return NULL;
}

/* A push of value v at leaf for session id from pid. */
static pp_push *session_push(uint64_t id, const char *service, uint32_t pid, int64_t v,
                             const char *leaf) {
  size_t plen = 0, flen = 0;
  uint8_t *pprof = btu_pprof(v, leaf, &plen);
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = (char *)service;
  req.pid = pid;
  req.hostname = "h";
  req.start_time_nanos = 1;
  req.end_time_nanos = 2;
  req.session_id = id;
  req.profile_type = "cpu";
  req.pprof.data = pprof;
  req.pprof.len = plen;
  uint8_t *f = btu_frame_req(&req, &flen);
  int code = 0;
  char why[256];
  pp_push *p = pp_push_decode(f, flen, 1u << 20, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  free(f);
  free(pprof);
  return p;
}

static void test_session_merges_the_matching_subscribers(void) {
  char err[128];
  ondemand *od = ondemand_new(err, sizeof err);
  PP_CHECK(od != NULL);
  int a = subscribe(od, "api", 11, "cpu"), b = subscribe(od, "api", 12, "cpu");
  int other = subscribe(od, "batch", 13, "cpu"), heaponly = subscribe(od, "api", 14, "heap");
  int fds[4] = {a, b, other, heaponly};
  for (int i = 0; i < 4; i++) {
    Pushprof__V1__Control *w = read_control(fds[i]);
    PP_CHECK(w && w->kind == PUSHPROF__V1__CONTROL__KIND__WELCOME && w->control_version == 1);
    pushprof__v1__control__free_unpacked(w, NULL);
  }
  PP_CHECK_INT(ondemand_subscribers(od), ==, 4);
  run_arg r = {.od = od};
  char why[256];
  const char *body = "{\"sampling_frequency\": 250, \"timeout_seconds\": 1, \"service\": \"api\"}";
  PP_CHECK(od_request_parse(body, strlen(body), OD_CPU, &r.rq, why, sizeof why) == 0);
  pthread_t t;
  pthread_create(&t, NULL, run_thread, &r);
  Pushprof__V1__Control *sa = read_control(a), *sb = read_control(b);
  PP_CHECK(sa && sa->kind == PUSHPROF__V1__CONTROL__KIND__START && sa->sampling_hz == 250);
  PP_CHECK(sa && strcmp(sa->profile_type, "cpu") == 0 && sa->duration_ms >= 900);
  PP_CHECK(sb && sa && sb->session_id == sa->session_id);
  /* Not asked: another service, or a process without CPU profiles. */
  struct pollfd none[2] = {{.fd = other, .events = POLLIN}, {.fd = heaponly, .events = POLLIN}};
  PP_CHECK_INT(poll(none, 2, 200), ==, 0);
  /* The same type again while it runs: 409. */
  run_arg r2 = {.od = od};
  PP_CHECK(od_request_parse("", 0, OD_CPU, &r2.rq, why, sizeof why) == 0);
  ondemand_run(od, &r2.rq, &r2.a);
  PP_CHECK_INT(r2.a.status, ==, 409);
  free(r2.a.body);
  uint64_t id = sa ? sa->session_id : 0;
  pp_push *pa = session_push(id, "api", 11, 30, "leaf_a"),
          *pb = session_push(id, "api", 12, 12, "leaf_b");
  PP_CHECK(ondemand_deliver(od, pa, why, sizeof why) == 0);
  PP_CHECK(ondemand_deliver(od, pa, why, sizeof why) != 0); /* twice: refused */
  PP_CHECK(strstr(why, "already delivered") != NULL);
  pp_push *stranger = session_push(id, "batch", 13, 5, "leaf_c");
  PP_CHECK(ondemand_deliver(od, stranger, why, sizeof why) != 0);
  PP_CHECK(strstr(why, "was not asked") != NULL);
  PP_CHECK(ondemand_deliver(od, pb, why, sizeof why) == 0);
  pthread_join(t, NULL);
  PP_CHECK_INT(r.a.status, ==, 200);
  pp_pprof *p = pp_pprof_parse(r.a.body, r.a.len, 1u << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    const Perftools__Profiles__Profile *pr = pp_pprof_profile(p);
    int64_t sum = 0;
    for (size_t i = 0; i < pr->n_sample; i++)
      sum += pr->sample[i]->value[0];
    PP_CHECK_INT(sum, ==, 126); /* 3 x 30 + 3 x 12: each push holds 3 x its value */
    int said = 0;
    for (size_t i = 0; i < pr->n_comment; i++)
      said |= strstr(pr->string_table[pr->comment[i]], "2 of 2 processes delivered") != NULL;
    PP_CHECK(said);
    pp_pprof_free(p);
  }
  /* Over: a late push is refused. */
  PP_CHECK(ondemand_deliver(od, pb, why, sizeof why) != 0);
  PP_CHECK(strstr(why, "is not running") != NULL);
  pp_push_free(pa);
  pp_push_free(pb);
  pp_push_free(stranger);
  pushprof__v1__control__free_unpacked(sa, NULL);
  pushprof__v1__control__free_unpacked(sb, NULL);
  free(r.a.body);
  od_request_free(&r.rq);
  od_request_free(&r2.rq);
  /* A subscriber that goes is dropped. */
  close(other);
  for (int i = 0; i < 100 && ondemand_subscribers(od) != 3; i++)
    usleep(10000);
  PP_CHECK_INT(ondemand_subscribers(od), ==, 3);
  ondemand_free(od);
  close(a);
  close(b);
  close(heaponly);
}

static void test_gone_subscriber_is_not_awaited(void) {
  char err[128], why[256];
  ondemand *od = ondemand_new(err, sizeof err);
  int a = subscribe(od, "api", 21, "heap");
  Pushprof__V1__Control *w = read_control(a);
  pushprof__v1__control__free_unpacked(w, NULL);
  run_arg r = {.od = od};
  PP_CHECK(od_request_parse("{}", 2, OD_HEAP, &r.rq, why, sizeof why) == 0);
  pthread_t t;
  pthread_create(&t, NULL, run_thread, &r);
  Pushprof__V1__Control *s = read_control(a);
  PP_CHECK(s && s->kind == PUSHPROF__V1__CONTROL__KIND__START &&
           strcmp(s->profile_type, "heap") == 0);
  pushprof__v1__control__free_unpacked(s, NULL);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  close(a); /* exits without delivering */
  pthread_join(t, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  PP_CHECK_INT(r.a.status, ==, 504);
  PP_CHECK(took < 1.0); /* not the whole grace */
  PP_CHECK(r.a.body && strstr((char *)r.a.body, "\"exited\":true") != NULL);
  free(r.a.body);
  od_request_free(&r.rq);
  ondemand_free(od);
}

static void test_invalid_subscribe_is_refused(void) {
  char err[128];
  ondemand *od = ondemand_new(err, sizeof err);
  int fd = subscribe(od, "", 31, "cpu"); /* no service */
  Pushprof__V1__Control *c = read_control(fd);
  PP_CHECK(c && c->kind == PUSHPROF__V1__CONTROL__KIND__REFUSED && strstr(c->reason, "service"));
  pushprof__v1__control__free_unpacked(c, NULL);
  char b;
  PP_CHECK_INT(read(fd, &b, 1), ==, 0); /* closed */
  PP_CHECK_INT(ondemand_subscribers(od), ==, 0);
  close(fd);
  ondemand_free(od);
}

static void test_stop_ends_the_window_early(void) {
  char err[128], why[256];
  ondemand *od = ondemand_new(err, sizeof err);
  od_answer a;
  ondemand_stop(od, OD_CPU, &a);
  PP_CHECK_INT(a.status, ==, 412);
  free(a.body);
  run_arg r = {.od = od};
  const char *body = "{\"timeout_seconds\": 60}";
  PP_CHECK(od_request_parse(body, strlen(body), OD_CPU, &r.rq, why, sizeof why) == 0);
  pthread_t t;
  pthread_create(&t, NULL, run_thread, &r);
  usleep(100000);
  ondemand_status(od, OD_CPU, &a);
  PP_CHECK(a.body && strstr((char *)a.body, "\"running\":true"));
  free(a.body);
  ondemand_stop(od, OD_CPU, &a);
  PP_CHECK_INT(a.status, ==, 200);
  free(a.body);
  pthread_join(t, NULL);
  PP_CHECK_INT(r.a.status, ==, 404); /* nobody subscribed */
  free(r.a.body);
  od_request_free(&r.rq);
  ondemand_free(od);
}

int main(void) {
  PP_RUN(test_session_merges_the_matching_subscribers);
  PP_RUN(test_gone_subscriber_is_not_awaited);
  PP_RUN(test_invalid_subscribe_is_refused);
  PP_RUN(test_stop_ends_the_window_early);
  PP_DONE();
}
