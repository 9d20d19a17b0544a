/* Batch manifests (see manifest.h). The file is text lines, then the gzip
 * payload:
 *   pushprof-batch 1
 *   service :<s>   node :<s>   subdir :<s>   [type :<s>]
 *   label :<key> :<value> (repeated)
 *   start <ns>   end <ns>   born <ns>   hash <64 hex>
 *   member :<spool id> <32 hex identity | ->   (repeated)
 *   payload <bytes>
 *   <payload bytes>
 * one item per line; strings are ':' then %XX-escaped outside 0x21..0x7e.
 * The payload comes last so a tombstone is the same file cut after the
 * "payload" line. */
#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fsutil.h"
#include "log.h"
#include "pp_deflate.h"
#include "pp_hex.h"

#define MAGIC_LINE "pushprof-batch 1"
#define SUFFIX_BATCH ".batch"
#define SUFFIX_DONE ".done"
#define SUFFIX_BAD ".bad"
#define FAILED_DIR "failed"
#define HEADER_MAX ((size_t)16 << 20)
/* A payload, fresh (pp_gzip_fast_into) or read back, is aligned for the
 * file exporter's writes past the page cache (fsutil_write_uncached). */
_Static_assert(PP_GZIP_ALIGN % FSUTIL_DIRECT_ALIGN == 0, "payloads aligned for O_DIRECT");

struct manifest_dir {
  char *path;
  int dfd;
  int failed_fd; /* <spool>/failed, or -1 */
  /* Names written so far: threads that pack (the batcher's and the
   * connection threads helping it) write manifests at the same time. */
  _Atomic uint32_t counter;
  uint64_t set_aside; /* manifests set aside so far */
};

/* ---- growable buffer ---- */

typedef struct buf {
  uint8_t *p;
  size_t len, cap;
  bool oom;
} buf;

static void buf_put(buf *b, const void *data, size_t n) {
  if (b->oom)
    return;
  if (b->len + n > b->cap) {
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->len + n)
      ncap *= 2;
    uint8_t *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    b->oom = true;
    return;
  }
  buf_put(b, tmp, (size_t)n);
}

static void buf_str(buf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  buf_put(b, " :", 2);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p > 0x20 && *p < 0x7f && *p != '%') {
      buf_put(b, p, 1);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      buf_put(b, e, 3);
    }
  }
}

static void hex_id(const dedup_id *id, char out[33]) {
  for (size_t i = 0; i < sizeof id->b; i++)
    snprintf(out + 2 * i, 3, "%02x", id->b[i]);
}

/* The text before the payload, ending "payload N\n" (N = m->gzlen). */
static uint8_t *encode_header(const manifest *m, size_t *len) {
  buf b = {0};
  char idhex[33];
  buf_printf(&b, "%s\nservice", MAGIC_LINE);
  buf_str(&b, m->service);
  buf_printf(&b, "\nnode");
  buf_str(&b, m->node);
  buf_printf(&b, "\nsubdir");
  buf_str(&b, m->subdir);
  if (m->ptype && *m->ptype) { /* absent for CPU batches, as before types */
    buf_printf(&b, "\ntype");
    buf_str(&b, m->ptype);
  }
  for (size_t i = 0; i < m->nlabels; i++) {
    buf_printf(&b, "\nlabel");
    buf_str(&b, m->labels[i].key);
    buf_str(&b, m->labels[i].value);
  }
  buf_printf(&b, "\nstart %" PRId64 "\nend %" PRId64 "\nborn %" PRId64 "\nhash %s", m->start_ns,
             m->end_ns, m->born_ns, m->hash);
  for (size_t i = 0; i < m->nmembers; i++) {
    buf_printf(&b, "\nmember");
    buf_str(&b, m->members[i].id);
    if (dedup_id_is_zero(&m->members[i].pushid)) {
      buf_put(&b, " -", 2);
    } else {
      hex_id(&m->members[i].pushid, idhex);
      buf_printf(&b, " %s", idhex);
    }
  }
  buf_printf(&b, "\npayload %zu\n", m->gzlen);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}

