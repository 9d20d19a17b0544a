/* A program a setuid test installs setuid to another user. It reports what
 * the preload library could have done to it, then exits with STATUS:
 *   sec_setuid_probe STATUS [--dlopen LIB]
 *   secure=<getauxval(AT_SECURE)> ruid=<uid> euid=<euid>
 *   loaded=<1 if libpushprof_preload.so is mapped>
 *   threads=<entries of /proc/self/task> sigprof=<1 if SIGPROF is caught>
 *   probe done
 * --dlopen loads LIB itself, past glibc's LD_PRELOAD filter for secure
 * programs, so the library's own AT_SECURE guard is what is tested. */
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "wl_common.h"

/* spin: CPU a running profiler would sample, and time for its threads to
 * start. */
WL_SPIN_FN(spin)

static int count_tasks(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

static int preload_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return -1;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "libpushprof_preload"))
      found = 1;
  fclose(f);
  return found;
}

/* The kernel's view (SigCgt in /proc/self/status), not sigaction's: the
 * SDK's sigaction interposer shows a program the actions it set itself. */
static int sigprof_caught(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  int caught = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long long mask;
    if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
      caught = (int)((mask >> (SIGPROF - 1)) & 1);
      break;
    }
  }
  fclose(f);
  return caught;
}

int main(int argc, char **argv) {
  int status = argc > 1 ? atoi(argv[1]) : 0;
  if (argc > 3 && strcmp(argv[2], "--dlopen") == 0 && !dlopen(argv[3], RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "probe: dlopen %s: %s\n", argv[3], dlerror());
    return 70;
  }
  spin(0.3);
  printf("secure=%lu ruid=%d euid=%d\n", getauxval(AT_SECURE), (int)getuid(), (int)geteuid());
  printf("loaded=%d\nthreads=%d sigprof=%d\nprobe done\n", preload_mapped(), count_tasks(),
         sigprof_caught());
  return status;
}
