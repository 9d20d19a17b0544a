/* No service, node, subdirectory or label value makes a path outside the
 * export directory or a key outside the bucket prefix: a table of hostile
 * values through exporter_object_key (S3/GCS) and the file exporter. */
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exporter.h"
#include "exporter_backends.h"
#include "pp_test.h"

static char long_a[8193], long_up[3 * 1000 + 1];

static const char *hostile[] = {"../",
                                "..",
                                ".",
                                "",
                                "/",
                                "//",
                                "/etc/passwd",
                                "../../../../etc/cron.d/x",
                                "..\\..\\win",
                                "%2e%2e",
                                "%2e%2e%2f",
                                "..%2f..%2f",
                                "%252e%252e",
                                "a/../../b",
                                "./././",
                                "\x01\x02",
                                "\n",
                                "line\r\nbreak",
                                "\x7f",
                                "\xff\xfe",
                                "\xc0\xae\xc0\xae",         /* overlong UTF-8 dots */
                                "\xe2\x88\x95",             /* U+2215 division slash */
                                "\xef\xbc\x8e\xef\xbc\x8e", /* fullwidth dots */
                                "\xe2\x80\xae",             /* right-to-left override */
                                "\xc3\xbcn\xc3\xaf"
                                "c\xc3\xb8"
                                "d\xc3\xa9",
                                "~",
                                "~root",
                                "-rf",
                                ".hidden",
                                "...",
                                " ",
                                "*",
                                "a\0../../b", /* a C string stops at the NUL: "a" */
                                long_a,
                                long_up};
#define N_HOSTILE (sizeof hostile / sizeof hostile[0])