uint8_t *manifest_encode(const manifest *m, size_t *len, size_t *hdrlen) {
  size_t h;
  uint8_t *hdr = encode_header(m, &h), *p = NULL;
  if (hdr && h <= SIZE_MAX - m->gzlen && (p = realloc(hdr, h + m->gzlen)) != NULL) {
    if (m->gzlen)
      memcpy(p + h, m->gz, m->gzlen);
    *len = h + m->gzlen;
    if (hdrlen)
      *hdrlen = h;
    return p;
  }
  free(hdr);
  return NULL;
}

/* ---- decoding ---- */

/* Decodes one ":escaped" token [s, s+n) into a malloc'ed string. */
static char *dec_str(const char *s, size_t n) {
  if (n == 0 || s[0] != ':')
    return NULL;
  char *out = malloc(n);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 1; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      int hi = i + 2 < n ? pp_hexval(s[i + 1]) : -1, lo = i + 2 < n ? pp_hexval(s[i + 2]) : -1;
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
        goto bad;
      c = (unsigned char)(hi * 16 + lo);
      i += 2;
    } else if (c <= 0x20 || c >= 0x7f) {
      goto bad;
    }
    out[o++] = (char)c;
  }
  out[o] = '\0';
  return out;
bad:
  free(out);
  return NULL;
}

static bool parse_i64(const char *s, size_t n, int64_t *v) {
  char tmp[32];
  if (n == 0 || n >= sizeof tmp)
    return false;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  char *end;
  errno = 0;
  long long x = strtoll(tmp, &end, 10);
  if (errno || *end || end == tmp)
    return false;
  *v = (int64_t)x;
  return true;
}

static bool parse_hex(const char *s, size_t n, uint8_t *out, size_t outlen) {
  if (n != 2 * outlen)
    return false;
  for (size_t i = 0; i < outlen; i++) {
    int hi = pp_hexval(s[2 * i]), lo = pp_hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out[i] = (uint8_t)(hi * 16 + lo);
  }
  return true;
}

static bool grow_array(void **v, size_t n, size_t *cap, size_t size) {
  if (n < *cap)
    return true;
  size_t ncap = *cap ? *cap * 2 : 8;
  void *nv = realloc(*v, ncap * size);
  if (!nv)
    return false;
  *v = nv;
  *cap = ncap;
  return true;
}

void manifest_free(manifest *m) {
  if (!m)
    return;
  free(m->service);
  free(m->node);
  free(m->subdir);
  free(m->ptype);
  for (size_t i = 0; i < m->nlabels; i++) {
    free(m->labels[i].key);
    free(m->labels[i].value);
  }
  free(m->labels);
  free(m->members);
  free(m->gz);
  free(m);
}

