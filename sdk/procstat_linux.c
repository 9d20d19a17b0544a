#include "procstat.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t wall_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t procstat_start_ns(void) {
  /* /proc/self/stat field 22 (ticks since boot) + /proc/stat btime. */
  char buf[1024];
  long long btime = -1;
  unsigned long long start = 0;
  FILE *f = fopen("/proc/self/stat", "re");
  if (!f)
    return wall_now_ns();
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  for (int field = 2; p && field < 22; field++)
    p = strchr(p + 1, ' ');
  if (!p || sscanf(p + 1, "%llu", &start) != 1)
    return wall_now_ns();
  f = fopen("/proc/stat", "re");
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "btime %lld", &btime) == 1)
        break;
    fclose(f);
  }
  long hz = sysconf(_SC_CLK_TCK);
  if (btime < 0 || hz <= 0)
    return wall_now_ns();
  return (int64_t)btime * 1000000000 + (int64_t)(start * (1000000000ULL / (unsigned long)hz));
}
