/* /proc/<pid>/maps parsing: procmaps_parse takes any bytes. Each line gives
 * one entry or one skipped count; entries keep input order, have
 * start <= end, and paths that are NUL-free copies of the line's tail. */
#include <string.h>

#include "fuzz_target.h"
#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A copy of exactly size bytes, so ASan sees any read past the end. */
  char *buf = calloc(size ? size : 1, 1);
  FUZZ_CHECK(buf != NULL, "out of memory");
  if (size)
    memcpy(buf, data, size);
  procmaps m;
  if (procmaps_parse(buf, size, &m) != 0) {
    FUZZ_CHECK(m.n == 0 && m.v == NULL, "a failed parse must leave m empty");
    free(buf);
    return 0;
  }
  size_t lines = 0;
  for (size_t i = 0; i < size; i++)
    lines += buf[i] == '\n';
  if (size && buf[size - 1] != '\n')
    lines++;
  FUZZ_CHECK(m.n + m.skipped <= lines, "%zu entries + %zu skipped > %zu lines", m.n, m.skipped,
             lines);
  FUZZ_CHECK(m.n <= m.cap, "n %zu over cap %zu", m.n, m.cap);
  for (size_t i = 0; i < m.n; i++) {
    const procmaps_entry *e = &m.v[i];
    FUZZ_CHECK(e->path != NULL, "entry %zu has no path", i);
    size_t plen = strlen(e->path);
    FUZZ_CHECK(plen < size, "entry %zu: path of %zu bytes from %zu input bytes", i, plen, size);
    FUZZ_CHECK(e->start <= e->end, "entry %zu: start after end", i);
    FUZZ_CHECK(memchr(e->path, '\n', plen) == NULL, "entry %zu: path spans lines", i);
    FUZZ_CHECK(procmaps_is_file(e) == (e->path[0] == '/'), "procmaps_is_file disagrees");
    if (e->path[0])
      FUZZ_CHECK(memmem(buf, size, e->path, plen) != NULL, "entry %zu: path not from the input", i);
  }
  procmaps_free(&m);
  FUZZ_CHECK(m.n == 0 && m.v == NULL, "procmaps_free must leave m empty");
  free(buf);
  return 0;
}
