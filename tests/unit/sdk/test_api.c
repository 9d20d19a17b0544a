/* The public API's contract on the static library: every return code each
 * call documents in pushprof.h, the profile written by pushprof_stop,
 * strerror and version. Failures are provoked for real: a fake sidecar on a
 * Unix socket (acks, refuses or stays silent), allocation failures through
 * -Wl,--wrap (malloc, calloc, realloc), and resource limits. Cases that
 * leave an SDK thread busy run in a child process (--case NAME).
 * PUSHPROF_ESETUID needs a setuid binary: it_sec_setuid_linked. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_test.h"
#include "pushprof.h"

static void spin_cpu(double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
  volatile uint64_t acc = 0;
  for (;;) {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 >= end)
      break;
    for (int i = 0; i < 10000; i++)
      acc += (uint64_t)i;
  }
}

/* ---- allocation failures: every malloc/calloc/realloc the SDK (and this
 * file) calls goes through these ---- */
static __thread int fail_here;     /* fail every allocation on this thread */
static atomic_int fail_everywhere; /* fail every allocation on any thread */
static atomic_size_t fail_nmemb;   /* fail calloc(fail_nmemb, ...) anywhere */

void *__real_malloc(size_t size);
void *__real_calloc(size_t nmemb, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void *__wrap_realloc(void *p, size_t size);

static int failing(void) {
  return fail_here || atomic_load(&fail_everywhere);
}
void *__wrap_malloc(size_t size) {
  return failing() ? NULL : __real_malloc(size);
}
void *__wrap_calloc(size_t nmemb, size_t size) {
  if (failing() || (nmemb != 0 && nmemb == atomic_load(&fail_nmemb)))
    return NULL;
  return __real_calloc(nmemb, size);
}
void *__wrap_realloc(void *p, size_t size) {
  return failing() ? NULL : __real_realloc(p, size);
}

/* ---- a fake sidecar: answers each push frame as told, one connection at a
 * time ---- */
enum fake_mode { FAKE_ACK, FAKE_REFUSE, FAKE_RETRY_LATER, FAKE_SILENT };
static struct {
  int fd;
  _Atomic(enum fake_mode) mode;
  char path[108];
  pthread_t thread;
} fake;

static int read_full(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* A PushReply frame: code (field 1) and reason (field 2), as protobuf. */
static void fake_reply(int fd, int code) {
  static const char reason[] = "test_api's fake sidecar says no";
  uint8_t f[12 + 4 + sizeof reason];
  size_t n = 0;
  uint8_t *pl = f + 12;
  pl[n++] = 0x08;
  pl[n++] = (uint8_t)code;
  if (code != 0) {
    pl[n++] = 0x12;
    pl[n++] = (uint8_t)(sizeof reason - 1);
    memcpy(pl + n, reason, sizeof reason - 1);
    n += sizeof reason - 1;
  }
  memcpy(f, "PPRF\0\1\0\2", 8);
  f[8] = 0;
  f[9] = 0;
  f[10] = (uint8_t)(n >> 8);
  f[11] = (uint8_t)n;
  /* As the real sidecar does: a client may be gone (a no_samples push does
   * not wait for the answer), which must not be a SIGPIPE. */
  ssize_t w = send(fd, f, 12 + n, MSG_NOSIGNAL);
  (void)w;
}

static void *fake_main(void *arg) {
  (void)arg;
  int c;
  while ((c = accept(fake.fd, NULL, NULL)) >= 0) {
    uint8_t h[12];
    if (read_full(c, h, sizeof h) == 0) {
      uint32_t len = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
      uint8_t *payload = __real_malloc(len ? len : 1);
      if (payload && read_full(c, payload, len) == 0) {
        if (fake.mode == FAKE_ACK)
          fake_reply(c, 0);
        else if (fake.mode == FAKE_REFUSE)
          fake_reply(c, 3); /* INVALID_PPROF: refused for good */
        else if (fake.mode == FAKE_RETRY_LATER)
          fake_reply(c, 4); /* RESOURCE_EXHAUSTED: retry later */
      }
      free(payload);
    }
    if (fake.mode == FAKE_SILENT) {
      /* A hung sidecar, for a second: longer than the test's deadlines, short
       * enough that the SDK's pusher is free again for the next step. */
      struct pollfd pfd = {.fd = c, .events = POLLIN};
      poll(&pfd, 1, 1000);
    }
    close(c);
  }
  return NULL;
}

static void fake_start(enum fake_mode mode) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(fake.path, sizeof fake.path, "/tmp/pushprof-test-api-%ld.sock", (long)getpid());
  memcpy(a.sun_path, fake.path, strlen(fake.path) + 1);
  unlink(fake.path);
  fake.mode = mode;
  fake.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  PP_CHECK(fake.fd >= 0);
  PP_CHECK_INT(bind(fake.fd, (struct sockaddr *)&a, sizeof a), ==, 0);
  PP_CHECK_INT(listen(fake.fd, 16), ==, 0);
  PP_CHECK_INT(pthread_create(&fake.thread, NULL, fake_main, NULL), ==, 0);
}

static void fake_stop(void) {
  shutdown(fake.fd, SHUT_RDWR); /* accept() returns: the thread ends */
  pthread_join(fake.thread, NULL);
  close(fake.fd);
  unlink(fake.path);
}

/* pushprof_options for the fake sidecar: short timeouts, nothing spooled. */
static pushprof_options push_opts(const char *socket_path) {
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.socket_path = socket_path;
  o.upload_period_s = 3600; /* only the pushes the test asks for */
  o.exit_timeout_ms = 600;
  return o;
}

static void test_api_stop_before_start_says_not_started(void) {
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
  PP_CHECK_INT(pushprof_thread_register(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_rejects_invalid_options_and_stays_off(void) {
  pushprof_options o = {.hz = 100000, .output_path = "/tmp/never"};
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  o = (pushprof_options){.signal_number = SIGKILL, .output_path = "/tmp/never"};
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  o = (pushprof_options){.hz = 100}; /* nowhere to write */
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_start_stop_writes_the_profile(void) {
  char tmpl[] = "/tmp/pushprof-test-api.XXXXXX";
  char path[128];
  PP_CHECK(mkdtemp(tmpl) != NULL);
  snprintf(path, sizeof path, "%s/p-%%p.pb.gz", tmpl);
  pushprof_options o = {.hz = 200, .output_path = path};
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EALREADY);
  PP_CHECK_INT(pushprof_thread_register(), ==, 0);
  PP_CHECK_INT(pushprof_thread_register(), ==, 0); /* idempotent */
  spin_cpu(0.1);
  PP_CHECK_INT(pushprof_stop(), ==, 0);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
  char written[160];
  snprintf(written, sizeof written, "%s/p-%ld.pb.gz", tmpl, (long)getpid());
  struct stat st;
  PP_CHECK_INT(stat(written, &st), ==, 0);
  PP_CHECK(st.st_size > 20);
  FILE *f = fopen(written, "rb");
  unsigned char magic[2] = {0, 0};
  PP_CHECK(f != NULL);
  if (f) {
    PP_CHECK_INT(fread(magic, 1, 2, f), ==, 2);
    fclose(f);
  }
  PP_CHECK_INT(magic[0], ==, 0x1f); /* gzip */
  PP_CHECK_INT(magic[1], ==, 0x8b);
  unlink(written);
  rmdir(tmpl);
}

static void test_api_can_start_again_after_stop(void) {
  char tmpl[] = "/tmp/pushprof-test-api2.XXXXXX";
  char path[128], written[160];
  PP_CHECK(mkdtemp(tmpl) != NULL);
  snprintf(path, sizeof path, "%s/again.pb.gz", tmpl);
  snprintf(written, sizeof written, "%s", path);
  pushprof_options o = {.hz = 100, .output_path = path};
  for (int round = 0; round < 2; round++) {
    unlink(written);
    PP_CHECK_INT(pushprof_start(&o), ==, 0);
    spin_cpu(0.05);
    PP_CHECK_INT(pushprof_stop(), ==, 0);
    struct stat st;
    PP_CHECK_INT(stat(written, &st), ==, 0);
  }
  unlink(written);
  rmdir(tmpl);
}

/* Child mode (test_api --exit-child PATH): profile, then exit(7) with the
 * profile still running, so the exit handler writes it. */
static int exit_child(const char *path) {
  pushprof_options o = {.hz = 100, .output_path = path};
  if (pushprof_start(&o) != 0)
    return 99;
  spin_cpu(0.05);
  exit(7);
}

/* Standalone mode: a process that exits while profiling writes its profile
 * from the exit handler and keeps its exit status. A fresh process
 * (posix_spawn of this binary, no fork handlers) runs the child mode. */
static void test_api_exit_writes_the_profile_and_keeps_the_status(void) {
  char tmpl[] = "/tmp/pushprof-test-api3.XXXXXX";
  char path[128], written[160];
  PP_CHECK(mkdtemp(tmpl) != NULL);
  snprintf(path, sizeof path, "%s/exit-%%p.pb.gz", tmpl);
  char *argv[] = {"test_api", "--exit-child", path, NULL};
  pid_t child = -1;
  PP_CHECK_INT(posix_spawn(&child, "/proc/self/exe", NULL, NULL, argv, environ), ==, 0);
  int status = 0;
  PP_CHECK_INT(waitpid(child, &status, 0), ==, child);
  PP_CHECK(WIFEXITED(status));
  PP_CHECK_INT(WEXITSTATUS(status), ==, 7);
  snprintf(written, sizeof written, "%s/exit-%ld.pb.gz", tmpl, (long)child);
  struct stat st;
  PP_CHECK_INT(stat(written, &st), ==, 0);
  PP_CHECK(st.st_size > 20);
  unlink(written);
  rmdir(tmpl);
}

/* ---- pushprof_start ---- */

static void test_api_start_econfig_for_an_invalid_variable(void) {
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/tmp/never";
  setenv("PUSHPROF_HZ", "fast", 1);
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_ECONFIG);
  unsetenv("PUSHPROF_HZ");
  setenv("PUSHPROF_LABELS", "no-equals-sign", 1);
  o = push_opts("/tmp/pushprof-test-api-none.sock");
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_ECONFIG);
  unsetenv("PUSHPROF_LABELS");
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_start_einval_for_a_bad_struct_size(void) {
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/tmp/never";
  o.reserved0 = 1; /* a field this library does not know */
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_start_enomem_when_the_backlog_cannot_be_allocated(void) {
  pushprof_options o = push_opts("/tmp/pushprof-test-api-none.sock");
  o.backlog = 777;
  atomic_store(&fail_nmemb, 777); /* the backlog's calloc(777, ...) */
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_ENOMEM);
  atomic_store(&fail_nmemb, 0);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

/* No file descriptor left: the pusher's pipe cannot be made. */
static void case_start_esys_without_file_descriptors(void) {
  struct rlimit rl;
  PP_CHECK_INT(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
  int top = open("/dev/null", O_RDONLY);
  PP_CHECK(top >= 0);
  struct rlimit tight = {.rlim_cur = (rlim_t)top, .rlim_max = rl.rlim_max};
  PP_CHECK_INT(setrlimit(RLIMIT_NOFILE, &tight), ==, 0);
  pushprof_options o = push_opts("/tmp/pushprof-test-api-none.sock");
  PP_CHECK_INT(pushprof_start(&o), ==, PUSHPROF_ESYS);
  PP_CHECK_INT(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

/* ---- pushprof_stop, standalone ---- */

static void test_api_stop_esys_when_the_file_cannot_be_written(void) {
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/nonexistent-pushprof-test-dir/p.pb.gz";
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ESYS);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
}

static void test_api_stop_einval_when_the_temporary_path_is_too_long(void) {
  static char path[PATH_MAX];
  memset(path, 'a', sizeof path - 4); /* fits; plus ".tmp.<pid>" does not */
  path[0] = '/';
  path[sizeof path - 4] = '\0';
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = path;
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_EINVAL);
}

static void test_api_stop_enomem_when_the_profile_cannot_be_built(void) {
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/tmp/pushprof-test-api-never.pb.gz";
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  spin_cpu(0.05);
  fail_here = 1; /* the final cut runs on this thread */
  int rc = pushprof_stop();
  fail_here = 0;
  PP_CHECK_INT(rc, ==, PUSHPROF_ENOMEM);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ENOTSTARTED);
  unlink(o.output_path);
}

/* ---- pushprof_flush and pushprof_stop with a sidecar ---- */

static void test_api_flush_estandalone_without_a_sidecar(void) {
  PP_CHECK_INT(pushprof_flush(100), ==, PUSHPROF_ENOTSTARTED);
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/tmp/pushprof-test-api-standalone.pb.gz";
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  PP_CHECK_INT(pushprof_flush(100), ==, PUSHPROF_ESTANDALONE);
  PP_CHECK_INT(pushprof_stop(), ==, 0);
  PP_CHECK_INT(pushprof_flush(100), ==, PUSHPROF_ENOTSTARTED);
  unlink(o.output_path);
}

static void case_flush_ok_einval_enomem_with_an_acking_sidecar(void) {
  fake_start(FAKE_ACK);
  pushprof_options o = push_opts(fake.path);
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  spin_cpu(0.05);
  PP_CHECK_INT(pushprof_flush(-1), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_flush(5000), ==, PUSHPROF_OK);
  atomic_store(&fail_everywhere, 1); /* the pusher's cut cannot allocate */
  int rc = pushprof_flush(5000);
  atomic_store(&fail_everywhere, 0);
  PP_CHECK_INT(rc, ==, PUSHPROF_ENOMEM);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_OK);
  fake_stop();
}

static void case_flush_and_stop_eunavailable_without_a_listener(void) {
  pushprof_options o = push_opts("/tmp/pushprof-test-api-none.sock");
  unlink(o.socket_path);
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  spin_cpu(0.05);
  PP_CHECK_INT(pushprof_flush(2000), ==, PUSHPROF_EUNAVAILABLE);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_EUNAVAILABLE);
}

static void case_flush_and_stop_erefused(void) {
  fake_start(FAKE_REFUSE);
  pushprof_options o = push_opts(fake.path);
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  spin_cpu(0.05);
  PP_CHECK_INT(pushprof_flush(2000), ==, PUSHPROF_EREFUSED);
  fake.mode = FAKE_RETRY_LATER; /* refused for now: kept, not acknowledged */
  spin_cpu(0.05);
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_EREFUSED);
  fake_stop();
}

static void case_flush_and_stop_etimedout_with_a_silent_sidecar(void) {
  fake_start(FAKE_SILENT);
  pushprof_options o = push_opts(fake.path);
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  spin_cpu(0.05);
  PP_CHECK_INT(pushprof_flush(300), ==, PUSHPROF_ETIMEDOUT);
  usleep(1200 * 1000); /* the pusher's send ends when the fake lets go */
  PP_CHECK_INT(pushprof_stop(), ==, PUSHPROF_ETIMEDOUT);
  fake_stop();
}

/* ---- pushprof_thread_register ---- */

#define MANY_THREADS 4200 /* more than the 4096 pushprof.h documents */
static pthread_barrier_t many_barrier;
static atomic_int many_ok, many_elimit, many_other;

static void *register_and_wait(void *arg) {
  (void)arg;
  int rc = pushprof_thread_register();
  atomic_fetch_add(rc == 0 ? &many_ok : rc == PUSHPROF_ELIMIT ? &many_elimit : &many_other, 1);
  pthread_barrier_wait(&many_barrier);
  return NULL;
}

static void case_thread_register_elimit_past_the_thread_table(void) {
#if defined(__SANITIZE_THREAD__)
  PP_SKIP("under TSan (4200 threads)");
#endif
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/tmp/pushprof-test-api-many.pb.gz";
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  static pthread_t t[MANY_THREADS];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  int made = 0;
  PP_CHECK_INT(pthread_barrier_init(&many_barrier, NULL, MANY_THREADS + 1), ==, 0);
  for (; made < MANY_THREADS; made++)
    if (pthread_create(&t[made], &attr, register_and_wait, NULL) != 0)
      break;
  PP_CHECK_INT(made, ==, MANY_THREADS);
  if (made == MANY_THREADS) {
    pthread_barrier_wait(&many_barrier);
    for (int i = 0; i < made; i++)
      pthread_join(t[i], NULL);
  }
  pthread_attr_destroy(&attr);
  PP_CHECK(atomic_load(&many_elimit) > 0);
  PP_CHECK(atomic_load(&many_ok) > 0);
  PP_CHECK_INT(atomic_load(&many_other), ==, 0);
  fprintf(stderr, "  %d threads: %d registered, %d ELIMIT\n", made, atomic_load(&many_ok),
          atomic_load(&many_elimit));
  PP_CHECK_INT(pushprof_stop(), ==, 0);
  unlink(o.output_path);
}

/* Not on the main thread's stack: the SDK's handler copies stack words
 * while it samples, which TSan would report against the thread's write. */
static atomic_int register_rc = 1;

static void *register_once(void *arg) {
  (void)arg;
  atomic_store(&register_rc, pushprof_thread_register());
  return NULL;
}

/* Per-thread CPU timers count against RLIMIT_SIGPENDING: at 0 none can be made. */
static void case_thread_register_esys_when_no_timer_can_be_made(void) {
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = "/tmp/pushprof-test-api-sigpending.pb.gz";
  PP_CHECK_INT(pushprof_start(&o), ==, 0);
  struct rlimit rl;
  PP_CHECK_INT(getrlimit(RLIMIT_SIGPENDING, &rl), ==, 0);
  struct rlimit none = {.rlim_cur = 0, .rlim_max = rl.rlim_max};
  PP_CHECK_INT(setrlimit(RLIMIT_SIGPENDING, &none), ==, 0);
  pthread_t t;
  PP_CHECK_INT(pthread_create(&t, NULL, register_once, NULL), ==, 0);
  pthread_join(t, NULL);
  PP_CHECK_INT(setrlimit(RLIMIT_SIGPENDING, &rl), ==, 0);
  PP_CHECK_INT(atomic_load(&register_rc), ==, PUSHPROF_ESYS);
  PP_CHECK_INT(pushprof_stop(), ==, 0);
  unlink(o.output_path);
}

/* ---- labels: ENOMEM when a thread's first label block cannot be made ---- */

static void *labels_without_memory(void *arg) {
  const pushprof_label_scope *scope = arg;
  fail_here = 1;
  int *rc = __real_malloc(2 * sizeof *rc);
  if (rc) {
    rc[0] = pushprof_label_set("k", "v");
    rc[1] = pushprof_labels_restore(scope);
  }
  fail_here = 0;
  return rc;
}

static void test_api_labels_enomem_without_memory_for_the_first_label(void) {
  pushprof_label_scope scope;
  PP_CHECK_INT(pushprof_label_set("route", "/a"), ==, 0);
  PP_CHECK_INT(pushprof_labels_save(&scope), ==, 0);
  PP_CHECK_INT(pushprof_labels_clear(), ==, 0);
  pthread_t t;
  void *ret = NULL;
  PP_CHECK_INT(pthread_create(&t, NULL, labels_without_memory, &scope), ==, 0);
  pthread_join(t, &ret);
  int *rc = ret;
  PP_CHECK(rc != NULL);
  if (rc) {
    PP_CHECK_INT(rc[0], ==, PUSHPROF_ENOMEM);
    PP_CHECK_INT(rc[1], ==, PUSHPROF_ENOMEM);
  }
  free(rc);
}

/* Cases run in a child process: they leave an SDK thread busy (a silent
 * sidecar), change process limits, or make thousands of threads. */
static const struct {
  const char *name;
  void (*fn)(void);
} child_cases[] = {
    {"start_esys", case_start_esys_without_file_descriptors},
    {"flush_ack", case_flush_ok_einval_enomem_with_an_acking_sidecar},
    {"unavailable", case_flush_and_stop_eunavailable_without_a_listener},
    {"refused", case_flush_and_stop_erefused},
    {"timedout", case_flush_and_stop_etimedout_with_a_silent_sidecar},
    {"elimit", case_thread_register_elimit_past_the_thread_table},
    {"register_esys", case_thread_register_esys_when_no_timer_can_be_made},
};

static int run_case(const char *name) {
  for (size_t i = 0; i < sizeof child_cases / sizeof child_cases[0]; i++)
    if (strcmp(child_cases[i].name, name) == 0) {
      child_cases[i].fn();
      return pp_test_failures ? 1 : 0;
    }
  fprintf(stderr, "test_api: no case %s\n", name);
  return 2;
}

static void in_child(const char *name) {
  char *argv[] = {"test_api", "--case", (char *)name, NULL};
  pid_t child = -1;
  int status = 0;
  PP_CHECK_INT(posix_spawn(&child, "/proc/self/exe", NULL, NULL, argv, environ), ==, 0);
  PP_CHECK_INT(waitpid(child, &status, 0), ==, child);
  PP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "  case %s: status 0x%x\n", name, status);
}

