/* Unit tests for sidecar/exporters/exporter_file.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exporter.h"
#include "fsutil.h"
#include "pp_test.h"

static char root[64];

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static void setup(void) {
  pp_test_mkdtemp(root, sizeof root, "test-exp");
}

static void teardown(void) {
  nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static int count_objects(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return -1;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

static exporter *make(int max_retained) {
  char url[PATH_MAX + 16], err[512] = "";
  snprintf(url, sizeof url, "file://%s/out", root);
  exporter_options o = {.max_dumps_retained = max_retained};
  exporter *ex = exporter_create(url, &o, err, sizeof err);
  if (!ex)
    fprintf(stderr, "exporter_create: %s\n", err);
  return ex;
}

static export_object obj_for(const char *service, const char *hash, int64_t start_ns) {
  static const uint8_t data[] = {0x1f, 0x8b, 1, 2, 3};
  export_object o = {.service = service,
                     .node = "node-1",
                     .subdir = "",
                     .start_ns = start_ns,
                     .end_ns = start_ns + 1,
                     .data = data,
                     .len = sizeof data,
                     .content_hash = hash};
  return o;
}

static void test_put_writes_object_under_node_and_service(void) {
  setup();
  exporter *ex = make(0);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  PP_CHECK_STR(ex->scheme, "file");
  char err[512] = "";
  /* 2026-11-22T10:00:00Z */
  export_object o = obj_for("api", "0123456789abcdef0123", 1795341600LL * 1000000000LL);
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/out/node-1/api/20261122T100000Z-0123456789abcdef.pb.gz", root);
  struct stat st;
  PP_CHECK_INT(stat(path, &st), ==, 0);
  PP_CHECK_INT(st.st_size, ==, 5);
  /* no temp file left behind */
  snprintf(path, sizeof path, "%s/out/node-1/api", root);
  DIR *d = opendir(path);
  PP_CHECK(d != NULL);
  struct dirent *de;
  while (d && (de = readdir(d)))
    PP_CHECK(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || de->d_name[0] != '.');
  if (d)
    closedir(d);
  /* subdir, nested */
  o.subdir = "team/prod";
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  snprintf(path, sizeof path, "%s/out/team/prod/node-1/api/20261122T100000Z-0123456789abcdef.pb.gz",
           root);
  PP_CHECK_INT(stat(path, &st), ==, 0);
  exporter_destroy(ex);
out:
  teardown();
}

static void test_put_keeps_hostile_names_inside_dir(void) {
  setup();
  exporter *ex = make(0);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  char err[512] = "";
  export_object o = obj_for("../../etc", "../../x", 1795341600LL * 1000000000LL);
  o.node = "..";
  o.subdir = "../../../tmp";
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/out/_/_/_/tmp/_/.._.._etc/20261122T100000Z-.._.._x.pb.gz", root);
  struct stat st;
  PP_CHECK_INT(stat(path, &st), ==, 0);
  /* Nothing appeared beside out/. */
  PP_CHECK_INT(count_objects(root), ==, 1);
  /* A symlink planted inside the export dir is not followed. */
  char link[PATH_MAX];
  snprintf(link, sizeof link, "%s/out/evil", root);
  PP_CHECK_INT(symlink("/tmp", link), ==, 0);
  o.subdir = "";
  o.node = "evil";
  o.service = "svc";
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_RETRY);
  PP_CHECK(strstr(err, "evil") != NULL);
  exporter_destroy(ex);
out:
  teardown();
}

static void test_max_dumps_retained_prunes_oldest(void) {
  setup();
  exporter *ex = make(2);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  char err[512], hash[32];
  for (int i = 0; i < 4; i++) {
    snprintf(hash, sizeof hash, "%016d", i);
    export_object o = obj_for("svc", hash, (1795341600LL + i) * 1000000000LL);
    PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  }
  char dir[256], path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/out/node-1/svc", root);
  PP_CHECK_INT(count_objects(dir), ==, 2);
  struct stat st;
  snprintf(path, sizeof path, "%s/20261122T100003Z-0000000000000003.pb.gz", dir);
  PP_CHECK_INT(stat(path, &st), ==, 0);
  snprintf(path, sizeof path, "%s/20261122T100000Z-0000000000000000.pb.gz", dir);
  PP_CHECK_INT(stat(path, &st), ==, -1);
  exporter_destroy(ex);
out:
  teardown();
}

