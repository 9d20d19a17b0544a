/* ELF symbols and build ids of real files: this test binary, libc, a deleted
 * library copy, and broken files. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elfsym.h"
#include "elfsym_test_util.h"
#include "pp_test.h"
#include "procmaps.h"

static volatile int g_sink;

/* A real function with a known name and a body long enough to point inside. */
__attribute__((noinline, used)) static int elfsym_probe_target(int n) {
  int acc = 0;
  for (int i = 0; i < n; i++)
    acc += i * g_sink + (acc >> 3);
  return acc;
}

/* Assembly with an entry point inside a larger function: outer covers 7 bytes,
 * inner only its first 2, so the last byte belongs to outer. */
__asm__(".text\n"
        ".globl elfsym_outer_asm\n.hidden elfsym_outer_asm\n"
        ".type elfsym_outer_asm,@function\nelfsym_outer_asm:\n nop\n nop\n"
        ".globl elfsym_inner_asm\n.hidden elfsym_inner_asm\n"
        ".type elfsym_inner_asm,@function\nelfsym_inner_asm:\n nop\n nop\n"
        ".size elfsym_inner_asm, 2\n nop\n nop\n ret\n"
        ".size elfsym_outer_asm, .-elfsym_outer_asm\n");
void elfsym_outer_asm(void);
void elfsym_inner_asm(void);

/* An entry point with no .type (STT_NOTYPE), as hand-written assembly
 * often has (ISA-L's deflate), right after a typed function without a
 * size: its bytes must get its own name, not the function's before it. */
__asm__(".text\n"
        ".globl elfsym_typed_before_asm\n.hidden elfsym_typed_before_asm\n"
        ".type elfsym_typed_before_asm,@function\nelfsym_typed_before_asm:\n nop\n ret\n"
        ".globl elfsym_notype_asm\n.hidden elfsym_notype_asm\n"
        "elfsym_notype_asm:\n nop\n nop\n nop\n ret\n");
void elfsym_typed_before_asm(void);
void elfsym_notype_asm(void);

static char g_tmpdir[PATH_MAX];

static elfsym_fileid fileid_of(const procmaps_entry *e) {
  elfsym_fileid id = {e->path, e->inode, e->dev_major, e->dev_minor, e->deleted, e->start, e->end};
  return id;
}

/* Symbolizes a runtime pc through the cache; name or NULL. */
static const char *symbolize(elfsym_cache *c, uint64_t pc, elfsym_symbol *sym,
                             const char **build_id) {
  procmaps m;
  const procmaps_entry *e;
  const char *name = NULL;
  if (mapping_of(pc, &m, &e) != 0)
    return NULL;
  elfsym_fileid id = fileid_of(e);
  elfsym_image *img = elfsym_cache_get(c, &id);
  uint64_t vaddr;
  if (img && elfsym_pc_to_vaddr(img, e->start, e->offset, pc, &vaddr) &&
      elfsym_lookup(img, vaddr, NULL, sym)) {
    name = sym->name;
    if (build_id)
      *build_id = elfsym_build_id(img);
  }
  procmaps_free(&m);
  return name;
}

static void test_elfsym_resolves_function_in_this_binary(void) {
  elfsym_cache *c = elfsym_cache_new();
  elfsym_symbol sym;
  const char *bid = NULL;
  uint64_t pc = (uint64_t)(uintptr_t)&elfsym_probe_target;
  PP_CHECK_STR(symbolize(c, pc, &sym, &bid), "elfsym_probe_target");
  PP_CHECK(sym.size > 8);
  PP_CHECK_STR(symbolize(c, pc + 5, &sym, NULL), "elfsym_probe_target");
  PP_CHECK_STR(symbolize(c, pc + sym.size - 1, &sym, NULL), "elfsym_probe_target");
  PP_CHECK(elfsym_probe_target(3) >= 0);

  char exe[PATH_MAX], want[256];
  self_exe(exe, sizeof exe);
  readelf_build_id(exe, want, sizeof want);
  PP_CHECK(strlen(want) >= 16);
  PP_CHECK_STR(bid, want);
  elfsym_cache_free(c);
}

