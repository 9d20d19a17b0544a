/* file:///DIR: each batch becomes
 *   DIR/<subdir...>/<node>/<service>/<UTC start time>-<hash prefix>.pb.gz
 * written as a dot temp file, fsync'ed, renamed, and the directory fsync'ed.
 * Every segment goes through exporter_sanitize and directories are walked
 * with openat(O_NOFOLLOW), so neither names nor symlinks lead outside DIR.
 * URL form: only absolute paths, "file:///abs/dir" or "file://localhost/abs/dir"
 * (RFC 8089); "file://rel/dir" would name a host, so it is refused rather than
 * guessed at. %XX escapes in the path are decoded. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exporter.h"
#include "exporter_backends.h"
#include "fsutil.h"
#include "log.h"
#include "pp_hex.h"
#include "pp_vec.h"

#define SEG_MAX 256

typedef struct file_exporter {
  exporter base;
  char *root;
  int rootfd;
  int max_retained;
} file_exporter;

/* "file:///a%20b" -> "/a b". 0 or -1 with err. */
static int parse_file_url(const char *url, char *out, size_t outlen, char *err, size_t errlen) {
  const char *p = url + strlen("file://");
  if (strncasecmp(p, "localhost/", 10) == 0)
    p += 9;
  if (*p != '/') {
    snprintf(
        err, errlen,
        "export URL \"%.200s\" does not name an absolute directory (write file:///ABSOLUTE/DIR)",
        url);
    return -1;
  }
  size_t o = 0;
  for (; *p; p++) {
    char c = *p;
    if (c == '%') {
      int hi = pp_hexval(p[1]), lo = hi >= 0 ? pp_hexval(p[2]) : -1;
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
        snprintf(err, errlen, "export URL \"%.200s\" has a bad %%-escape (write %%XX, not %%00)",
                 url);
        return -1;
      }
      c = (char)(hi * 16 + lo);
      p += 2;
    } else if (c == '?' || c == '#') {
      snprintf(err, errlen, "export URL \"%.200s\": file:// takes no query or fragment", url);
      return -1;
    }
    if (o + 1 >= outlen) {
      snprintf(err, errlen, "export URL \"%.200s\": path too long", url);
      return -1;
    }
    out[o++] = c;
  }
  while (o > 1 && out[o - 1] == '/')
    o--;
  out[o] = '\0';
  return 0;
}

/* Opens (creating if needed) the directory seg below dfd, never following a
 * symlink. Returns a new fd or -1. */
static int open_subdir(int dfd, const char *seg) {
  if (mkdirat(dfd, seg, 0750) == 0) {
    /* A new directory's entry must be durable before objects in it count. */
    if (fsync(dfd) != 0)
      return -1;
  } else if (errno != EEXIST) {
    return -1;
  }
  return openat(dfd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_object_name(const char *n) {
  size_t l = strlen(n);
  return n[0] != '.' && l > 6 && strcmp(n + l - 6, ".pb.gz") == 0;
}

/* The profile type in an object's name (exporter_object_name): "" for
 * "<time>-<hash>.pb.gz", "heap" for "<time>-heap-<hash>.pb.gz". */
static void name_type(const char *n, char *out, size_t outlen) {
  const char *a = strchr(n, '-'), *b = a ? strchr(a + 1, '-') : NULL;
  size_t l = b ? (size_t)(b - a - 1) : 0;
  snprintf(out, outlen, "%.*s", (int)(l < outlen ? l : outlen - 1), b ? a + 1 : "");
}

/* Keeps the newest max objects of the profile type of name in dfd (names
 * start with the UTC time, so name order is age order): CPU and heap
 * profiles of a service are kept max each. */
static void prune(int dfd, const char *path, int max, const char *name) {
  char type[64], t[64];
  name_type(name, type, sizeof type);
  int fd = dup(dfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  char **names = NULL;
  size_t n = 0, cap = 0;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!is_object_name(de->d_name))
      continue;
    name_type(de->d_name, t, sizeof t);
    if (strcmp(t, type) != 0)
      continue;
    if (pp_vec_grow(&names, &cap, n + 1, sizeof *names, 16) != 0)
      goto out;
    if (!(names[n] = strdup(de->d_name)))
      goto out;
    n++;
  }
  if (n > (size_t)max) {
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n - (size_t)max; i++) {
      if (unlinkat(dfd, names[i], 0) == 0) {
        log_event(LOG_INFO, "pruned old export", "file=%s/%s max_dumps_retained=%d", path, names[i],
                  max);
      } else {
        char q[128];
        log_event(LOG_WARN, "cannot prune old export", "file=%s/%s err=%s", path, names[i],
                  log_quote(strerror(errno), q, sizeof q));
      }
    }
  }
out:
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  closedir(d);
}

