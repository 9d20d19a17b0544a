// Every allocation entry point and the awkward cases a heap profiler meets,
// each checked for what the program itself can see (alignment, contents,
// errno, results), so an interposer that breaks one fails here:
// C++ new/delete (scalar, array, aligned), posix_memalign, aligned_alloc,
// memalign, valloc, pvalloc at several alignments, realloc chains,
// reallocarray overflow, calloc overflow, free(NULL), huge blocks that
// glibc maps, threads that exit with live blocks freed by another thread,
// fork (the child allocates and frees, the parent's blocks stay valid), and
// malloc/free from the program's own signal handler while the main thread
// allocates.
//   wl_heap_edges
// Prints "edges ok" and true_live=<bytes still allocated at exit>.
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <new>
#include <vector>

#include "wl_common.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "wl_heap_edges: %s:%d: %s\n", __FILE__, __LINE__, #c);                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static unsigned long long g_live;

struct alignas(256) Wide {
  char b[1000];
};

__attribute__((noipa)) static void cxx_new_delete() {
  for (int i = 0; i < 20000; i++) {
    std::vector<int> *v = new std::vector<int>(64, i);
    CHECK((*v)[63] == i);
    delete v;
    char *a = new char[300];
    a[299] = 1;
    delete[] a;
    Wide *w = new Wide;
    CHECK(((uintptr_t)w & 255) == 0);
    delete w;
  }
}

__attribute__((noipa)) static void aligned_family() {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t align = sizeof(void *); align <= 65536; align *= 2) {
    for (int i = 0; i < 200; i++) {
      void *p = NULL;
      CHECK(posix_memalign(&p, align, 100 + (size_t)i) == 0);
      CHECK(((uintptr_t)p & (align - 1)) == 0);
      memset(p, 7, 100 + (size_t)i);
      free(p);
      p = aligned_alloc(align, align * 2);
      CHECK(p && ((uintptr_t)p & (align - 1)) == 0);
      free(p);
      p = memalign(align, 3000);
      CHECK(p && ((uintptr_t)p & (align - 1)) == 0);
      free(p);
    }
  }
  void *bad = NULL;
  CHECK(posix_memalign(&bad, 3, 10) == EINVAL); // not a power of two
  for (int i = 0; i < 100; i++) {
    void *v = valloc(5000);
    CHECK(v && ((uintptr_t)v & (pg - 1)) == 0);
    free(v);
    void *pv = pvalloc(1);
    CHECK(pv && ((uintptr_t)pv & (pg - 1)) == 0 && malloc_usable_size(pv) >= pg);
    free(pv);
  }
}

__attribute__((noipa)) static void realloc_chains() {
  for (int k = 0; k < 50; k++) {
    unsigned char *p = NULL;
    size_t n = 0;
    for (size_t sz = 1; sz <= (1u << 20); sz = sz * 3 / 2 + 1) {
      unsigned char *q = (unsigned char *)realloc(p, sz);
      CHECK(q);
      for (size_t i = n; i < sz; i++)
        q[i] = (unsigned char)i;
      for (size_t i = 0; i < n; i += 997)
        CHECK(q[i] == (unsigned char)i);
      p = q;
      n = sz;
    }
    p = (unsigned char *)realloc(p, 10); // shrink
    CHECK(p && p[9] == 9);
    CHECK(realloc(p, 0) == NULL); // glibc: frees
  }
  errno = 0;
  volatile size_t huge = SIZE_MAX / 2; // not a constant: the compiler would warn
  CHECK(reallocarray(NULL, huge, 3) == NULL && errno == ENOMEM);
  int *a = (int *)reallocarray(NULL, 1000, sizeof(int));
  CHECK(a);
  a[999] = 1;
  free(a);
  errno = 0;
  CHECK(calloc(huge, 3) == NULL);
  int *z = (int *)calloc(4096, sizeof(int));
  for (int i = 0; i < 4096; i++)
    CHECK(z[i] == 0);
  free(z);
  free(NULL);
}

__attribute__((noipa)) static void huge_blocks() {
  for (int i = 0; i < 20; i++) {
    char *p = (char *)malloc(64u << 20); // glibc maps blocks this large
    CHECK(p);
    p[0] = 1;
    p[(64u << 20) - 1] = 2;
    free(p);
  }
}

static void *g_handoff[1000];
static void *leaver(void *) {
  for (int i = 0; i < 1000; i++)
    g_handoff[i] = malloc(4096);
  return NULL; // exits with its blocks live
}

__attribute__((noipa)) static void threads_exit_with_live_blocks() {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, leaver, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  for (int i = 0; i < 1000; i++)
    free(g_handoff[i]);
}

__attribute__((noipa)) static void forks() {
  void *keep = malloc(100000);
  memset(keep, 3, 100000);
  for (int i = 0; i < 3; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      for (int k = 0; k < 10000; k++)
        free(malloc(1000));
      CHECK(((unsigned char *)keep)[99999] == 3);
      free(keep); // a block the parent allocated
      _exit(0);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  CHECK(((unsigned char *)keep)[0] == 3);
  free(keep);
}

// Executable code of libc and of the profiler: the handler must not
// re-enter glibc's malloc (that corrupts its caches whoever else is
// loaded), but re-entering the profiler is the case under test.
struct range {
  uintptr_t lo, hi;
};
static range g_libc, g_prof;
static int find_ranges(struct dl_phdr_info *info, size_t, void *) {
  range *r = strstr(info->dlpi_name, "/libc.so")      ? &g_libc
             : strstr(info->dlpi_name, "libpushprof") ? &g_prof
                                                      : NULL;
  for (int i = 0; r && i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
      r->lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      r->hi = r->lo + info->dlpi_phdr[i].p_memsz;
    }
  return 0;
}

static volatile sig_atomic_t g_handled, g_in_profiler;
static void on_alarm(int, siginfo_t *, void *ucv) {
  ucontext_t *uc = (ucontext_t *)ucv;
#if defined(__x86_64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#else
  uintptr_t pc = 0;
#endif
  if (pc >= g_libc.lo && pc < g_libc.hi)
    return;
  if (pc >= g_prof.lo && pc < g_prof.hi)
    g_in_profiler = g_in_profiler + 1;
  // Not async-signal-safe, but programs do it: it must not deadlock.
  void *p = malloc(2000);
  if (p)
    memset(p, 1, 2000);
  free(p);
  g_handled = g_handled + 1;
}

__attribute__((noipa)) static void malloc_in_signal_handler() {
  dl_iterate_phdr(find_ranges, NULL);
  CHECK(g_libc.hi != 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval it = {{0, 200}, {0, 200}};
  CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
  while (g_handled < 2000)
    for (int i = 0; i < 1000; i++)
      free(malloc(64 + (size_t)(i % 512)));
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

__attribute__((noipa)) static void *kept_site(size_t n) {
  void *p = malloc(n);
  CHECK(p);
  memset(p, 5, n);
  return p;
}

int main() {
  wl_start();
  cxx_new_delete();
  aligned_family();
  realloc_chains();
  huge_blocks();
  threads_exit_with_live_blocks();
  forks();
  malloc_in_signal_handler();
  for (int i = 0; i < 256; i++) {
    kept_site(65536); // live at exit
    g_live += 65536;
  }
  printf("edges ok\ntrue_live=%llu\nhandler_in_profiler=%d\n", g_live, (int)g_in_profiler);
  return 0;
}
