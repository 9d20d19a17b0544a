/* /proc/self/maps: "start-end perms offset major:minor inode   path". The
 * path runs to the end of the line and may contain spaces; the kernel appends
 * " (deleted)" when the file was unlinked. */
#include "procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct cursor {
  const char *p, *end;
} cursor;

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Reads 1..16 hex digits (more would overflow: rejected). */
static bool read_hex(cursor *c, uint64_t *out) {
  uint64_t v = 0;
  int n = 0;
  while (c->p < c->end && hexval(*c->p) >= 0) {
    if (++n > 16)
      return false;
    v = (v << 4) | (uint64_t)hexval(*c->p);
    c->p++;
  }
  *out = v;
  return n > 0;
}

static bool read_dec(cursor *c, uint64_t *out) {
  uint64_t v = 0;
  int n = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    uint64_t d = (uint64_t)(*c->p - '0');
    if (v > (UINT64_MAX - d) / 10)
      return false;
    v = v * 10 + d;
    n++;
    c->p++;
  }
  *out = v;
  return n > 0;
}

static bool expect(cursor *c, char ch) {
  if (c->p >= c->end || *c->p != ch)
    return false;
  c->p++;
  return true;
}

static bool skip_spaces(cursor *c) {
  const char *start = c->p;
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
    c->p++;
  return c->p > start;
}

static int push(procmaps *m, const procmaps_entry *e) {
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    procmaps_entry *v = realloc(m->v, cap * sizeof *v);
    if (!v)
      return -1;
    m->v = v;
    m->cap = cap;
  }
  m->v[m->n++] = *e;
  return 0;
}

/* 1 parsed, 0 malformed, -1 ENOMEM. */
static int parse_line(const char *line, const char *end, procmaps_entry *e) {
  cursor c = {line, end};
  uint64_t major, minor;
  memset(e, 0, sizeof *e);
  if (!read_hex(&c, &e->start) || !expect(&c, '-') || !read_hex(&c, &e->end))
    return 0;
  if (e->end < e->start || !skip_spaces(&c))
    return 0;
  if (c.end - c.p < 4)
    return 0;
  const char *perms = c.p;
  if ((perms[0] != 'r' && perms[0] != '-') || (perms[1] != 'w' && perms[1] != '-') ||
      (perms[2] != 'x' && perms[2] != '-') || (perms[3] != 'p' && perms[3] != 's'))
    return 0;
  e->readable = perms[0] == 'r';
  e->writable = perms[1] == 'w';
  e->executable = perms[2] == 'x';
  e->shared = perms[3] == 's';
  c.p += 4;
  if (!skip_spaces(&c) || !read_hex(&c, &e->offset) || !skip_spaces(&c))
    return 0;
  if (!read_hex(&c, &major) || !expect(&c, ':') || !read_hex(&c, &minor))
    return 0;
  if (major > UINT32_MAX || minor > UINT32_MAX)
    return 0;
  e->dev_major = (uint32_t)major;
  e->dev_minor = (uint32_t)minor;
  if (!skip_spaces(&c) || !read_dec(&c, &e->inode))
    return 0;
  if (c.p < c.end && !skip_spaces(&c))
    return 0; /* junk glued to the inode */

  const char *path = c.p, *pend = c.end;
  static const char deleted[] = " (deleted)";
  size_t dl = sizeof deleted - 1;
  if ((size_t)(pend - path) > dl && memcmp(pend - dl, deleted, dl) == 0) {
    e->deleted = true;
    pend -= dl;
  }
  size_t plen = (size_t)(pend - path);
  if (memchr(path, '\0', plen))
    return 0;
  e->path = malloc(plen + 1);
  if (!e->path)
    return -1;
  memcpy(e->path, path, plen);
  e->path[plen] = '\0';
  return 1;
}

int procmaps_parse(const char *buf, size_t len, procmaps *m) {
  memset(m, 0, sizeof *m);
  const char *p = buf, *end = buf + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *lend = nl ? nl : end;
    procmaps_entry e;
    int r = parse_line(p, lend, &e);
    if (r < 0)
      goto fail;
    if (r == 0) {
      if (lend > p)
        m->skipped++;
    } else if (push(m, &e) != 0) {
      free(e.path);
      goto fail;
    }
    p = nl ? nl + 1 : end;
  }
  return 0;
fail:
  procmaps_free(m);
  return -1;
}

void procmaps_free(procmaps *m) {
  for (size_t i = 0; i < m->n; i++)
    free(m->v[i].path);
  free(m->v);
  memset(m, 0, sizeof *m);
}

int procmaps_read_file(const char *path, size_t max, char **buf, size_t *len) {
  size_t cap = max < 16384 ? max : 16384, n = 0;
  char *b = NULL;
  if (cap < 2)
    return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  b = malloc(cap);
  if (!b)
    goto fail;
  for (;;) {
    if (n + 1 >= cap) {
      if (cap >= max)
        goto fail; /* larger than max: refuse rather than cut */
      size_t ncap = cap * 2 > max ? max : cap * 2;
      char *nb = realloc(b, ncap);
      if (!nb)
        goto fail;
      b = nb;
      cap = ncap;
    }
    ssize_t r = read(fd, b + n, cap - n - 1);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      goto fail;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  b[n] = '\0';
  *buf = b;
  *len = n;
  return 0;
fail:
  free(b);
  close(fd);
  return -1;
}

int procmaps_read_self(procmaps *m) {
  char *buf;
  size_t len;
  memset(m, 0, sizeof *m);
  if (procmaps_read_file("/proc/self/maps", (size_t)256 << 20, &buf, &len) != 0)
    return -1;
  int r = procmaps_parse(buf, len, m);
  free(buf);
  return r;
}

bool procmaps_is_file(const procmaps_entry *e) {
  return e->path && e->path[0] == '/';
}
