/* cfi_build (sdk/cfi_build.c): time to compile an object's .eh_frame into
 * unwind rows, the table's memory, and the cost of one cfi_lookup (random
 * PCs inside the table, warm caches), for libc, libstdc++ and gcc's cc1
 * (a ~30 MB binary). Each figure is the median of the runs.
 * A benchmark: it never fails on time.
 *   bench_cfi_build [--runs N] [--rows FILE] */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_rows.h"
#include "cfi.h"
#include "bench_clock.h"

#define MAX_RUNS 25
#define BUILDS_PER_RUN 5 /* a run's build time: the fastest of these */
#define LOOKUPS (1 << 20)

static double now_ns(void) {
  return (double)bench_ns(CLOCK_MONOTONIC);
}

/* A private copy of path's .eh_frame and its address; 0, or -1. */
static int read_eh_frame(const char *path, uint8_t **data, size_t *len, uint64_t *addr) {
  int rc = -1, fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  elf_version(EV_CURRENT);
  Elf *e = elf_begin(fd, ELF_C_READ, NULL);
  size_t shstrndx;
  if (!e || elf_getshdrstrndx(e, &shstrndx) != 0)
    goto out;
  for (Elf_Scn *s = elf_nextscn(e, NULL); s && rc != 0; s = elf_nextscn(e, s)) {
    GElf_Shdr sh;
    const char *name = gelf_getshdr(s, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
    Elf_Data *d = name && strcmp(name, ".eh_frame") == 0 ? elf_rawdata(s, NULL) : NULL;
    if (!d || !d->d_buf || !(*data = malloc(d->d_size)))
      continue;
    memcpy(*data, d->d_buf, d->d_size);
    *len = d->d_size;
    *addr = sh.sh_addr;
    rc = 0;
  }
out:
  if (e)
    elf_end(e);
  close(fd);
  return rc;
}

/* gcc's cc1, as gcc names it ("cc1" alone when gcc does not know). */
static const char *cc1_path(void) {
  static char path[4096];
  FILE *p = popen("gcc -print-prog-name=cc1 2>/dev/null", "r");
  if (p) {
    if (!fgets(path, sizeof path, p))
      path[0] = 0;
    pclose(p);
  }
  path[strcspn(path, "\n")] = 0;
  return path[0] == '/' ? path : "/usr/lib/gcc/x86_64-linux-gnu/12/cc1";
}

typedef struct object {
  const char *key, *label, *path;
} object;

static int bench_object(const object *ob, int runs, bench_rows_opts *o) {
  uint8_t *data = NULL;
  size_t len = 0;
  uint64_t addr = 0;
  if (read_eh_frame(ob->path, &data, &len, &addr) != 0) {
    fprintf(stderr, "bench_cfi_build: cannot read .eh_frame of %s (%s): its rows are missing\n",
            ob->label, ob->path);
    return 0;
  }
  double build_ms[MAX_RUNS], lookup_ns[MAX_RUNS], kib[MAX_RUNS];
  cfi_stats st = {0};
  cfi_table *t = NULL;
  uint32_t nrows = 0;
  volatile uint32_t sink = 0;
  for (int r = 0; r < runs; r++) {
    double best = 0;
    for (int b = 0; b < BUILDS_PER_RUN; b++) {
      free(t);
      double t0 = now_ns();
      if (cfi_build(data, len, addr, 0, CFI_EH_FRAME, NULL, &t, &st) != 0) {
        fprintf(stderr, "bench_cfi_build: cfi_build failed on %s\n", ob->path);
        free(data);
        return 1;
      }
      double dt = now_ns() - t0;
      if (b == 0 || dt < best)
        best = dt;
    }
    build_ms[r] = best / 1e6;
    kib[r] = (double)t->bytes / 1024;
    nrows = t->nrows;
    uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)r, span = t->hi - t->lo;
    for (int i = 0; i < 4096; i++) /* warm the table */
      sink += cfi_lookup(t, t->lo + (uintptr_t)(i * 4099u % span))->pc;
    double t0 = now_ns();
    for (int i = 0; i < LOOKUPS; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      sink += cfi_lookup(t, t->lo + (uintptr_t)(x % span))->kind;
    }
    lookup_ns[r] = (now_ns() - t0) / LOOKUPS;
  }
  (void)sink;
  /* The index a deferred walk uses instead (cfi_index): list and sort the
   * FDEs once, then compile the one FDE a PC needs. */
  double index_ms[MAX_RUNS], fde_us[MAX_RUNS];
  for (int r = 0; r < runs; r++) {
    double best = 0, best_fde = 0;
    for (int b = 0; b < BUILDS_PER_RUN; b++) {
      uint8_t *copy = malloc(len);
      cfi_index *ix = NULL;
      if (!copy)
        goto fail;
      double t0 = now_ns();
      memcpy(copy, data, len); /* the index owns its bytes, as utab copies them */
      if (cfi_index_build(copy, len, addr, 0, CFI_EH_FRAME, &ix) != 0)
        goto fail;
      double t1 = now_ns();
      cfi_table *one = NULL;
      uintptr_t pc = t->lo + (uintptr_t)((uint64_t)(b + 1) * 2654435761u % (t->hi - t->lo));
      if (cfi_index_table(ix, pc, &one) != 0) {
        cfi_index_free(ix);
        goto fail;
      }
      double t2 = now_ns();
      free(one);
      cfi_index_free(ix);
      if (b == 0 || t1 - t0 < best)
        best = t1 - t0;
      if (b == 0 || t2 - t1 < best_fde)
        best_fde = t2 - t1;
    }
    index_ms[r] = best / 1e6;
    fde_us[r] = best_fde / 1e3;
  }
  char key[64], label[160];
  double med_ms = bench_rows_median(build_ms, (size_t)runs);
  double med_ns = bench_rows_median(lookup_ns, (size_t)runs);
  printf("%-16s %8.1f KiB .eh_frame %6u FDEs -> %7u rows %8.1f KiB  build %7.2f ms (%.0f ns/FDE)  "
         "lookup %5.1f ns\n",
         ob->label, (double)len / 1024, st.fdes, nrows, kib[0], med_ms, med_ms * 1e6 / st.fdes,
         med_ns);
  int rc = 0;
  snprintf(key, sizeof key, "cfi_build_ms_%s", ob->key);
  snprintf(label, sizeof label, "CFI table build, %s: %u FDEs, %u rows (ms)", ob->label, st.fdes,
           nrows);
  rc |= bench_rows_add(o->rows, key, label, "", build_ms, (size_t)runs, 2);
  snprintf(key, sizeof key, "cfi_table_kib_%s", ob->key);
  snprintf(label, sizeof label, "CFI table memory, %s (KiB)", ob->label);
  rc |= bench_rows_add(o->rows, key, label, "", kib, (size_t)runs, 0);
  snprintf(key, sizeof key, "cfi_lookup_ns_%s", ob->key);
  snprintf(label, sizeof label, "cfi_lookup, random PC in %s, warm (ns)", ob->label);
  rc |= bench_rows_add(o->rows, key, label, "", lookup_ns, (size_t)runs, 1);
  printf("%-16s index (copy, list, sort) %7.2f ms, then one FDE %6.1f us\n", ob->label,
         bench_rows_median(index_ms, (size_t)runs), bench_rows_median(fde_us, (size_t)runs));
  snprintf(key, sizeof key, "cfi_index_ms_%s", ob->key);
  snprintf(label, sizeof label, "CFI index for deferred walks, %s: copy, list, sort (ms)",
           ob->label);
  rc |= bench_rows_add(o->rows, key, label, "", index_ms, (size_t)runs, 2);
  snprintf(key, sizeof key, "cfi_index_fde_us_%s", ob->key);
  snprintf(label, sizeof label, "CFI index, one FDE compiled for a PC, %s (us)", ob->label);
  rc |= bench_rows_add(o->rows, key, label, "", fde_us, (size_t)runs, 1);
  free(t);
  free(data);
  return rc ? 1 : 0;
fail:
  fprintf(stderr, "bench_cfi_build: the index of %s failed (out of memory)\n", ob->path);
  free(t);
  free(data);
  return 1;
}

int main(int argc, char **argv) {
  bench_rows_opts o = {.runs = 7, .max_runs = MAX_RUNS};
  int rc = bench_rows_options(argc, argv, "bench_cfi_build", &o);
  if (rc)
    return rc;
  const object objs[] = {
      {"libc", "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"},
      {"libstdcxx", "libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"},
      {"cc1", "gcc's cc1", cc1_path()},
  };
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
    rc |= bench_object(&objs[i], o.runs, &o);
  return bench_rows_finish(&o, "bench_cfi_build", rc);
}