static int file_put(exporter *ex, const export_object *obj, char *err, size_t errlen) {
  file_exporter *fe = ex->impl;
  char path[PATH_MAX], seg[SEG_MAX] = "", name[128] = "", tmp[160] = "";
  int dfd = -1, fd = -1, rc = EXPORT_RETRY;
  size_t plen;
  const char *stage = "open directory";

  plen = (size_t)snprintf(path, sizeof path, "%s", fe->root);
  dfd = dup(fe->rootfd);
  if (dfd < 0)
    goto fail;

  /* subdir may be nested ("team/prod"): sanitize each component. */
  const char *sub = obj->subdir ? obj->subdir : "";
  while (*sub) {
    const char *slash = strchr(sub, '/');
    size_t l = slash ? (size_t)(slash - sub) : strlen(sub);
    if (l > 0) {
      char raw[SEG_MAX];
      snprintf(raw, sizeof raw, "%.*s", (int)(l < SEG_MAX - 1 ? l : SEG_MAX - 1), sub);
      exporter_sanitize(raw, seg, sizeof seg);
      int nfd = open_subdir(dfd, seg);
      if (nfd < 0)
        goto fail_path;
      close(dfd);
      dfd = nfd;
      plen +=
          (size_t)snprintf(path + plen, plen < sizeof path ? sizeof path - plen : 0, "/%s", seg);
    }
    sub += l;
    while (*sub == '/')
      sub++;
  }
  const char *segs[2] = {obj->node, obj->service};
  for (int i = 0; i < 2; i++) {
    exporter_sanitize(segs[i], seg, sizeof seg);
    int nfd = open_subdir(dfd, seg);
    if (nfd < 0)
      goto fail_path;
    close(dfd);
    dfd = nfd;
    if (plen < sizeof path)
      plen += (size_t)snprintf(path + plen, sizeof path - plen, "/%s", seg);
  }

  if (exporter_object_name(obj, name, sizeof name) != 0) {
    snprintf(err, errlen, "start time %lld out of range", (long long)obj->start_ns);
    rc = EXPORT_PERMANENT;
    goto out;
  }
  snprintf(tmp, sizeof tmp, ".%s.tmp", name);

  stage = "create";
  fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0)
    goto fail;
  stage = "write";
  if (fsutil_write_uncached(fd, obj->data, obj->len) != 0)
    goto fail;
  stage = "fsync";
  if (fsync(fd) != 0)
    goto fail;
  stage = "close";
  int cfd = fd;
  fd = -1;
  if (close(cfd) != 0)
    goto fail;
  stage = "rename";
  if (renameat(dfd, tmp, dfd, name) != 0)
    goto fail;
  if (fsync(dfd) != 0) {
    /* The object is in place but maybe not durable: retrying rewrites it. */
    snprintf(err, errlen, "cannot fsync directory %s: %s", path, strerror(errno));
    goto out;
  }
  if (fe->max_retained > 0)
    prune(dfd, path, fe->max_retained, name);
  snprintf(err, errlen, "%s/%s", path, name); /* where it went, for the log */
  rc = EXPORT_OK;
  goto out;

fail_path:
  snprintf(err, errlen, "cannot create directory %s/%s: %s (check permissions and free space)",
           path, seg, strerror(errno));
  goto out;
fail:
  snprintf(err, errlen, "cannot %s %s/%s: %s (check free space and permissions of %s)", stage, path,
           tmp, strerror(errno), fe->root);
  if (dfd >= 0 && tmp[0])
    unlinkat(dfd, tmp, 0);
out:
  if (fd >= 0)
    close(fd);
  if (dfd >= 0)
    close(dfd);
  return rc;
}

static void file_destroy(exporter *ex) {
  file_exporter *fe = ex->impl;
  if (fe->rootfd >= 0)
    close(fe->rootfd);
  free(fe->root);
  free(fe);
}

exporter *exporter_file_create(const char *url, const exporter_options *opts, char *err,
                               size_t errlen) {
  char path[PATH_MAX];
  if (parse_file_url(url, path, sizeof path, err, errlen) != 0)
    return NULL;
  if (fsutil_mkdir_p(path) != 0) {
    snprintf(err, errlen, "cannot create export directory %s: %s (create it or fix --export)", path,
             strerror(errno));
    return NULL;
  }
  file_exporter *fe = calloc(1, sizeof *fe);
  if (!fe) {
    snprintf(err, errlen, "out of memory creating the file exporter");
    return NULL;
  }
  fe->rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fe->rootfd < 0) {
    snprintf(err, errlen, "cannot open export directory %s: %s (fix --export)", path,
             strerror(errno));
    goto fail;
  }
  if (faccessat(fe->rootfd, ".", W_OK, AT_EACCESS) != 0) {
    snprintf(err, errlen, "export directory %s is not writable: %s (fix its owner or mode)", path,
             strerror(errno));
    goto fail;
  }
  fe->root = strdup(path);
  if (!fe->root) {
    snprintf(err, errlen, "out of memory creating the file exporter");
    goto fail;
  }
  fe->max_retained = opts && opts->max_dumps_retained > 0 ? opts->max_dumps_retained : 0;
  fe->base.scheme = "file";
  fe->base.put = file_put;
  fe->base.destroy = file_destroy;
  fe->base.impl = fe;
  return &fe->base;
fail:
  if (fe->rootfd >= 0)
    close(fe->rootfd);
  free(fe);
  return NULL;
}
