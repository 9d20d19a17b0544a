/* The listener in-process with the real spool, batcher and file exporter,
 * in a per-process directory, and a client's side of it (frames, raw
 * pushes, replies), for the listener's unit tests. Header-only. */
#ifndef LISTENER_TEST_UTIL_H
#define LISTENER_TEST_UTIL_H
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

static inline int rig_up(rig *r, const uid_t *uids, size_t nuids, int max_conns, int timeout_ms) {
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

static inline void rig_down(rig *r) {
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

static inline int make_frame(uint8_t **frame, size_t *len, const char *service) {
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

static inline int connect_sock(void) {
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
static inline Pushprof__V1__PushReply *read_reply(int fd) {
  uint8_t hdr[PP_FRAME_HEADER_SIZE], body[2048];
  if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr)
    return NULL;
  uint32_t n = (uint32_t)hdr[8] << 24 | (uint32_t)hdr[9] << 16 | (uint32_t)hdr[10] << 8 | hdr[11];
  if (n > sizeof body || (n && recv(fd, body, n, MSG_WAITALL) != (ssize_t)n))
    return NULL;
  return pushprof__v1__push_reply__unpack(NULL, n, body);
}

/* Sends frame on a new connection and returns the reply (NULL if none). */
static inline Pushprof__V1__PushReply *raw_push(const uint8_t *frame, size_t len) {
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
static inline void expect_reply(Pushprof__V1__PushReply *rep, int code, int64_t seq) {
  PP_CHECK(rep != NULL);
  if (!rep)
    return;
  PP_CHECK_INT(rep->code, ==, code);
  if (seq >= 0)
    PP_CHECK_INT(rep->sequence, ==, (uint64_t)seq);
  PP_CHECK(rep->reason && rep->reason[0]);
  pushprof__v1__push_reply__free_unpacked(rep, NULL);
}

/* Paths under /tmp/pushprof-test-<name>-<pid>, created; 0 or -1. */
static inline int lt_setup(const char *name) {
  snprintf(dir, sizeof dir, "/tmp/pushprof-test-%s-%d", name, (int)getpid());
  snprintf(sock_path, sizeof sock_path, "%s/sock/s.sock", dir);
  snprintf(spool_dir, sizeof spool_dir, "%s/spool", dir);
  snprintf(out_url, sizeof out_url, "file://%s/out", dir);
  return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static inline void lt_cleanup(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}
#endif