int manifest_hash_hex(const uint8_t *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
    return -1;
  for (unsigned i = 0; i < mdlen; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  return 0;
}

#define BAD(...)                                                                                   \
  do {                                                                                             \
    snprintf(why, whylen, __VA_ARGS__);                                                            \
    goto fail;                                                                                     \
  } while (0)

manifest *manifest_decode(const uint8_t *data, size_t len, bool want_payload, char *why,
                          size_t whylen) {
  manifest *m = calloc(1, sizeof *m);
  size_t cap_labels = 0, cap_members = 0, off = 0;
  bool have[7] = {false}; /* service node subdir start end born hash */
  if (!m) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  const char *s = (const char *)data;
  for (size_t lineno = 1;; lineno++) {
    const char *nl = off < len ? memchr(s + off, '\n', len - off) : NULL;
    if (!nl)
      BAD("line %zu: no end of line (file cut short?)", lineno);
    const char *line = s + off;
    size_t ll = (size_t)(nl - line);
    off += ll + 1;
    if (lineno == 1) {
      if (ll != strlen(MAGIC_LINE) || memcmp(line, MAGIC_LINE, ll) != 0)
        BAD("not a pushprof batch manifest (first line is not \"%s\")", MAGIC_LINE);
      continue;
    }
    /* Split into at most 3 space-separated tokens. */
    const char *tok[4];
    size_t tl[4], nt = 0;
    for (size_t i = 0; i < ll && nt < 4;) {
      size_t j = i;
      while (j < ll && line[j] != ' ')
        j++;
      tok[nt] = line + i;
      tl[nt++] = j - i;
      i = j + 1;
      if (j == ll)
        break;
    }
#define IS(k) (tl[0] == strlen(k) && memcmp(tok[0], k, tl[0]) == 0)
    if (nt == 2 && IS("payload")) {
      int64_t n;
      if (!parse_i64(tok[1], tl[1], &n) || n < 0 || (uint64_t)n > MANIFEST_PAYLOAD_MAX)
        BAD("line %zu: bad payload length", lineno);
      if (want_payload) {
        if ((uint64_t)n != (uint64_t)(len - off))
          BAD("payload is %zu bytes, the manifest says %" PRId64 " (file cut short?)", len - off,
              n);
        m->gzlen = (size_t)n;
        m->gz = malloc(m->gzlen ? m->gzlen : 1);
        if (!m->gz)
          BAD("out of memory");
        memcpy(m->gz, data + off, m->gzlen);
        char h[65];
        if (manifest_hash_hex(m->gz, m->gzlen, h) != 0 || strcmp(h, m->hash) != 0)
          BAD("payload does not match its SHA-256");
      }
      break;
    }
    if (nt == 2 && (IS("service") || IS("node") || IS("subdir"))) {
      char **dst = IS("service") ? &m->service : IS("node") ? &m->node : &m->subdir;
      int k = IS("service") ? 0 : IS("node") ? 1 : 2;
      if (have[k])
        BAD("line %zu: repeated field", lineno);
      if (!(*dst = dec_str(tok[1], tl[1])))
        BAD("line %zu: bad string", lineno);
      have[k] = true;
    } else if (nt == 2 && IS("type")) {
      if (m->ptype)
        BAD("line %zu: repeated field", lineno);
      if (!(m->ptype = dec_str(tok[1], tl[1])))
        BAD("line %zu: bad string", lineno);
    } else if (nt == 3 && IS("label")) {
      if (!grow_array((void **)&m->labels, m->nlabels, &cap_labels, sizeof *m->labels))
        BAD("out of memory");
      Pushprof__V1__Label *l = &m->labels[m->nlabels];
      pushprof__v1__label__init(l);
      l->key = dec_str(tok[1], tl[1]);
      l->value = dec_str(tok[2], tl[2]);
      m->nlabels++;
      if (!l->key || !l->value || !l->key[0])
        BAD("line %zu: bad label", lineno);
    } else if (nt == 2 && (IS("start") || IS("end") || IS("born"))) {
      int64_t *dst = IS("start") ? &m->start_ns : IS("end") ? &m->end_ns : &m->born_ns;
      int k = IS("start") ? 3 : IS("end") ? 4 : 5;
      if (have[k] || !parse_i64(tok[1], tl[1], dst))
        BAD("line %zu: bad or repeated time", lineno);
      have[k] = true;
    } else if (nt == 2 && IS("hash")) {
      uint8_t raw[32];
      if (have[6] || !parse_hex(tok[1], tl[1], raw, sizeof raw))
        BAD("line %zu: bad hash", lineno);
      for (size_t i = 0; i < 64; i++)
        m->hash[i] = (char)(tok[1][i] | 0x20); /* lower case */
      m->hash[64] = '\0';
      have[6] = true;
    } else if (nt == 3 && IS("member")) {
      if (!grow_array((void **)&m->members, m->nmembers, &cap_members, sizeof *m->members))
        BAD("out of memory");
      manifest_member *mm = &m->members[m->nmembers];
      memset(mm, 0, sizeof *mm);
      char *id = dec_str(tok[1], tl[1]);
      bool ok = id && id[0] && id[0] != '.' && !strchr(id, '/') && strlen(id) < SPOOL_ID_MAX;
      if (ok)
        snprintf(mm->id, sizeof mm->id, "%s", id);
      free(id);
      if (!ok)
        BAD("line %zu: bad member file name", lineno);
      if (!(tl[2] == 1 && tok[2][0] == '-') &&
          !parse_hex(tok[2], tl[2], mm->pushid.b, sizeof mm->pushid.b))
        BAD("line %zu: bad member identity", lineno);
      m->nmembers++;
    } else {
      BAD("line %zu: unknown or malformed item", lineno);
    }
#undef IS
  }
  for (size_t k = 0; k < sizeof have / sizeof have[0]; k++)
    if (!have[k])
      BAD("a required field is missing");
  if (!m->service[0])
    BAD("empty service");
  return m;
fail:
  manifest_free(m);
  return NULL;
}

/* ---- directory ---- */

static bool has_suffix(const char *name, const char *suffix) {
  size_t n = strlen(name), k = strlen(suffix);
  return n > k && strcmp(name + n - k, suffix) == 0;
}

static int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Temp files of a writer that died (only one sidecar owns a spool, and it
 * is starting): never renamed, so never a manifest. */
static void remove_temps(manifest_dir *d) {
  int fd = dup(d->dfd);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dir) {
    if (fd >= 0)
      close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(dir)) != NULL)
    if (de->d_name[0] == '.' && has_suffix(de->d_name, SUFFIX_BATCH) &&
        unlinkat(d->dfd, de->d_name, 0) == 0)
      log_event(LOG_INFO, "removed a batch manifest left half-written", "file=%s/%s", d->path,
                de->d_name);
  closedir(dir);
}