#define CHILD_TEST(fn, name)                                                                       \
  static void fn(void) {                                                                           \
    in_child(name);                                                                                \
  }
CHILD_TEST(test_api_start_esys_without_file_descriptors, "start_esys")
CHILD_TEST(test_api_flush_ok_einval_enomem_with_an_acking_sidecar, "flush_ack")
CHILD_TEST(test_api_flush_and_stop_eunavailable_without_a_listener, "unavailable")
CHILD_TEST(test_api_flush_and_stop_erefused, "refused")
CHILD_TEST(test_api_flush_and_stop_etimedout_with_a_silent_sidecar, "timedout")
CHILD_TEST(test_api_thread_register_elimit_past_the_thread_table, "elimit")
CHILD_TEST(test_api_thread_register_esys_when_no_timer_can_be_made, "register_esys")

static void test_api_strerror_names_every_code(void) {
  for (int code = 0; code >= PUSHPROF_ESTANDALONE; code--) {
    const char *s = pushprof_strerror(code);
    PP_CHECK(s != NULL && s[0] != '\0');
    PP_CHECK(strcmp(s, pushprof_strerror(-999)) != 0);
    for (int other = code + 1; other <= 0; other++)
      PP_CHECK(strcmp(s, pushprof_strerror(other)) != 0);
  }
  PP_CHECK(pushprof_strerror(12345) != NULL);
}