static void test_elfsym_finds_outer_symbol_past_inner_entry(void) {
  elfsym_cache *c = elfsym_cache_new();
  elfsym_symbol sym;
  uint64_t outer = (uint64_t)(uintptr_t)&elfsym_outer_asm;
  PP_CHECK((uint64_t)(uintptr_t)&elfsym_inner_asm == outer + 2);
  PP_CHECK_STR(symbolize(c, outer + 1, &sym, NULL), "elfsym_outer_asm");
  PP_CHECK_STR(symbolize(c, outer + 3, &sym, NULL), "elfsym_inner_asm");
  PP_CHECK_STR(symbolize(c, outer + 6, &sym, NULL), "elfsym_outer_asm");
  elfsym_cache_free(c);
}

static void test_elfsym_names_untyped_assembly_entries(void) {
  elfsym_cache *c = elfsym_cache_new();
  elfsym_symbol sym;
  uint64_t pc = (uint64_t)(uintptr_t)&elfsym_notype_asm;
  PP_CHECK_STR(symbolize(c, (uint64_t)(uintptr_t)&elfsym_typed_before_asm, &sym, NULL),
               "elfsym_typed_before_asm");
  PP_CHECK_STR(symbolize(c, pc + 2, &sym, NULL), "elfsym_notype_asm");
  elfsym_cache_free(c);
}

/* A Debian library nobody here wrote: ISA-L's deflate body is untyped and
 * sits after crc32_gzip_refl_by16_10 (a typed, sizeless function): from its
 * file and from memory, the name is its own. */
static void test_elfsym_names_isal_untyped_deflate_body(void) {
  void *isal = dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);
  void *fn = isal ? dlsym(isal, "isal_deflate_icf_body_hash_hist_04") : NULL;
  if (!fn) {
    if (isal)
      dlclose(isal);
    PP_SKIP("libisal.so.2 or its AVX-512 deflate body not found");
  }
  elfsym_cache *c = elfsym_cache_new();
  elfsym_symbol sym;
  uint64_t at = (uint64_t)(uintptr_t)fn + 16;
  PP_CHECK_STR(symbolize(c, at, &sym, NULL), "isal_deflate_icf_body_hash_hist_04");
  procmaps m;
  const procmaps_entry *e;
  PP_CHECK_INT(mapping_of(at, &m, &e), ==, 0);
  elfsym_image *img = elfsym_image_from_loaded(at);
  PP_CHECK(img != NULL);
  uint64_t vaddr;
  if (img && elfsym_pc_to_vaddr(img, e->start, e->offset, at, &vaddr)) {
    PP_CHECK(elfsym_lookup(img, vaddr, NULL, &sym));
    PP_CHECK_STR(sym.name, "isal_deflate_icf_body_hash_hist_04");
  }
  elfsym_image_free(img);
  procmaps_free(&m);
  dlclose(isal);
  elfsym_cache_free(c);
}

static void test_elfsym_resolves_libc_write(void) {
  elfsym_cache *c = elfsym_cache_new();
  elfsym_symbol sym;
  const char *bid = NULL;
  /* libc's own write, not a sanitizer's interceptor of it */
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *w = libc ? dlsym(libc, "write") : NULL;
  PP_CHECK(w != NULL);
  if (libc)
    dlclose(libc);
  if (!w)
    return;
  uint64_t pc = (uint64_t)(uintptr_t)w;
  PP_CHECK_STR(symbolize(c, pc, &sym, &bid), "write");
  PP_CHECK_STR(symbolize(c, pc + 3, &sym, NULL), "write");

  Dl_info info;
  char want[256];
  PP_CHECK(dladdr(w, &info) != 0 && info.dli_fname);
  readelf_build_id(info.dli_fname, want, sizeof want);
  PP_CHECK(strlen(want) >= 16);
  PP_CHECK_STR(bid, want);
  elfsym_cache_free(c);
}

