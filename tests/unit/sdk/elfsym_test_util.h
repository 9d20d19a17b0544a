/* Helpers shared by test_elfsym and test_elfsym_loaded: the mapping of a
 * pc, an object's build id as readelf prints it, a copy of a file. */
#ifndef ELFSYM_TEST_UTIL_H
#define ELFSYM_TEST_UTIL_H
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "procmaps.h"

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
#endif
