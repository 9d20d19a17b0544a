/* Scans of the spool directory: every push file at start (spool_scan) and
 * the files SDKs dropped in since (spool_rescan_new), each read, checked
 * and handed to the callback, or quarantined. */
#include "spool_int.h"

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads a whole file below the spool dir (at most max bytes). */
static int read_file_at(int dfd, const char *name, uint64_t max, uint8_t **out, size_t *len,
                        char *why, size_t whylen) {
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), e = EIO;
  uint8_t *buf = NULL;
  struct stat st;
  if (fd < 0) {
    e = errno;
    snprintf(why, whylen, "cannot open: %s", strerror(e));
    errno = e;
    return -1;
  }
  if (fstat(fd, &st) != 0) {
    snprintf(why, whylen, "cannot stat: %s", strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "not a regular file");
    goto fail;
  }
  if ((uint64_t)st.st_size > max) {
    snprintf(why, whylen, "file of %lld bytes exceeds the frame limit", (long long)st.st_size);
    goto fail;
  }
  buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
  if (!buf) {
    snprintf(why, whylen, "out of memory");
    e = ENOMEM;
    goto fail;
  }
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      snprintf(why, whylen, "read error: %s", strerror(errno));
      goto fail;
    }
    if (r == 0)
      break; /* shrank under us: decode will find it torn */
    got += (size_t)r;
  }
  close(fd);
  *out = buf;
  *len = got;
  return 0;
fail:
  free(buf);
  close(fd);
  errno = e; /* only a failed open says ENOENT */
  return -1;
}

static uint32_t scan_frame_limit(const spool *s) {
  if (s->max_bytes && s->max_bytes < UINT32_MAX)
    return (uint32_t)s->max_bytes;
  return UINT32_MAX;
}

typedef struct found_file {
  char *name;
  uint64_t size;
  mode_t mode;
} found_file;

/* Lists *.push names in the spool dir without holding the lock (a big spool
 * must not stall puts), sorted. */
static found_file *list_spool_dir(spool *s, size_t *count) {
  found_file *v = NULL;
  size_t n = 0, cap = 0;
  int fd = dup(s->dirfd);
  DIR *d = NULL;
  *count = 0;
  if (fd < 0 || !(d = fdopendir(fd))) {
    char q[128];
    log_event(LOG_ERROR, "cannot list spool directory", "dir=%s err=%s", s->dir,
              log_quote(strerror(errno), q, sizeof q));
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  rewinddir(d);
  struct dirent *de;
  time_t now = time(NULL);
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    struct stat st;
    if (nm[0] == '.' && strstr(nm, PP_SPOOL_SUFFIX)) {
      /* A temp file this old was abandoned by a writer that died. */
      if (fstatat(s->dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
          now - st.st_mtime > ABANDONED_TEMP_S && unlinkat(s->dirfd, nm, 0) == 0)
        log_event(LOG_INFO, "removed abandoned spool temp file", "file=%s/%s", s->dir, nm);
      continue;
    }
    if (nm[0] == '.' || !spool_has_suffix(nm, PP_SPOOL_SUFFIX))
      continue;
    if (fstatat(s->dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
      continue; /* vanished, or a directory someone named *.push */
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 32;
      found_file *nv = realloc(v, ncap * sizeof *nv);
      if (!nv)
        break;
      v = nv;
      cap = ncap;
    }
    if (!(v[n].name = strdup(nm)))
      break;
    v[n].size = (uint64_t)st.st_size;
    v[n].mode = st.st_mode;
    n++;
  }
  closedir(d);
  *count = n;
  return v;
}

/* Claims the names not known yet (pending with their size) and returns them
 * sorted, oldest first. */
static char **claim_new(spool *s, size_t *count) {
  size_t nf = 0, n = 0;
  found_file *f = list_spool_dir(s, &nf);
  char **names = nf ? calloc(nf, sizeof *names) : NULL;
  *count = 0;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < nf && names; i++) {
    const char *nm = f[i].name;
    if (strlen(nm) < SPOOL_ID_MAX && (spool_set_has(&s->pending, nm) || spool_set_has(&s->bad, nm)))
      continue;
    if (!S_ISREG(f[i].mode)) {
      spool_quarantine_locked(s, nm, "not a regular file");
      continue;
    }
    if (strlen(nm) >= SPOOL_ID_MAX) {
      spool_quarantine_locked(s, nm, "file name too long for a spool id (max 63 bytes)");
      continue;
    }
    if (spool_set_insert(&s->pending, nm, f[i].size) != 0)
      break;
    s->bytes += f[i].size;
    names[n++] = f[i].name;
    f[i].name = NULL;
  }
  spool_publish_gauges(s);
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; i < nf; i++)
    free(f[i].name);
  free(f);
  if (n)
    qsort(names, n, sizeof *names, cmp_names);
  else {
    free(names);
    names = NULL;
  }
  *count = n;
  return names;
}

static int scan_new(spool *s, spool_scan_cb cb, void *arg) {
  size_t n;
  int handed = 0;
  char **names = claim_new(s, &n);

  for (size_t i = 0; i < n; i++) {
    uint8_t *buf = NULL;
    size_t len = 0;
    char why[256];
    bool taken = false, vanished = false;
    if (read_file_at(s->dirfd, names[i], (uint64_t)scan_frame_limit(s) + PP_FRAME_HEADER_SIZE, &buf,
                     &len, why, sizeof why) == 0) {
      /* The size we account is the size we read. */
      pthread_mutex_lock(&s->mu);
      bool found;
      size_t k = spool_set_lower(&s->pending, names[i], &found);
      if (found) {
        s->bytes = s->bytes - s->pending.v[k].bytes + len;
        s->pending.v[k].bytes = len;
      }
      spool_publish_gauges(s);
      pthread_mutex_unlock(&s->mu);
      why[0] = '\0';
      taken = cb(arg, names[i], buf, len, why, sizeof why) == 0;
      if (!taken && !why[0])
        snprintf(why, sizeof why, "refused by the scan");
    } else {
      vanished = errno == ENOENT; /* removed since we listed it: nothing to do */
    }
    free(buf);
    if (!taken) {
      uint64_t b = 0;
      pthread_mutex_lock(&s->mu);
      if (spool_set_erase(&s->pending, names[i], &b))
        s->bytes -= b;
      if (!vanished)
        spool_quarantine_locked(s, names[i], why);
      spool_publish_gauges(s);
      pthread_mutex_unlock(&s->mu);
    } else {
      handed++;
    }
    free(names[i]);
  }
  free(names);
  return handed;
}

int spool_scan(spool *s, spool_scan_cb cb, void *arg) {
  return scan_new(s, cb, arg);
}

int spool_rescan_new(spool *s, spool_scan_cb cb, void *arg) {
  return scan_new(s, cb, arg);
}
