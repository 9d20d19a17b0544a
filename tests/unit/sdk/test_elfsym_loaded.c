/* Symbols from loaded memory (sdk/elfsym_loaded.c), not from files: a
 * library whose file is gone, the main executable and the vDSO. Built as
 * a PIE and as a non-PIE executable (test_elfsym_loaded_nopie). */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "elfsym.h"
#include "elfsym_test_util.h"
#include "pp_test.h"
#include "procmaps.h"

static char g_tmpdir[PATH_MAX];

/* A function of the main executable, to find its image by. */
__attribute__((noinline, used)) static int elfsym_loaded_probe(int n) {
  return n * 3 + 1;
}

/* Read from loaded memory only (what a process without CAP_SYS_ADMIN gets for
 * a deleted library): build id and .dynsym. */
static void test_elfsym_reads_loaded_object_from_memory(void) {
  void *z = dlsym(RTLD_DEFAULT, "zlibVersion");
  Dl_info info;
  char want[256];
  PP_CHECK(z && dladdr(z, &info) != 0 && info.dli_fname);
  if (!z)
    return;
  readelf_build_id(info.dli_fname, want, sizeof want);
  PP_CHECK(strlen(want) >= 16);

  char copy[PATH_MAX + 32];
  void *h = dlopen_copy(info.dli_fname, g_tmpdir, "libz-mem.so", copy, sizeof copy);
  if (!h)
    return;
  PP_CHECK_INT(unlink(copy), ==, 0);
  uint64_t fn = (uint64_t)(uintptr_t)dlsym(h, "zlibVersion");
  PP_CHECK(fn != 0);
  procmaps m;
  const procmaps_entry *e = NULL;
  if (mapping_of(fn, &m, &e) != 0 || !e) {
    PP_CHECK(!"zlibVersion's mapping is in /proc/self/maps");
    dlclose(h);
    return;
  }
  elfsym_image *img = elfsym_image_from_loaded(e->start);
  PP_CHECK(img != NULL);
  if (img) {
    PP_CHECK_STR(elfsym_build_id(img), want);
    uint64_t vaddr;
    elfsym_symbol sym;
    PP_CHECK(elfsym_pc_to_vaddr(img, e->start, e->offset, fn + 2, &vaddr));
    PP_CHECK(elfsym_lookup(img, vaddr, NULL, &sym));
    PP_CHECK_STR(sym.name, "zlibVersion");
    PP_CHECK(elfsym_symbol_count(img) > 50);
    elfsym_image_free(img);
  }
  procmaps_free(&m);
  dlclose(h);

  /* the main executable too: its build id, read from memory */
  char exe[PATH_MAX];
  self_exe(exe, sizeof exe);
  readelf_build_id(exe, want, sizeof want);
  img = elfsym_image_from_loaded((uint64_t)(uintptr_t)&elfsym_loaded_probe);
  PP_CHECK(img != NULL);
  if (img)
    PP_CHECK_STR(elfsym_build_id(img), want);
  elfsym_image_free(img);
  PP_CHECK(elfsym_image_from_loaded(16) == NULL);
}

static void test_elfsym_reads_vdso_from_memory(void) {
  uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (!base) {
    fprintf(stderr, "no vDSO in this process: nothing to check\n");
    return;
  }
  procmaps m;
  PP_CHECK_INT(procmaps_read_self(&m), ==, 0);
  for (size_t i = 0; i < m.n; i++) {
    if (m.v[i].start != base)
      continue;
    PP_CHECK_STR(m.v[i].path, "[vdso]");
    elfsym_image *img = elfsym_image_from_memory((const void *)base, m.v[i].end - m.v[i].start);
    PP_CHECK(img != NULL);
    if (img) {
      PP_CHECK(elfsym_symbol_count(img) > 0);
      void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
      void *gt = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
      if (gt) {
        uint64_t vaddr;
        elfsym_symbol sym;
        PP_CHECK(elfsym_pc_to_vaddr(img, base, 0, (uint64_t)(uintptr_t)gt + 1, &vaddr));
        PP_CHECK(elfsym_lookup(img, vaddr, NULL, &sym));
        PP_CHECK(strstr(sym.name, "clock_gettime") != NULL);
      }
      if (h)
        dlclose(h);
      elfsym_image_free(img);
    }
  }
  procmaps_free(&m);
}

int main(void) {
  pp_test_mkdtemp(g_tmpdir, sizeof g_tmpdir, "elfsym-loaded");
  PP_RUN(test_elfsym_reads_loaded_object_from_memory);
  PP_RUN(test_elfsym_reads_vdso_from_memory);
  rmdir(g_tmpdir);
  PP_DONE();
}