manifest_dir *manifest_dir_open(const char *spool_dir, char *err, size_t errlen) {
  manifest_dir *d = calloc(1, sizeof *d);
  size_t n = strlen(spool_dir) + sizeof(MANIFEST_DIR) + 2;
  if (!d || !(d->path = malloc(n))) {
    free(d);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  d->dfd = d->failed_fd = -1;
  snprintf(d->path, n, "%s/%s", spool_dir, MANIFEST_DIR);
  if (fsutil_mkdir_p(d->path) != 0 ||
      (d->dfd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
    snprintf(err, errlen, "cannot create or open %s: %s (check permissions of the spool)", d->path,
             strerror(errno));
    manifest_dir_close(d);
    return NULL;
  }
  remove_temps(d);
  char fp[4096];
  snprintf(fp, sizeof fp, "%s/%s", spool_dir, FAILED_DIR);
  d->failed_fd = open(fp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  return d;
}

void manifest_dir_close(manifest_dir *d) {
  if (!d)
    return;
  if (d->dfd >= 0)
    close(d->dfd);
  if (d->failed_fd >= 0)
    close(d->failed_fd);
  free(d->path);
  free(d);
}

static void file_name(const char *name, bool done, char *out, size_t outlen) {
  snprintf(out, outlen, "%s%s%s", done ? "." : "", name, done ? SUFFIX_DONE : SUFFIX_BATCH);
}

int manifest_write(manifest_dir *d, manifest *m) {
  char final[MANIFEST_NAME_MAX + 8], tmp[MANIFEST_NAME_MAX + 9], q[128];
  size_t hdrlen = 0;
  int fd = -1, e = 0;
  /* The header, then the payload from where it is: a batch's payload is
   * megabytes, not worth a copy. */
  uint8_t *data = encode_header(m, &hdrlen);
  if (!data) {
    errno = ENOMEM;
    goto fail;
  }
  snprintf(m->name, sizeof m->name, "%020" PRId64 "-%010" PRIu32, wall_ns(),
           atomic_fetch_add(&d->counter, 1) + 1);
  m->done = false;
  file_name(m->name, false, final, sizeof final);
  snprintf(tmp, sizeof tmp, ".%s", final);
  fd = openat(d->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0 || fsutil_write_all(fd, data, hdrlen) != 0 ||
      (m->gzlen && fsutil_write_all(fd, m->gz, m->gzlen) != 0) || fsync(fd) != 0)
    goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  fd = -1;
  if (renameat(d->dfd, tmp, d->dfd, final) != 0)
    goto fail;
  if (fsync(d->dfd) != 0) {
    e = errno;
    unlinkat(d->dfd, final, 0);
    errno = e;
    goto fail_logged;
  }
  free(data);
  return 0;
fail:
  e = errno;
  if (fd >= 0)
    close(fd);
  unlinkat(d->dfd, tmp, 0);
  errno = e;
fail_logged:
  log_event(LOG_WARN,
            "cannot write batch manifest; exporting without one (a crash now may export "
            "this batch twice)",
            "dir=%s err=%s", d->path, log_quote(strerror(e), q, sizeof q));
  free(data);
  errno = e;
  return -1;
}

int manifest_read_payload(manifest_dir *d, const char *name, size_t gzlen, const char *hash,
                          uint8_t **out, char *why, size_t whylen) {
  char fn[MANIFEST_NAME_MAX + 8], h[65];
  struct stat st;
  uint8_t *b = NULL;
  *out = NULL;
  file_name(name, false, fn, sizeof fn);
  int fd = openat(d->dfd, fn, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    int e = errno;
    snprintf(why, whylen, "cannot open %s/%s: %s", d->path, fn, strerror(e));
    errno = e;
    return -1;
  }
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < gzlen) {
    snprintf(why, whylen, "%s/%s is shorter than its payload (%zu bytes)", d->path, fn, gzlen);
    goto fail;
  }
  /* Aligned as a fresh payload is (see PP_GZIP_ALIGN above). */
  if (posix_memalign((void **)&b, PP_GZIP_ALIGN, gzlen ? gzlen : 1) != 0)
    b = NULL;
  if (!b) {
    snprintf(why, whylen, "out of memory reading %zu bytes", gzlen);
    close(fd);
    errno = ENOMEM;
    return -1;
  }
  if (fsutil_pread_all(fd, b, gzlen, st.st_size - (off_t)gzlen) != 0) {
    snprintf(why, whylen, "cannot read %s/%s: %s", d->path, fn, strerror(errno));
    goto fail;
  }
  if (manifest_hash_hex(b, gzlen, h) != 0 || strcmp(h, hash) != 0) {
    snprintf(why, whylen, "%s/%s: payload does not match its SHA-256", d->path, fn);
    goto fail;
  }
  close(fd);
  *out = b;
  return 0;
fail:
  free(b);
  close(fd);
  errno = EBADMSG; /* only out of memory may say ENOMEM */
  return -1;
}

int manifest_mark_done(manifest_dir *d, const char *name, size_t gzlen) {
  char from[MANIFEST_NAME_MAX + 8], to[MANIFEST_NAME_MAX + 8], q[128];
  file_name(name, false, from, sizeof from);
  file_name(name, true, to, sizeof to);
  if (renameat(d->dfd, from, d->dfd, to) != 0 || fsync(d->dfd) != 0) {
    log_event(LOG_WARN,
              "cannot mark batch manifest done; a restart will export it again "
              "(same object key)",
              "file=%s/%s err=%s", d->path, from, log_quote(strerror(errno), q, sizeof q));
    return -1;
  }
  /* The tombstone needs only the header (best effort: a payload left behind
   * is ignored when a tombstone is read). */
  int fd = openat(d->dfd, to, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd >= 0) {
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size >= gzlen &&
        ftruncate(fd, st.st_size - (off_t)gzlen) != 0)
      log_event(LOG_DEBUG, "cannot cut the payload off a tombstone", "file=%s/%s", d->path, to);
    close(fd);
  }
  return 0;
}

int manifest_remove(manifest_dir *d, const char *name, bool done) {
  char fname[MANIFEST_NAME_MAX + 8], q[128];
  file_name(name, done, fname, sizeof fname);
  if (unlinkat(d->dfd, fname, 0) != 0 && errno != ENOENT) {
    log_event(LOG_WARN, "cannot delete batch manifest", "file=%s/%s err=%s", d->path, fname,
              log_quote(strerror(errno), q, sizeof q));
    return -1;
  }
  return 0;
}

int manifest_move_failed(manifest_dir *d, const char *name, const char *reason) {
  char fname[MANIFEST_NAME_MAX + 8], rname[MANIFEST_NAME_MAX + 16], q[128];
  file_name(name, false, fname, sizeof fname);
  if (d->failed_fd < 0 || renameat(d->dfd, fname, d->failed_fd, fname) != 0) {
    log_event(LOG_WARN, "cannot move batch manifest to failed/", "file=%s/%s err=%s", d->path,
              fname,
              log_quote(d->failed_fd < 0 ? "no failed/ directory" : strerror(errno), q, sizeof q));
    return -1;
  }
  snprintf(rname, sizeof rname, "%s.reason", fname);
  int fd = openat(d->failed_fd, rname, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd >= 0) {
    const char *r = reason ? reason : "";
    if (fsutil_write_all(fd, (const uint8_t *)r, strlen(r)) != 0 ||
        fsutil_write_all(fd, (const uint8_t *)"\n", 1) != 0)
      log_event(LOG_WARN, "cannot write reason file", "file=%s", rname);
    close(fd);
  }
  if (fsync(d->failed_fd) != 0 || fsync(d->dfd) != 0)
    log_event(LOG_WARN, "fsync after moving a manifest to failed/ failed", "file=%s", fname);
  return 0;
}

/* ---- scans ---- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in the directory ending in suffix, dot files or not. */
static char **list_names(manifest_dir *d, const char *suffix, bool dot, size_t *count) {
  int fd = dup(d->dfd);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  char **v = NULL;
  size_t n = 0, cap = 0;
  *count = 0;
  if (!dir) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  rewinddir(dir);
  struct dirent *de;
  while ((de = readdir(dir)) != NULL) {
    if ((de->d_name[0] == '.') != dot || !has_suffix(de->d_name, suffix) ||
        strlen(de->d_name) >= MANIFEST_NAME_MAX + 8)
      continue;
    if (!grow_array((void **)&v, n, &cap, sizeof *v))
      break;
    if (!(v[n] = strdup(de->d_name)))
      break;
    n++;
  }
  closedir(dir);
  if (n)
    qsort(v, n, sizeof *v, cmp_str);
  *count = n;
  return v;
}

static int read_whole(int dfd, const char *name, uint8_t **out, size_t *len, int64_t *mtime) {
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  uint8_t *b = NULL;
  if (fd < 0)
    return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size > MANIFEST_PAYLOAD_MAX + HEADER_MAX)
    goto fail;
  b = malloc(st.st_size ? (size_t)st.st_size : 1);
  if (!b)
    goto fail;
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  *out = b;
  *len = got;
  *mtime = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  return 0;
fail:
  free(b);
  close(fd);
  return -1;
}