/* A CPU batch and a heap batch of one service and second land under two
 * names a reader tells apart; each type is pruned on its own. */
static void test_heap_and_cpu_batches_have_their_own_names(void) {
  setup();
  exporter *ex = make(2);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  char err[512], hash[32], dir[256], path[PATH_MAX];
  struct stat st;
  for (int i = 0; i < 4; i++) {
    snprintf(hash, sizeof hash, "%016d", i);
    export_object o = obj_for("svc", hash, (1795341600LL + i) * 1000000000LL);
    o.profile_type = "";
    PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
    o.profile_type = "heap"; /* the same hash: only the type tells them apart */
    PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  }
  snprintf(dir, sizeof dir, "%s/out/node-1/svc", root);
  PP_CHECK_INT(count_objects(dir), ==, 4); /* the newest 2 of each */
  snprintf(path, sizeof path, "%s/20261122T100003Z-0000000000000003.pb.gz", dir);
  PP_CHECK_INT(stat(path, &st), ==, 0);
  snprintf(path, sizeof path, "%s/20261122T100003Z-heap-0000000000000003.pb.gz", dir);
  PP_CHECK_INT(stat(path, &st), ==, 0);
  snprintf(path, sizeof path, "%s/20261122T100002Z-heap-0000000000000002.pb.gz", dir);
  PP_CHECK_INT(stat(path, &st), ==, 0);
  snprintf(path, sizeof path, "%s/20261122T100001Z-heap-0000000000000001.pb.gz", dir);
  PP_CHECK_INT(stat(path, &st), ==, -1);
  exporter_destroy(ex);
out:
  teardown();
}

static void test_blocked_path_is_retry_with_reason(void) {
  setup();
  exporter *ex = make(0);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  /* A regular file where the node directory should be. */
  char p[PATH_MAX], err[512] = "";
  snprintf(p, sizeof p, "%s/out/node-1", root);
  int fd = open(p, O_WRONLY | O_CREAT, 0640);
  PP_CHECK(fd >= 0);
  if (fd >= 0)
    close(fd);
  export_object o = obj_for("svc", "abcd", 1795341600LL * 1000000000LL);
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_RETRY);
  PP_CHECK(strstr(err, "node-1") != NULL);
  PP_CHECK(strstr(err, "Not a directory") != NULL);
  PP_CHECK_INT(unlink(p), ==, 0);
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  exporter_destroy(ex);
out:
  teardown();
}

/* Faults for fsutil_write_uncached's fallbacks (linked with --wrap=fcntl
 * and --wrap=write, tests/sidecar_batch.cmake): a filesystem that refuses
 * O_DIRECT, and one that takes the flag but wants a stricter alignment
 * than 4 KiB (its writes fail with EINVAL). */
static bool refuse_direct, direct_write_einval;
static int direct_writes_refused; /* direct writes seen under direct_write_einval */
int __real_fcntl(int fd, int cmd, ...);
int __wrap_fcntl(int fd, int cmd, ...);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

int __wrap_fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void *arg = va_arg(ap, void *); /* as glibc's fcntl reads it */
  va_end(ap);
  if (refuse_direct && cmd == F_SETFL && ((long)(intptr_t)arg & O_DIRECT)) {
    errno = EINVAL;
    return -1;
  }
  return __real_fcntl(fd, cmd, arg);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n) {
  if (direct_write_einval && (__real_fcntl(fd, F_GETFL) & O_DIRECT)) {
    if (direct_writes_refused++ == 0 && n > 4096) /* one block written, then refused */
      return __real_write(fd, buf, 4096);
    errno = EINVAL;
    return -1;
  }
  return __real_write(fd, buf, n);
}