static bool seg_ok(const char *s, size_t n) {
  if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* key = want_prefix + exactly `segs` more safe segments. */
static void check_key(const char *key, const char *want_prefix, int segs, size_t vi) {
  size_t pl = strlen(want_prefix);
  if (strncmp(key, want_prefix, pl) != 0) {
    fprintf(stderr, "value %zu: key %.120s is outside %s\n", vi, key, want_prefix);
    pp_test_failures++;
    return;
  }
  int n = 0;
  for (const char *s = key + pl; *s;) {
    size_t l = strcspn(s, "/");
    if (!seg_ok(s, l)) {
      fprintf(stderr, "value %zu: bad segment %.*s in %.120s\n", vi, (int)(l > 80 ? 80 : l), s,
              key);
      pp_test_failures++;
    }
    n++;
    s += l;
    if (*s == '/')
      s++;
  }
  if (n != segs) {
    fprintf(stderr, "value %zu: %d segments after %s in %.120s, want %d\n", vi, n, want_prefix, key,
            segs);
    pp_test_failures++;
  }
}

static export_object obj(const char *service, const char *node, const char *subdir) {
  static const uint8_t data[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  export_object o = {.service = service,
                     .node = node,
                     .subdir = subdir,
                     .start_ns = 1700000000LL * 1000000000LL,
                     .end_ns = 1700000001LL * 1000000000LL,
                     .data = data,
                     .len = sizeof data,
                     .content_hash = "0123456789abcdef0123456789abcdef"};
  return o;
}

static int parts(const char *v) {
  int n = 0;
  for (const char *s = v; *s;) {
    size_t l = strcspn(s, "/");
    n += l > 0;
    s += l;
    s += strspn(s, "/");
  }
  return n;
}

static void test_sec_names_object_key_stays_under_prefix(void) {
  char key[8192];
  for (size_t i = 0; i < N_HOSTILE; i++) {
    const char *v = hostile[i];
    export_object o = obj(v, "node-1", "");
    PP_CHECK_INT(exporter_object_key("team/prod", &o, key, sizeof key), ==, 0);
    check_key(key, "team/prod/node-1/", 2, i); /* service, file */
    o = obj("svc", v, "");
    PP_CHECK_INT(exporter_object_key("team/prod", &o, key, sizeof key), ==, 0);
    check_key(key, "team/prod/", 3, i); /* node, service, file */
    /* --bucket-subdirectory may be nested: each of its parts made safe. */
    o = obj("svc", "node-1", v);
    PP_CHECK_INT(exporter_object_key("team/prod", &o, key, sizeof key), ==, 0);
    check_key(key, "team/prod/", parts(v) + 3, i);
  }
}

/* A key that does not fit is refused, never cut short. */
static void test_sec_names_object_key_too_long_is_refused(void) {
  char key[64];
  export_object o = obj(long_a, "node-1", "");
  PP_CHECK_INT(exporter_object_key("team/prod", &o, key, sizeof key), ==, -1);
}

static char root[64];

static int n_files, n_outside;

/* Checks each entry below root (depth first), then removes it. */
static int check_and_remove(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)ftw;
  char out[80];
  snprintf(out, sizeof out, "%s/out/", root);
  if (flag == FTW_SL || S_ISLNK(st->st_mode)) {
    fprintf(stderr, "symlink %s\n", p);
    n_outside++;
  } else if (flag == FTW_F) {
    n_files++;
    if (strncmp(p, out, strlen(out)) != 0) {
      fprintf(stderr, "file outside the export directory: %s\n", p);
      n_outside++;
    }
  }
  return remove(p);
}

/* Child: chroot into root (so a value that escapes cannot reach the real
 * file system: it lands beside out/ and is caught), export every value.
 * Exit 0, 1 (a put failed) or 77 (cannot chroot: not root, no userns). */
static int export_all_chrooted(void) {
  if (chroot(root) != 0 && (unshare(CLONE_NEWUSER) != 0 || chroot(root) != 0)) {
    fprintf(stderr, "cannot chroot into %s: %s\n", root, strerror(errno));
    return 77;
  }
  if (chdir("/") != 0)
    return 1;
  char err[512] = "";
  exporter_options opts = {0};
  exporter *ex = exporter_create("file:///out", &opts, err, sizeof err);
  if (!ex) {
    fprintf(stderr, "exporter_create: %s\n", err);
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i < N_HOSTILE; i++) {
    /* One object per value and role; hashes differ so none overwrites another. */
    for (int role = 0; role < 3; role++) {
      char hash[33];
      snprintf(hash, sizeof hash, "%016zx%016x", i, role);
      export_object o = role == 0   ? obj(hostile[i], "node-1", "")
                        : role == 1 ? obj("svc", hostile[i], "")
                                    : obj("svc", "node-1", hostile[i]);
      o.content_hash = hash;
      err[0] = '\0';
      int rc = ex->put(ex, &o, err, sizeof err);
      if (rc != EXPORT_OK) {
        fprintf(stderr, "value %zu role %d: put %d: %s\n", i, role, rc, err);
        bad = 1;
      }
    }
  }
  exporter_destroy(ex);
  return bad;
}

static void test_sec_names_file_exporter_stays_inside(void) {
  snprintf(root, sizeof root, "/tmp/pp_test_secXXXXXX");
  PP_CHECK(mkdtemp(root) != NULL);
  fflush(stderr);
  pid_t pid = fork();
  PP_CHECK(pid >= 0);
  if (pid == 0)
    _exit(export_all_chrooted());
  int st = 0;
  PP_CHECK_INT(waitpid(pid, &st, 0), ==, pid);
  n_files = n_outside = 0;
  PP_CHECK_INT(nftw(root, check_and_remove, 16, FTW_DEPTH | FTW_PHYS), ==, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
    PP_SKIP("needs chroot (root or user namespaces)");
  PP_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  PP_CHECK_INT(n_outside, ==, 0);
  PP_CHECK_INT(n_files, ==, (int)N_HOSTILE * 3);
}

int main(void) {
  memset(long_a, 'a', sizeof long_a - 1);
  for (size_t i = 0; i + 3 < sizeof long_up; i += 3)
    memcpy(long_up + i, "../", 3);
  PP_RUN(test_sec_names_object_key_stays_under_prefix);
  PP_RUN(test_sec_names_object_key_too_long_is_refused);
  PP_RUN(test_sec_names_file_exporter_stays_inside);
  PP_DONE();
}
