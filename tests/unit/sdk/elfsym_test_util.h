/* Helpers shared by the elfsym and profbuild tests: the mapping of a pc,
 * an object's build id as readelf prints it, this executable's path, a
 * copy of a file, a copy of a library loaded under another path. */
#ifndef ELFSYM_TEST_UTIL_H
#define ELFSYM_TEST_UTIL_H
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pp_test.h"
#include "procmaps.h"

/* This executable's path into exe (len bytes, "" if unreadable); 0, or -1
 * with a failed check. */
static inline int self_exe(char *exe, size_t len) {
  ssize_t n = readlink("/proc/self/exe", exe, len - 1);
  exe[n > 0 ? n : 0] = '\0';
  PP_CHECK(n > 0);
  return n > 0 ? 0 : -1;
}

/* The executable file mapping holding pc, from /proc/self/maps. */
static inline int mapping_of(uint64_t pc, procmaps *m, const procmaps_entry **e) {
  if (procmaps_read_self(m) != 0)
    return -1;
  for (size_t i = 0; i < m->n; i++) {
    if (pc >= m->v[i].start && pc < m->v[i].end && m->v[i].executable) {
      *e = &m->v[i];
      return 0;
    }
  }
  procmaps_free(m);
  return -1;
}

/* The build id `readelf -n` prints for path, or "" (independent reader). */
static inline void readelf_build_id(const char *path, char *out, size_t outlen) {
  char cmd[PATH_MAX + 64], line[512];
  out[0] = '\0';
  snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
  FILE *p = popen(cmd, "r");
  if (!p)
    return;
  while (fgets(line, sizeof line, p)) {
    char *s = strstr(line, "Build ID: ");
    if (s && !out[0]) {
      snprintf(out, outlen, "%s", s + strlen("Build ID: "));
      out[strcspn(out, " \r\n")] = '\0';
    }
  }
  pclose(p);
}

/* Copies from to to, the first limit bytes (-1: all). 0 or -1. */
static inline int copy_file(const char *from, const char *to, long limit) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  char buf[65536];
  long total = 0;
  int rc = -1;
  if (!in || !out)
    goto done;
  for (;;) {
    size_t want = sizeof buf;
    if (limit >= 0 && (long)want > limit - total)
      want = (size_t)(limit - total);
    if (want == 0)
      break;
    size_t r = fread(buf, 1, want, in);
    if (r == 0)
      break;
    if (fwrite(buf, 1, r, out) != r)
      goto done;
    total += (long)r;
  }
  rc = 0;
done:
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    rc = -1;
  return rc;
}

/* Copies the library at from to dir/name (into copy, len bytes) and
 * dlopens the copy: the same code under another path and load address.
 * The handle, or NULL with a failed check. */
static inline void *dlopen_copy(const char *from, const char *dir, const char *name, char *copy,
                                size_t len) {
  snprintf(copy, len, "%s/%s", dir, name);
  PP_CHECK_INT(copy_file(from, copy, -1), ==, 0);
  void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
  PP_CHECK(h != NULL);
  return h;
}
#endif