/* The ELF virtual address of a runtime pc, and the file mapped there. */
static int vaddr_of(uint64_t pc, char *path, size_t pathlen, uint64_t *vaddr) {
  procmaps m;
  const procmaps_entry *e;
  if (mapping_of(pc, &m, &e) != 0)
    return -1;
  snprintf(path, pathlen, "%s", e->path);
  elfsym_image *img = elfsym_image_open(e->path);
  int ok = img && elfsym_pc_to_vaddr(img, e->start, e->offset, pc, vaddr);
  elfsym_image_free(img);
  procmaps_free(&m);
  return ok ? 0 : -1;
}

/* glibc's .symtab, and any object's that versions its symbols, names them
 * "vfunc@@VERS_2" and "vfunc@VERS_1": the names come back without the
 * version, from the whole table and from the few path alike. */
static void test_elfsym_names_carry_no_symbol_version(void) {
  void *h = dlopen(ELFSYM_VERSIONED_LIB, RTLD_NOW | RTLD_LOCAL);
  PP_CHECK(h != NULL);
  if (!h)
    return;
  void *v1 = dlvsym(h, "vfunc", "VERS_1"), *v2 = dlvsym(h, "vfunc", "VERS_2");
  PP_CHECK(v1 && v2 && v1 != v2);
  elfsym_cache *c = elfsym_cache_new();
  elfsym_symbol sym;
  if (v1 && v2) {
    PP_CHECK_STR(symbolize(c, (uint64_t)(uintptr_t)v2, &sym, NULL), "vfunc");
    PP_CHECK_STR(symbolize(c, (uint64_t)(uintptr_t)v1 + 1, &sym, NULL), "vfunc");
    char path[PATH_MAX];
    uint64_t vaddr;
    PP_CHECK(vaddr_of((uint64_t)(uintptr_t)v2, path, sizeof path, &vaddr) == 0);
    elfsym_image *few = elfsym_image_open(path);
    PP_CHECK(few != NULL);
    if (few) {
      elfsym_symbol out[1];
      bool found[1] = {false};
      elfsym_lookup_many(few, &vaddr, 1, NULL, out, found);
      PP_CHECK(found[0]);
      PP_CHECK_STR(found[0] && out[0].name ? out[0].name : "(none)", "vfunc");
      PP_CHECK(!elfsym_table_read(few)); /* the few path answered */
      elfsym_image_free(few);
    }
  }
  elfsym_cache_free(c);
  dlclose(h);
}

/* Probes around vaddr: every stride bytes over +-span, plus each symbol's
 * first, last and next byte and the byte before it (from the full table). */
static size_t probes_around(elfsym_image *full, uint64_t vaddr, uint64_t span, uint64_t stride,
                            uint64_t *out, size_t max) {
  size_t n = 0;
  for (uint64_t a = vaddr > span ? vaddr - span : 1; a < vaddr + span && n + 5 <= max;
       a += stride) {
    elfsym_symbol s;
    out[n++] = a;
    if (elfsym_lookup(full, a, NULL, &s)) {
      out[n++] = s.addr;
      out[n++] = s.addr - 1;
      out[n++] = s.addr + (s.size ? s.size - 1 : 0);
      out[n++] = s.addr + s.size;
    }
  }
  return n;
}

/* Asks the few path in batches of `batch` (each on a fresh image, so every
 * batch is a first pass) and compares every answer with the full table's. */
