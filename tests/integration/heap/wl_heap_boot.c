/* The interposers' bootstrap arena: a program whose dlsym allocates, as
 * glibc's did before 2.34 (its dlerror state) and other C libraries may.
 * This executable defines dlsym, so the interposers' lookups of the next
 * malloc come here, and each one allocates before answering: those blocks
 * come from the arena while the lookups run. The program then uses them as
 * any block (reads, realloc, free), which must neither crash nor hand an
 * arena block to glibc (whose free aborts on it), and makes a known live
 * set that the heap profile must hold (linked, after 64 MiB allocated
 * before profiling started).
 *   wl_heap_boot
 * Prints boot_blocks=N (allocations made inside dlsym), true_live=BYTES and
 * "boot ok" once every check passed. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_common.h"

#define NOTES 64

/* Atomic: the allocation below re-enters dlsym, which the compiler does
 * not expect of malloc. */
static char *g_note[NOTES];
static _Atomic int g_nnote;

typedef void *(*dlsym_fn)(void *, const char *);

/* RTLD_NEXT lookups go to libc (this file's own caller is the executable,
 * so the real RTLD_NEXT would find the interposers themselves); others to
 * the real dlsym. Each lookup first keeps a copy of the name it was asked. */
__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name) {
  static dlsym_fn real;
  static void *libc;
  char *note = malloc(strlen(name) + 1);
  if (note) {
    strcpy(note, name);
    int i = atomic_fetch_add(&g_nnote, 1);
    if (i < NOTES)
      g_note[i] = note;
  }
  if (!real)
    real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real)
    real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!real)
    real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
  if (!real)
    return NULL;
  if (handle != RTLD_NEXT)
    return real(handle, name);
  if (!libc)
    libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return libc ? real(libc, name) : NULL;
}

__attribute__((noipa)) static void *kept_site(size_t n) {
  char *p = malloc(n);
  if (p)
    memset(p, 7, n);
  return p;
}

int main(void) {
  /* The first allocation, unless the start-up made one already, looks the
   * next allocator up. What dlsym allocated then came from the arena. */
  void *first = malloc(1);
  __asm__ volatile("" : : "r"(first) : "memory"); /* not elided */
  free(first);
  int found_malloc = 0;
  for (int i = 0; i < g_nnote && i < NOTES; i++)
    if (g_note[i] && strcmp(g_note[i], "malloc") == 0)
      found_malloc = 1;
  if (!found_malloc) {
    fprintf(stderr,
            "wl_heap_boot: dlsym was never asked for malloc (%d lookups seen): not interposed\n",
            g_nnote);
    return 1;
  }
  int n = g_nnote < NOTES ? g_nnote : NOTES;
  printf("boot_blocks=%d\n", n);
  /* Grow one, free the rest: the grown copy keeps the name. */
  char *grown = realloc(g_note[0], 4096);
  if (!grown || strlen(grown) == 0 || strlen(grown) > 64) {
    fprintf(stderr, "wl_heap_boot: realloc of an arena block lost its contents\n");
    return 1;
  }
  memset(grown + 100, 1, 3996);
  free(grown);
  for (int i = 1; i < n; i++)
    free(g_note[i]);
  free(NULL);

  /* Allocations before the start (linked: profiling starts only at
   * wl_start), which must not delay the sampling after it. */
  for (int i = 0; i < 262144; i++) {
    void *p = malloc(256);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
  /* Ordinary work afterwards, profiled, with a known live set. */
  wl_start();
  enum { KEEP = 2000, SIZE = 1000 };
  static void *keep[KEEP];
  for (int round = 0; round < 200; round++)
    for (int i = 0; i < 2000; i++) {
      void *p = malloc(16 + (size_t)(i % 500));
      if (!p)
        return 1;
      free(p);
    }
  for (int i = 0; i < KEEP; i++)
    if (!(keep[i] = kept_site(SIZE)))
      return 1;
  printf("true_live=%d\n", KEEP * SIZE);
  printf("boot ok\n");
  fflush(stdout);
  return 0;
}
