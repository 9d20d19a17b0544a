/* A spool in a fresh temporary directory and a callback that collects
 * what scans hand over, for the spool's unit tests. Header-only. */
#ifndef SPOOL_TEST_UTIL_H
#define SPOOL_TEST_UTIL_H
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "pp_push.h"
#include "pp_test.h"
#include "spool.h"

static char dir[64];
static char path[PATH_MAX];

static inline void setup(void) {
  pp_test_mkdtemp(dir, sizeof dir, "test-spool");
}

static inline spool *open_spool(uint64_t max_bytes, bool drop_oldest) {
  char err[512] = "";
  spool_config c = {.dir = dir, .max_bytes = max_bytes, .drop_oldest = drop_oldest};
  spool *s = spool_open(&c, err, sizeof err);
  if (!s)
    fprintf(stderr, "spool_open: %s\n", err);
  return s;
}

static inline const char *sub(const char *name) {
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

typedef struct seen {
  int n;
  char ids[16][SPOOL_ID_MAX];
  char services[16][32];
  size_t bytes[16];
} seen;

/* Decodes what a scan hands over, as the sidecar's batcher_add_spooled does:
 * a file that does not decode is refused (the spool quarantines it). */
static inline int collect(void *arg, const char *id, const uint8_t *frame, size_t len, char *why,
                          size_t whylen) {
  seen *s = arg;
  int code;
  pp_push *p = pp_push_decode(frame, len, PP_FRAME_MAX_DEFAULT, &code, why, whylen);
  if (!p)
    return -1;
  if (s->n < 16) {
    snprintf(s->ids[s->n], SPOOL_ID_MAX, "%s", id);
    snprintf(s->services[s->n], 32, "%s", p->req->service);
    s->bytes[s->n] = len;
  }
  s->n++;
  pp_push_free(p);
  return 0;
}

static inline uint64_t quarantined_total(void) {
  uint64_t v = 0;
  char *m = metrics_render();
  const char *p = m ? strstr(m, "\npushprof_spool_quarantined_total ") : NULL;
  if (p)
    v = strtoull(p + strlen("\npushprof_spool_quarantined_total "), NULL, 10);
  free(m);
  return v;
}
#endif