static void check_few_matches_full(const char *path, const uint64_t *v, size_t n, size_t batch,
                                   elfsym_demangle_fn demangle, size_t *named) {
  elfsym_image *full = elfsym_image_open(path);
  PP_CHECK(full != NULL);
  if (!full)
    return;
  elfsym_symbol *got = calloc(batch, sizeof *got);
  bool *found = calloc(batch, sizeof *found);
  int bad = 0;
  for (size_t i = 0; i < n && got && found; i += batch) {
    size_t k = n - i < batch ? n - i : batch;
    elfsym_image *few = elfsym_image_open(path);
    PP_CHECK(few != NULL);
    if (!few)
      break;
    elfsym_lookup_many(few, v + i, k, demangle, got, found);
    PP_CHECK(k > ELFSYM_FEW_MAX || !elfsym_table_read(few));
    for (size_t j = 0; j < k && bad < 5; j++) {
      elfsym_symbol want;
      bool w = elfsym_lookup(full, v[i + j], demangle, &want);
      if (w != found[j] || (w && (strcmp(want.name, got[j].name) != 0 ||
                                  strcmp(want.demangled, got[j].demangled) != 0 ||
                                  want.addr != got[j].addr || want.size != got[j].size))) {
        fprintf(stderr, "%s: vaddr %#llx: full %s, few %s\n", path, (unsigned long long)v[i + j],
                w ? want.name : "(none)", found[j] ? got[j].name : "(none)");
        bad++;
      }
      *named += w;
    }
    elfsym_image_free(few);
  }
  PP_CHECK_INT(bad, ==, 0);
  free(got);
  free(found);
  elfsym_image_free(full);
}

static char *fake_demangle(const char *mangled, char *buf, size_t *len, int *status) {
  (void)buf;
  (void)len;
  size_t n = strlen(mangled);
  char *d = malloc(n + 3);
  if (d)
    snprintf(d, n + 3, "d:%s", mangled);
  *status = d ? 0 : -1;
  return d;
}

static double ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Figures, not checks: the best of 9 runs, each on a fresh image (the
 * page cache warm), of naming n addresses by the few path and by the
 * whole table (read and sorted). */
static void print_few_figures(const char *path, const uint64_t *v, size_t nv) {
  static const size_t ns[] = {1, 16, ELFSYM_FEW_MAX};
  elfsym_symbol s[ELFSYM_FEW_MAX];
  bool f[ELFSYM_FEW_MAX];
  double few[3] = {1e9, 1e9, 1e9}, whole = 1e9;
  for (int r = 0; r < 9; r++) {
    for (size_t k = 0; k < 3 && ns[k] <= nv; k++) {
      elfsym_image *img = elfsym_image_open(path);
      double t0 = ms_now();
      if (img)
        elfsym_lookup_many(img, v, ns[k], NULL, s, f);
      double t = ms_now() - t0;
      few[k] = t < few[k] ? t : few[k];
      elfsym_image_free(img);
    }
    elfsym_image *img = elfsym_image_open(path);
    double t0 = ms_now();
    if (img)
      (void)elfsym_lookup(img, v[0], NULL, s);
    double t = ms_now() - t0;
    whole = t < whole ? t : whole;
    elfsym_image_free(img);
  }
  fprintf(stderr,
          "figure: %s: naming 1 / 16 / %d addresses by one pass %.3f / %.3f / %.3f ms, by the "
          "whole table %.3f ms\n",
          path, ELFSYM_FEW_MAX, few[0], few[1], few[2], whole);
}

static void test_elfsym_few_path_names_as_the_full_table(void) {
  static uint64_t v[40000];
  char path[PATH_MAX];
  uint64_t vaddr;
  /* libc (no .symtab: its separate debug file when installed, else .dynsym) */
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *w = libc ? dlsym(libc, "write") : NULL;
  if (libc)
    dlclose(libc);
  PP_CHECK(w && vaddr_of((uint64_t)(uintptr_t)w, path, sizeof path, &vaddr) == 0);
  elfsym_image *full = elfsym_image_open(path);
  PP_CHECK(full != NULL);
  if (!full)
    return;
  size_t n = probes_around(full, vaddr, 1u << 20, 331, v, sizeof v / sizeof v[0]);
  elfsym_image_free(full);
  {
    static uint64_t spread[ELFSYM_FEW_MAX];
    for (size_t i = 0; i < ELFSYM_FEW_MAX; i++)
      spread[i] = v[i * (n / ELFSYM_FEW_MAX)];
    print_few_figures(path, spread, n >= ELFSYM_FEW_MAX ? ELFSYM_FEW_MAX : 0);
  }
  size_t named = 0, ns = 0;
  static uint64_t some[400];
  for (size_t i = 0; i < n && ns < 400; i += n / 400 + 1)
    some[ns++] = v[i];
  check_few_matches_full(path, some, ns, 1, NULL, &named);
  check_few_matches_full(path, v, n, 13, fake_demangle, &named);
  check_few_matches_full(path, v, n, ELFSYM_FEW_MAX, NULL, &named);
  check_few_matches_full(path, v, n, 3 * ELFSYM_FEW_MAX, NULL, &named); /* the full table */
  PP_CHECK(named > n);

  /* this program (.symtab), with the inner entry point of elfsym_outer_asm */
  uint64_t outer;
  PP_CHECK(vaddr_of((uint64_t)(uintptr_t)&elfsym_outer_asm, path, sizeof path, &outer) == 0);
  full = elfsym_image_open(path);
  PP_CHECK(full != NULL);
  if (!full)
    return;
  n = probes_around(full, outer, 1u << 16, 7, v, sizeof v / sizeof v[0]);
  for (uint64_t a = outer; a < outer + 8 && n < sizeof v / sizeof v[0]; a++)
    v[n++] = a;
  elfsym_image_free(full);
  named = 0;
  check_few_matches_full(path, v, n, 5, fake_demangle, &named);
  check_few_matches_full(path, v, n, 29, NULL, &named);
  PP_CHECK(named > n / 2);
}