/* Pages of path's first npages that are in the page cache, -1 on error. */
static long resident_pages(const char *path, size_t npages) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t len = npages * FSUTIL_DIRECT_ALIGN;
  void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED)
    return -1;
  unsigned char *vec = calloc(npages, 1);
  long n = -1;
  if (vec && mincore(m, len, vec) == 0) {
    n = 0;
    for (size_t i = 0; i < npages; i++)
      n += vec[i] & 1;
  }
  free(vec);
  munmap(m, len);
  return n;
}

/* Exports data[0..len) as service's object hash (at 2026-11-22T10:00:00Z)
 * and gives its path. */
static void put_at(exporter *ex, const char *service, const char *hash, const uint8_t *data,
                   size_t len, char *path, size_t pathlen) {
  char err[512] = "";
  export_object o = obj_for(service, hash, 1795341600LL * 1000000000LL);
  o.data = data;
  o.len = len;
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  snprintf(path, pathlen, "%s/out/node-1/%s/20261122T100000Z-%s.pb.gz", root, service, hash);
}

/* path holds exactly data[0..len) (back: a buffer of len + 1 bytes). */
static void expect_file_bytes(const char *path, const uint8_t *data, size_t len, uint8_t *back) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  PP_CHECK(fd >= 0);
  ssize_t got = fd >= 0 ? read(fd, back, len + 1) : -1;
  PP_CHECK_INT(got, ==, (ssize_t)len);
  PP_CHECK(got == (ssize_t)len && memcmp(back, data, len) == 0);
  if (fd >= 0)
    close(fd);
}

/* Objects of every size against the 4 KiB blocks, from aligned buffers (a
 * payload as the batcher makes it) and unaligned ones: the same bytes on
 * disk either way. Where the filesystem takes O_DIRECT, an aligned
 * object's whole blocks are not left in the page cache. */
static void test_put_writes_aligned_objects_past_the_page_cache(void) {
  setup();
  exporter *ex = make(0);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  char probe[PATH_MAX];
  snprintf(probe, sizeof probe, "%s/probe", root);
  int pfd = open(probe, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  bool direct = pfd >= 0;
  if (pfd >= 0)
    close(pfd);
  else
    fprintf(stderr, "note: %s takes no O_DIRECT (%s): contents checked only\n", root,
            strerror(errno));
  static const size_t sizes[] = {1, 4095, 4096, 4097, 3 * 4096 + 17, (1u << 20) + 5};
  size_t big = (1u << 20) + 5 + 4096;
  uint8_t *buf = NULL, *back = malloc(big);
  PP_CHECK_INT(posix_memalign((void **)&buf, FSUTIL_DIRECT_ALIGN, big), ==, 0);
  PP_CHECK(back != NULL);
  if (!buf || !back)
    goto out_ex;
  for (size_t i = 0; i < big; i++)
    buf[i] = (uint8_t)(i * 131 + i / 4096);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    for (int aligned = 0; aligned < 2; aligned++) {
      char hash[32], path[PATH_MAX];
      snprintf(hash, sizeof hash, "%zu%c", sizes[k], aligned ? 'a' : 'u');
      const uint8_t *data = aligned ? buf : buf + 1;
      put_at(ex, "big", hash, data, sizes[k], path, sizeof path);
      size_t blocks = sizes[k] / FSUTIL_DIRECT_ALIGN;
      if (aligned && direct && blocks)
        PP_CHECK_INT(resident_pages(path, blocks), ==, 0);
      expect_file_bytes(path, data, sizes[k], back);
    }
  }
out_ex:
  free(buf);
  free(back);
  exporter_destroy(ex);
out:
  teardown();
}

/* Where O_DIRECT is refused (at the flag, or at the write for a stricter
 * alignment), the object is written whole through the page cache: the
 * same bytes, and its pages cached. */
