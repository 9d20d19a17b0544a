/* dlopen / dlclose of a library (argv[1]) in a loop while sampled. Each
 * round spins inside the library at once (samples may land in it before
 * the SDK has its unwind table), sleeps 100 ms (the collector builds tables
 * every 50 ms), spins again through another entry point, and unloads it. */
#include "st_common.h"
#include <dlfcn.h>

typedef uint64_t (*burn_fn)(double);

static burn_fn lookup(void *h, const char *name) {
  burn_fn f;
  *(void **)&f = dlsym(h, name);
  ST_CHECK(f != NULL, name);
  return f;
}

int main(int argc, char **argv) {
  ST_CHECK(argc == 2, "usage: st_dlopen LIBRARY");
  int rounds = 30;
  for (int i = 0; i < rounds; i++) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "workload: dlopen %s: %s\n", argv[1], dlerror());
      return 70;
    }
    lookup(h, "st_dlburn_early")(0.01);
    struct timespec pause = {0, 100 * 1000 * 1000};
    ST_CHECK(nanosleep(&pause, NULL) == 0, "nanosleep");
    lookup(h, "st_dlburn_late")(0.02);
    ST_CHECK(dlclose(h) == 0, "dlclose");
  }
  printf("rounds=%d\n", rounds);
  return 0;
}