static void test_elfsym_few_path_keeps_answers_then_reads_the_table(void) {
  char path[PATH_MAX];
  uint64_t probe, outer;
  PP_CHECK(vaddr_of((uint64_t)(uintptr_t)&elfsym_probe_target, path, sizeof path, &probe) == 0);
  PP_CHECK(vaddr_of((uint64_t)(uintptr_t)&elfsym_outer_asm, path, sizeof path, &outer) == 0);
  elfsym_image *img = elfsym_image_open(path);
  PP_CHECK(img != NULL);
  if (!img)
    return;
  uint64_t v[ELFSYM_FEW_MAX + 1] = {probe + 1, outer + 6, outer + 3, probe + 1};
  elfsym_symbol s[ELFSYM_FEW_MAX + 1];
  bool f[ELFSYM_FEW_MAX + 1];
  elfsym_lookup_many(img, v, 4, NULL, s, f);
  PP_CHECK(f[0] && f[1] && f[2] && f[3]);
  PP_CHECK_STR(f[0] ? s[0].name : "", "elfsym_probe_target");
  PP_CHECK_STR(f[1] ? s[1].name : "", "elfsym_outer_asm");
  PP_CHECK_STR(f[2] ? s[2].name : "", "elfsym_inner_asm");
  PP_CHECK_STR(f[3] ? s[3].name : "", "elfsym_probe_target");
  PP_CHECK(!elfsym_table_read(img));
  /* asked again, with one new address: still the few path, answers kept */
  v[3] = outer + 1;
  elfsym_lookup_many(img, v, 4, NULL, s, f);
  PP_CHECK_STR(f[0] ? s[0].name : "", "elfsym_probe_target");
  PP_CHECK_STR(f[3] ? s[3].name : "", "elfsym_outer_asm");
  PP_CHECK(!elfsym_table_read(img));
  /* past ELFSYM_FEW_MAX distinct addresses: the whole table, same answers */
  for (size_t i = 0; i <= ELFSYM_FEW_MAX; i++)
    v[i] = probe + i * 3;
  v[0] = outer + 3;
  v[ELFSYM_FEW_MAX] = outer + 1000000;
  elfsym_lookup_many(img, v, ELFSYM_FEW_MAX + 1, NULL, s, f);
  PP_CHECK(elfsym_table_read(img));
  PP_CHECK_STR(f[0] ? s[0].name : "", "elfsym_inner_asm");
  PP_CHECK_STR(f[1] ? s[1].name : "", "elfsym_probe_target");
  elfsym_image_free(img);
}

