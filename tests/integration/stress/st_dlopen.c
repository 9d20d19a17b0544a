/* dlopen / dlclose of a library (argv[1]) in a loop; each round spins inside
 * the library so samples land in it before it is unloaded. */
#include "st_common.h"
#include <dlfcn.h>

int main(int argc, char **argv) {
  ST_CHECK(argc == 2, "usage: st_dlopen LIBRARY");
  int rounds = 40;
  for (int i = 0; i < rounds; i++) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "workload: dlopen %s: %s\n", argv[1], dlerror());
      return 70;
    }
    uint64_t (*burn)(double);
    *(void **)&burn = dlsym(h, "st_dlburn");
    ST_CHECK(burn != NULL, "dlsym st_dlburn");
    burn(0.03);
    ST_CHECK(dlclose(h) == 0, "dlclose");
  }
  printf("rounds=%d\n", rounds);
  return 0;
}