static void test_put_falls_back_to_the_cache_without_o_direct(void) {
  setup();
  exporter *ex = make(0);
  PP_CHECK(ex != NULL);
  size_t len = 5 * 4096 + 123;
  uint8_t *buf = NULL, *back = malloc(len + 1);
  PP_CHECK_INT(posix_memalign((void **)&buf, FSUTIL_DIRECT_ALIGN, len), ==, 0);
  if (!ex || !buf || !back)
    goto out;
  for (size_t i = 0; i < len; i++)
    buf[i] = (uint8_t)(i * 7 + 3);
  for (int mode = 0; mode < 2; mode++) {
    refuse_direct = mode == 0;
    direct_write_einval = mode == 1;
    direct_writes_refused = 0;
    char hash[16], path[PATH_MAX];
    snprintf(hash, sizeof hash, "fallback%d", mode);
    put_at(ex, "fb", hash, buf, len, path, sizeof path);
    refuse_direct = direct_write_einval = false;
    if (mode == 1) /* a short write, then the refusal */
      PP_CHECK_INT(direct_writes_refused, ==, 2);
    PP_CHECK_INT(resident_pages(path, len / 4096), ==, (long)(len / 4096));
    expect_file_bytes(path, buf, len, back);
  }
out:
  free(buf);
  free(back);
  if (ex)
    exporter_destroy(ex);
  teardown();
}

/* An export directory the sidecar may not write to (mode 0500) is a retry
 * whose reason says why; writable again, the same put succeeds. */
static void write_error_is_retry_with_reason(void) {
  setup();
  exporter *ex = make(0);
  PP_CHECK(ex != NULL);
  if (!ex)
    goto out;
  char dir[PATH_MAX], err[512] = "";
  snprintf(dir, sizeof dir, "%s/out", root);
  PP_CHECK_INT(chmod(dir, 0500), ==, 0);
  export_object o = obj_for("svc", "abcd", 1795341600LL * 1000000000LL);
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_RETRY);
  PP_CHECK(strstr(err, "Permission denied") != NULL);
  PP_CHECK_INT(chmod(dir, 0750), ==, 0);
  PP_CHECK_INT(ex->put(ex, &o, err, sizeof err), ==, EXPORT_OK);
  exporter_destroy(ex);
out:
  teardown();
}

/* Root ignores directory modes, so as root (CI) the case runs in a child
 * that dropped to nobody (uid and gid 65534, no supplementary groups): its
 * exit status is 0 if every check passed, 1 if one failed (printed there),
 * 77 if it could not drop. */
static void test_write_error_is_retry_with_reason(void) {
  if (geteuid() != 0) {
    write_error_is_retry_with_reason();
    return;
  }
  fflush(stderr);
  pid_t pid = fork();
  PP_CHECK(pid >= 0);
  if (pid < 0)
    return;
  if (pid == 0) {
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
      fprintf(stderr, "cannot drop to uid 65534: %s\n", strerror(errno));
      _exit(77);
    }
    int before = pp_test_failures;
    write_error_is_retry_with_reason();
    _exit(pp_test_failures == before ? 0 : 1);
  }
  int st = 0;
  PP_CHECK_INT(waitpid(pid, &st, 0), ==, pid);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
    PP_SKIP("root ignores directory modes and cannot drop to uid 65534");
  PP_CHECK(WIFEXITED(st));
  PP_CHECK_INT(WEXITSTATUS(st), ==, 0);
}

int main(void) {
  PP_RUN(test_put_writes_object_under_node_and_service);
  PP_RUN(test_put_keeps_hostile_names_inside_dir);
  PP_RUN(test_max_dumps_retained_prunes_oldest);
  PP_RUN(test_heap_and_cpu_batches_have_their_own_names);
  PP_RUN(test_blocked_path_is_retry_with_reason);
  PP_RUN(test_put_writes_aligned_objects_past_the_page_cache);
  PP_RUN(test_put_falls_back_to_the_cache_without_o_direct);
  PP_RUN(test_write_error_is_retry_with_reason);
  PP_DONE();
}