static void test_elfsym_cache_shares_images_by_build_id(void) {
  char exe[PATH_MAX], copy[PATH_MAX + 32];
  if (self_exe(exe, sizeof exe) != 0)
    return;
  snprintf(copy, sizeof copy, "%s/copy-of-test", g_tmpdir);
  PP_CHECK_INT(copy_file(exe, copy, -1), ==, 0);
  struct stat a, b;
  PP_CHECK(stat(exe, &a) == 0 && stat(copy, &b) == 0);
  elfsym_cache *c = elfsym_cache_new();
  elfsym_fileid ia = {exe, (uint64_t)a.st_ino, 1, 1, false, 0, 0};
  elfsym_fileid ib = {copy, (uint64_t)b.st_ino, 1, 1, false, 0, 0};
  elfsym_image *x = elfsym_cache_get(c, &ia), *y = elfsym_cache_get(c, &ib);
  PP_CHECK(x != NULL);
  PP_CHECK(x == y);
  PP_CHECK(elfsym_cache_get(c, &ia) == x);
  PP_CHECK_INT(elfsym_cache_images(c), ==, 1);
  PP_CHECK(elfsym_symbol_count(x) > 10);
  /* files not seen for more than `keep` generations are dropped */
  for (int i = 0; i < 3; i++)
    elfsym_cache_sweep(c, 1);
  PP_CHECK_INT(elfsym_cache_images(c), ==, 0);
  elfsym_cache_free(c);
  unlink(copy);
}

/* A stripped file gets its local functions from a debug file found by build
 * id (as libc6-dbg installs them), and not without it. */
static void test_elfsym_uses_debug_file_by_build_id(void) {
  char exe[PATH_MAX], stripped[PATH_MAX + 32], dbg[PATH_MAX + 128], cmd[6 * PATH_MAX];
  if (self_exe(exe, sizeof exe) != 0)
    return;
  elfsym_image *orig = elfsym_image_open(exe);
  PP_CHECK(orig != NULL);
  if (!orig)
    return;
  const char *bid = elfsym_build_id(orig);
  PP_CHECK(strlen(bid) > 4);
  snprintf(stripped, sizeof stripped, "%s/stripped-exe", g_tmpdir);
  snprintf(dbg, sizeof dbg, "%s/dbg/.build-id/%.2s", g_tmpdir, bid);
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' && objcopy --only-keep-debug '%s' '%s/%s.debug' && strip -o '%s' '%s'",
           dbg, exe, dbg, bid + 2, stripped, exe);
  PP_CHECK_INT(system(cmd), ==, 0);

  procmaps m;
  const procmaps_entry *e;
  uint64_t pc = (uint64_t)(uintptr_t)&elfsym_probe_target + 3, vaddr = 0;
  PP_CHECK_INT(mapping_of(pc, &m, &e), ==, 0);
  PP_CHECK(elfsym_pc_to_vaddr(orig, e->start, e->offset, pc, &vaddr));
  procmaps_free(&m);
  struct stat st;
  PP_CHECK(stat(stripped, &st) == 0);
  elfsym_fileid id = {stripped, (uint64_t)st.st_ino, 1, 1, false, 0, 0};
  elfsym_symbol sym;
  for (int with_debug = 0; with_debug < 2; with_debug++) {
    char root[PATH_MAX + 16];
    snprintf(root, sizeof root, "%s/dbg", g_tmpdir);
    elfsym_cache *c = elfsym_cache_new();
    PP_CHECK_INT(elfsym_cache_set_debug_root(c, with_debug ? root : ""), ==, 0);
    elfsym_image *img = elfsym_cache_get(c, &id);
    PP_CHECK(img != NULL);
    if (img) {
      bool found = elfsym_lookup(img, vaddr, NULL, &sym);
      PP_CHECK_INT(found, ==, with_debug);
      if (found)
        PP_CHECK_STR(sym.name, "elfsym_probe_target");
    }
    elfsym_cache_free(c);
  }
  elfsym_image_free(orig);
  snprintf(cmd, sizeof cmd, "rm -rf '%s/dbg' '%s'", g_tmpdir, stripped);
  PP_CHECK_INT(system(cmd), ==, 0);
}

