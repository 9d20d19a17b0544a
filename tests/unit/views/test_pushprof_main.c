/* views/pushprof_main.c, the pushprof command run as a process: usage,
 * --version and unknown commands; push's refusals of bad usage and bad
 * files (exit 2), an unreachable sidecar (exit 3), and against a one-push
 * socket server an ack (exit 0: the uncompressed pprof, the service named
 * after the file, the labels) and a refusal (exit 1: code and reason). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pp_frame.h"
#include "pushprof.pb-c.h"
#include "view_fixture.h"

typedef struct result {
  int status; /* exit status, or -1 if it did not exit */
  char out[8192], err[8192];
} result;

static void read_back(int fd, char *buf, size_t len) {
  ssize_t n = pread(fd, buf, len - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  close(fd);
}

/* Runs the pushprof binary with args (NULL-terminated), its standard
 * output and error captured. */
static void run(result *r, const char *const *args) {
  char *argv[16] = {(char *)PUSHPROF_CLI};
  for (int i = 0; args[i] && i < 14; i++)
    argv[i + 1] = (char *)args[i];
  int out = memfd_create("out", 0), err = memfd_create("err", 0);
  PP_CHECK(out >= 0 && err >= 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  PP_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  read_back(out, r->out, sizeof r->out);
  read_back(err, r->err, sizeof r->err);
}

#define RUN(r, ...) run(r, (const char *const[]){__VA_ARGS__, NULL})

/* ---- a sidecar for one push ---- */

typedef struct sidecar {
  int lfd;
  bool refuse;
  pthread_t thread;
  /* Written by the thread, read after join. */
  char service[64], label[64];
  size_t pprof_len;
} sidecar;

static int io_all(int fd, uint8_t *buf, size_t len, bool writing) {
  for (size_t off = 0; off < len;) {
    ssize_t n =
        writing ? send(fd, buf + off, len - off, MSG_NOSIGNAL) : read(fd, buf + off, len - off);
    if (n <= 0 && !(n < 0 && errno == EINTR))
      return -1;
    off += n > 0 ? (size_t)n : 0;
  }
  return 0;
}

static void *serve(void *arg) {
  sidecar *s = arg;
  struct pollfd p = {.fd = s->lfd, .events = POLLIN};
  int fd = poll(&p, 1, 10000) == 1 ? accept(s->lfd, NULL, NULL) : -1;
  uint8_t hdr[PP_FRAME_HEADER_SIZE];
  pp_frame_header h;
  const char *why = NULL;
  if (fd < 0 || io_all(fd, hdr, sizeof hdr, false) != 0 ||
      pp_frame_header_decode(hdr, PP_FRAME_MAX_DEFAULT, &h, &why) != 0)
    goto out;
  uint8_t *payload = malloc(h.length ? h.length : 1);
  Pushprof__V1__PushRequest *req = payload && io_all(fd, payload, h.length, false) == 0
                                       ? pushprof__v1__push_request__unpack(NULL, h.length, payload)
                                       : NULL;
  free(payload);
  if (!req)
    goto out;
  snprintf(s->service, sizeof s->service, "%s", req->service);
  if (req->n_labels == 1)
    snprintf(s->label, sizeof s->label, "%s=%s", req->labels[0]->key, req->labels[0]->value);
  s->pprof_len = req->pprof.len;
  Pushprof__V1__PushReply r = PUSHPROF__V1__PUSH_REPLY__INIT;
  r.code = s->refuse ? PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED
                     : PUSHPROF__V1__PUSH_REPLY__CODE__OK;
  r.reason = (char *)(s->refuse ? "spool full" : "");
  r.push_id = (char *)(s->refuse ? "" : "push-0042");
  r.sequence = req->sequence;
  pushprof__v1__push_request__free_unpacked(req, NULL);
  uint8_t buf[256];
  size_t n = pushprof__v1__push_reply__get_packed_size(&r);
  pp_frame_header_encode(buf, PP_FRAME_REPLY, (uint32_t)n);
  pushprof__v1__push_reply__pack(&r, buf + PP_FRAME_HEADER_SIZE);
  io_all(fd, buf, PP_FRAME_HEADER_SIZE + n, true);
out:
  if (fd >= 0)
    close(fd);
  return NULL;
}

static int sidecar_start(sidecar *s, const char *path, bool refuse) {
  memset(s, 0, sizeof *s);
  s->refuse = refuse;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rc = s->lfd >= 0 && bind(s->lfd, (struct sockaddr *)&a, sizeof a) == 0 &&
                   listen(s->lfd, 1) == 0 && pthread_create(&s->thread, NULL, serve, s) == 0
               ? 0
               : -1;
  PP_CHECK_INT(rc, ==, 0);
  return rc;
}

static void sidecar_stop(sidecar *s) {
  pthread_join(s->thread, NULL);
  close(s->lfd);
}

/* ---- the cases ---- */

static const char *const LINES[] = {"3 main;a", "4 main;b"};

static void test_main_usage_version_and_unknown_command(void) {
  result r;
  RUN(&r, NULL);
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "usage: pushprof push FILE") != NULL);
  RUN(&r, "--help");
  PP_CHECK_INT(r.status, ==, 0);
  PP_CHECK(strstr(r.out, "usage: pushprof push FILE") && strstr(r.out, "pushprof flame"));
  RUN(&r, "--version");
  PP_CHECK_INT(r.status, ==, 0);
  PP_CHECK_STR(r.out, "pushprof 0.1.0\n");
  RUN(&r, "bogus");
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "unknown command \"bogus\"") != NULL);
}