static void set_aside(manifest_dir *d, const char *name, const char *why) {
  char bad[MANIFEST_NAME_MAX + 16], q[300];
  snprintf(bad, sizeof bad, "%s%s", name, SUFFIX_BAD);
  if (renameat(d->dfd, name, d->dfd, bad) != 0)
    unlinkat(d->dfd, name, 0); /* never read it again either way */
  d->set_aside++;
  log_event(LOG_ERROR, "unreadable batch manifest set aside; its pushes are lost (counted)",
            "file=%s/%s reason=%s", d->path, bad, log_quote(why, q, sizeof q));
}

void manifest_set_aside(manifest_dir *d, const char *name, const char *why) {
  char fn[MANIFEST_NAME_MAX + 8];
  file_name(name, false, fn, sizeof fn);
  set_aside(d, fn, why);
}

uint64_t manifest_set_aside_count(const manifest_dir *d) {
  return d->set_aside;
}

int manifest_load_all(manifest_dir *d, manifest_cb cb, void *arg) {
  int handed = 0;
  static const char *const suffixes[2] = {SUFFIX_DONE, SUFFIX_BATCH};
  /* Tombstones first: a pending batch's members may also appear in one. */
  for (int k = 0; k < 2; k++) {
    size_t n = 0;
    char **names = list_names(d, suffixes[k], k == 0, &n);
    for (size_t i = 0; i < n; i++) {
      uint8_t *data = NULL;
      size_t len = 0;
      int64_t mtime = 0;
      char why[256] = "cannot read it";
      manifest *m = NULL;
      if (read_whole(d->dfd, names[i], &data, &len, &mtime) == 0)
        m = manifest_decode(data, len, k == 1, why, sizeof why);
      free(data);
      if (!m) {
        set_aside(d, names[i], why);
      } else {
        const char *nm = names[i] + (k == 0); /* tombstones: ".NAME.done" */
        size_t nl = strlen(nm) - strlen(suffixes[k]);
        if (nl >= sizeof m->name || nl == 0) {
          manifest_free(m);
          set_aside(d, names[i], "bad name");
        } else {
          memcpy(m->name, nm, nl);
          m->name[nl] = '\0';
          m->done = k == 0;
          m->mtime_ns = mtime;
          cb(arg, m);
          handed++;
        }
      }
      free(names[i]);
    }
    free(names);
  }
  return handed;
}

int manifest_prune_done(manifest_dir *d, int64_t before_wall_ns) {
  size_t n = 0;
  int pruned = 0;
  char **names = list_names(d, SUFFIX_DONE, true, &n);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (fstatat(d->dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec < before_wall_ns &&
        unlinkat(d->dfd, names[i], 0) == 0)
      pruned++;
    free(names[i]);
  }
  free(names);
  return pruned;
}