/* The value `nm` gives for a symbol of path (independent reader), or 0. */
static uint64_t nm_value(const char *path, const char *symbol) {
  char cmd[PATH_MAX + 64], line[512], name[256];
  unsigned long long v = 0, value;
  char type;
  snprintf(cmd, sizeof cmd, "nm '%s' 2>/dev/null", path);
  FILE *p = popen(cmd, "r");
  if (!p)
    return 0;
  while (fgets(line, sizeof line, p))
    if (sscanf(line, "%llx %c %255s", &value, &type, name) == 3 && strcmp(name, symbol) == 0)
      v = value;
  pclose(p);
  return v;
}

/* The name elfsym gives vaddr in the file at path, looked up through a cache
 * whose debug root is root (NULL: the default); "" if none. */
static const char *name_in(const char *path, const char *root, uint64_t vaddr, char *out,
                           size_t outlen) {
  struct stat st;
  elfsym_symbol sym;
  out[0] = '\0';
  if (stat(path, &st) != 0)
    return out;
  elfsym_fileid id = {path, (uint64_t)st.st_ino, 1, 1, false, 0, 0};
  elfsym_cache *c = elfsym_cache_new();
  if (!c || elfsym_cache_set_debug_root(c, root) != 0) {
    elfsym_cache_free(c);
    return out;
  }
  elfsym_image *img = elfsym_cache_get(c, &id);
  if (img && elfsym_lookup(img, vaddr, NULL, &sym))
    snprintf(out, outlen, "%s", sym.name);
  elfsym_cache_free(c);
  return out;
}

static int sh(const char *cmd) {
  int rc = system(cmd);
  if (rc != 0)
    fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
  return rc;
}

/* A stripped library with a .gnu_debuglink finds its debug file where GDB
 * looks: next to it, in .debug/ beside it, and under the debug root at the
 * library's own directory; a debug file whose CRC does not match the link
 * is refused, and a debug root of "" turns the lookup off. */
static void test_elfsym_uses_debug_file_by_debuglink(void) {
  char dir[PATH_MAX + 16], lib[PATH_MAX + 32], dbg[PATH_MAX + 32], root[PATH_MAX + 16];
  char cmd[8 * PATH_MAX], name[256];
  uint64_t local = nm_value(ELFSYM_LINK_LIB, "elfsym_link_local");
  uint64_t exported = nm_value(ELFSYM_LINK_LIB, "elfsym_link_exported");
  PP_CHECK(local != 0 && exported != 0);
  snprintf(dir, sizeof dir, "%s/link/lib", g_tmpdir);
  snprintf(root, sizeof root, "%s/link/root", g_tmpdir);
  snprintf(lib, sizeof lib, "%s/libl.so", dir);
  snprintf(dbg, sizeof dbg, "%s/libl.so.debug", dir);
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s/.debug' '%s%s' && objcopy --only-keep-debug '%s' '%s' && "
           "objcopy --strip-debug --strip-unneeded '%s' '%s' && "
           "objcopy --add-gnu-debuglink='%s' '%s'",
           dir, root, dir, ELFSYM_LINK_LIB, dbg, ELFSYM_LINK_LIB, lib, dbg, lib);
  PP_CHECK_INT(sh(cmd), ==, 0);

  /* The link as written, and only .dynsym without a debug file. */
  elfsym_image *img = elfsym_image_open(lib);
  PP_CHECK(img != NULL);
  if (img) {
    uint32_t crc = 0;
    PP_CHECK_STR(elfsym_debuglink(img, &crc), "libl.so.debug");
    PP_CHECK(crc != 0);
    elfsym_image_free(img);
  }
  PP_CHECK_STR(name_in(lib, "", exported + 1, name, sizeof name), "elfsym_link_exported");
  PP_CHECK_STR(name_in(lib, "", local + 1, name, sizeof name), "");

  const char *where[] = {"next to it", ".debug/", "under the root"};
  for (int i = 0; i < 3; i++) {
    if (i == 1)
      snprintf(cmd, sizeof cmd, "mv '%s' '%s/.debug/'", dbg, dir);
    else if (i == 2)
      snprintf(cmd, sizeof cmd, "mv '%s/.debug/libl.so.debug' '%s%s/'", dir, root, dir);
    PP_CHECK_INT(i == 0 ? 0 : sh(cmd), ==, 0);
    fprintf(stderr, "debug file %s\n", where[i]);
    PP_CHECK_STR(name_in(lib, root, local + 1, name, sizeof name), "elfsym_link_local");
    PP_CHECK_STR(name_in(lib, root, exported + 1, name, sizeof name), "elfsym_link_exported");
  }
  /* Under the root only with that root; "" turns everything off. */
  PP_CHECK_STR(name_in(lib, "", local + 1, name, sizeof name), "");

  /* One byte more: still a valid ELF file, but not the one the link names. */
  snprintf(cmd, sizeof cmd, "mv '%s%s/libl.so.debug' '%s' && printf x >> '%s'", root, dir, dbg,
           dbg);
  PP_CHECK_INT(sh(cmd), ==, 0);
  PP_CHECK_STR(name_in(lib, root, local + 1, name, sizeof name), "");
  PP_CHECK_STR(name_in(lib, root, exported + 1, name, sizeof name), "elfsym_link_exported");

  snprintf(cmd, sizeof cmd, "rm -rf '%s/link'", g_tmpdir);
  PP_CHECK_INT(sh(cmd), ==, 0);
}