static void test_main_push_refuses_bad_usage_and_files(void) {
  char dir[64], good[256], junk[256], missing[256];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(good, sizeof good, "%s/good.pb", dir);
  snprintf(junk, sizeof junk, "%s/junk.pb", dir);
  snprintf(missing, sizeof missing, "%s/missing.pb", dir);
  write_lines_at(good, LINES, 2, 0, false);
  write_file(junk, "not a profile", 13);
  result r;
  RUN(&r, "push");
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "expected exactly one FILE") != NULL);
  RUN(&r, "push", missing);
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "cannot open") && strstr(r.err, missing));
  RUN(&r, "push", junk);
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "is not a valid pprof profile") != NULL);
  RUN(&r, "push", "--label", "novalue", good);
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "expected KEY=VALUE") != NULL);
  RUN(&r, "push", "--timeout", "0", good);
  PP_CHECK_INT(r.status, ==, 2);
  RUN(&r, "push", "--service", "", good);
  PP_CHECK_INT(r.status, ==, 2);
  PP_CHECK(strstr(r.err, "--service must be") != NULL);
  temp_dir_remove(dir);
}

static void test_main_push_without_a_sidecar_exits_3(void) {
  char dir[64], good[256], sock[256];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(good, sizeof good, "%s/good.pb", dir);
  snprintf(sock, sizeof sock, "%s/none.sock", dir);
  write_lines_at(good, LINES, 2, 0, false);
  result r;
  RUN(&r, "push", "--socket", sock, good);
  PP_CHECK_INT(r.status, ==, 3);
  PP_CHECK(strstr(r.err, sock) != NULL);
  setenv("PUSHPROF_SOCKET", sock, 1); /* the default socket comes from here */
  RUN(&r, "push", good);
  PP_CHECK_INT(r.status, ==, 3);
  PP_CHECK(strstr(r.err, sock) != NULL);
  unsetenv("PUSHPROF_SOCKET");
  temp_dir_remove(dir);
}

static void test_main_push_acked_and_refused(void) {
  char dir[64], file[256], sock[256];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(file, sizeof file, "%s/api-1234.pb.gz", dir);
  snprintf(sock, sizeof sock, "%s/s.sock", dir);
  write_lines_at(file, LINES, 2, 0, true);
  size_t raw_len = 0;
  free(pack_lines(LINES, 2, &raw_len));
  sidecar s;
  result r;
  if (sidecar_start(&s, sock, false) == 0) {
    RUN(&r, "push", "--socket", sock, "--label", "env=test", file);
    sidecar_stop(&s);
    PP_CHECK_INT(r.status, ==, 0);
    PP_CHECK(strstr(r.out, "push id push-0042") && strstr(r.out, "service api-1234"));
    PP_CHECK_STR(s.service, "api-1234"); /* the file name without .pb.gz */
    PP_CHECK_STR(s.label, "env=test");
    PP_CHECK_INT(s.pprof_len, ==, raw_len); /* the wire carries it uncompressed */
  }
  unlink(sock);
  if (sidecar_start(&s, sock, true) == 0) {
    RUN(&r, "push", "--socket", sock, "--service", "svc", file);
    sidecar_stop(&s);
    PP_CHECK_INT(r.status, ==, 1);
    PP_CHECK(strstr(r.err, "refused") && strstr(r.err, "RESOURCE_EXHAUSTED: spool full"));
    PP_CHECK_STR(s.service, "svc");
  }
  temp_dir_remove(dir);
}

int main(void) {
  PP_RUN(test_main_usage_version_and_unknown_command);
  PP_RUN(test_main_push_refuses_bad_usage_and_files);
  PP_RUN(test_main_push_without_a_sidecar_exits_3);
  PP_RUN(test_main_push_acked_and_refused);
  PP_DONE();
}