static void test_api_version_matches_the_header(void) {
  PP_CHECK_STR(pushprof_version(), PUSHPROF_VERSION_STRING);
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", PUSHPROF_VERSION_MAJOR, PUSHPROF_VERSION_MINOR,
           PUSHPROF_VERSION_PATCH);
  PP_CHECK_STR(pushprof_version(), v);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--exit-child") == 0)
    return exit_child(argv[2]);
  if (argc == 3 && strcmp(argv[1], "--case") == 0)
    return run_case(argv[2]);
  PP_RUN(test_api_stop_before_start_says_not_started);
  PP_RUN(test_api_rejects_invalid_options_and_stays_off);
  PP_RUN(test_api_start_stop_writes_the_profile);
  PP_RUN(test_api_can_start_again_after_stop);
  PP_RUN(test_api_exit_writes_the_profile_and_keeps_the_status);
  PP_RUN(test_api_start_econfig_for_an_invalid_variable);
  PP_RUN(test_api_start_einval_for_a_bad_struct_size);
  PP_RUN(test_api_start_enomem_when_the_backlog_cannot_be_allocated);
  PP_RUN(test_api_start_esys_without_file_descriptors);
  PP_RUN(test_api_stop_esys_when_the_file_cannot_be_written);
  PP_RUN(test_api_stop_einval_when_the_temporary_path_is_too_long);
  PP_RUN(test_api_stop_enomem_when_the_profile_cannot_be_built);
  PP_RUN(test_api_flush_estandalone_without_a_sidecar);
  PP_RUN(test_api_flush_ok_einval_enomem_with_an_acking_sidecar);
  PP_RUN(test_api_flush_and_stop_eunavailable_without_a_listener);
  PP_RUN(test_api_flush_and_stop_erefused);
  PP_RUN(test_api_flush_and_stop_etimedout_with_a_silent_sidecar);
  PP_RUN(test_api_thread_register_elimit_past_the_thread_table);
  PP_RUN(test_api_thread_register_esys_when_no_timer_can_be_made);
  PP_RUN(test_api_labels_enomem_without_memory_for_the_first_label);
  PP_RUN(test_api_strerror_names_every_code);
  PP_RUN(test_api_version_matches_the_header);
  PP_DONE();
}