static void test_elfsym_reads_deleted_library_through_map_files(void) {
  void *z = dlsym(RTLD_DEFAULT, "zlibVersion");
  Dl_info info;
  PP_CHECK(z && dladdr(z, &info) != 0 && info.dli_fname);
  if (!z)
    return;
  char copy[PATH_MAX + 32];
  void *h = dlopen_copy(info.dli_fname, g_tmpdir, "libz copy.so", copy, sizeof copy);
  if (!h)
    return;
  void *fn = dlsym(h, "zlibVersion");
  PP_CHECK(fn != NULL && fn != z);
  PP_CHECK_INT(unlink(copy), ==, 0);

  procmaps m;
  const procmaps_entry *e;
  PP_CHECK_INT(mapping_of((uint64_t)(uintptr_t)fn, &m, &e), ==, 0);
  PP_CHECK(e->deleted);
  PP_CHECK(strstr(e->path, "libz copy.so") != NULL);
  elfsym_cache *c = elfsym_cache_new();
  elfsym_fileid id = fileid_of(e);
  elfsym_image *img = elfsym_cache_get(c, &id);
  elfsym_symbol sym;
  uint64_t vaddr;
  PP_CHECK(img != NULL);
  if (img) {
    PP_CHECK(elfsym_pc_to_vaddr(img, e->start, e->offset, (uint64_t)(uintptr_t)fn, &vaddr));
    PP_CHECK(elfsym_lookup(img, vaddr, NULL, &sym));
    PP_CHECK_STR(sym.name, "zlibVersion");
  }
  elfsym_cache_free(c);
  procmaps_free(&m);
  dlclose(h);
}

int main(void) {
  pp_test_mkdtemp(g_tmpdir, sizeof g_tmpdir, "elfsym");
  PP_RUN(test_elfsym_resolves_function_in_this_binary);
  PP_RUN(test_elfsym_finds_outer_symbol_past_inner_entry);
  PP_RUN(test_elfsym_resolves_libc_write);
  PP_RUN(test_elfsym_names_carry_no_symbol_version);
  PP_RUN(test_elfsym_few_path_names_as_the_full_table);
  PP_RUN(test_elfsym_few_path_keeps_answers_then_reads_the_table);
  PP_RUN(test_elfsym_cache_shares_images_by_build_id);
  PP_RUN(test_elfsym_uses_debug_file_by_build_id);
  PP_RUN(test_elfsym_uses_debug_file_by_debuglink);
  PP_RUN(test_elfsym_reads_deleted_library_through_map_files);
  PP_RUN(test_elfsym_names_untyped_assembly_entries);
  PP_RUN(test_elfsym_names_isal_untyped_deflate_body);
  rmdir(g_tmpdir);
  PP_DONE();
}
