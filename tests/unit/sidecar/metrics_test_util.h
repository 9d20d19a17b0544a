/* Reading the sidecar's own /metrics text in unit tests. Header-only. */
#ifndef METRICS_TEST_UTIL_H
#define METRICS_TEST_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* The value of an unlabelled counter or gauge, 0 if absent. */
static inline uint64_t mtu_value(const char *name) {
  char *m = metrics_render();
  char key[128];
  uint64_t v = 0;
  snprintf(key, sizeof key, "\n%s ", name);
  const char *p = m ? strstr(m, key) : NULL;
  if (p)
    v = strtoull(p + strlen(key), NULL, 10);
  free(m);
  return v;
}
#endif
