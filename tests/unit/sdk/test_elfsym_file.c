/* ELF images read from files and from bytes (sdk/elfsym_file.c) when the
 * bytes are wrong: truncated and corrupted copies of this binary, files
 * that are not ELF, a FIFO, a stripped copy. Built as a PIE and as a
 * non-PIE executable (test_elfsym_file_nopie). */
#include <elf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "elfsym_test_util.h"
#include "pp_test.h"

static char g_tmpdir[PATH_MAX];

static void test_elfsym_survives_broken_files(void) {
  char exe[PATH_MAX], path[PATH_MAX + 32];
  if (self_exe(exe, sizeof exe) != 0)
    return;
  struct stat st;
  PP_CHECK(stat(exe, &st) == 0);
  long sizes[] = {0, 1, 16, 63, 64, 100, 1000, 4096, st.st_size / 2, st.st_size - 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    snprintf(path, sizeof path, "%s/trunc-%ld", g_tmpdir, sizes[i]);
    PP_CHECK_INT(copy_file(exe, path, sizes[i]), ==, 0);
    elfsym_image *img = elfsym_image_open(path);
    if (img) {
      elfsym_symbol sym;
      uint64_t vaddr = 0;
      (void)elfsym_pc_to_vaddr(img, 0x1000, 0, 0x1234, &vaddr);
      (void)elfsym_lookup(img, vaddr, NULL, &sym);
      (void)elfsym_build_id(img);
      elfsym_image_free(img);
    }
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/text", g_tmpdir);
  FILE *f = fopen(path, "w");
  PP_CHECK(f != NULL);
  if (f) {
    fputs("#!/bin/sh\necho not elf\n", f);
    fclose(f);
  }
  PP_CHECK(elfsym_image_open(path) == NULL);
  unlink(path);
  PP_CHECK(elfsym_image_open(g_tmpdir) == NULL); /* a directory */
  PP_CHECK(elfsym_image_open("/nonexistent/pushprof") == NULL);
  snprintf(path, sizeof path, "%s/fifo", g_tmpdir);
  PP_CHECK_INT(mkfifo(path, 0600), ==, 0);
  PP_CHECK(elfsym_image_open(path) == NULL); /* returns at once, no writer needed */
  unlink(path);
  unlink(path);

  /* stripped: no .symtab, falls back to .dynsym without trouble */
  snprintf(path, sizeof path, "%s/stripped", g_tmpdir);
  char cmd[2 * PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "strip -o '%s' '%s'", path, exe);
  PP_CHECK_INT(system(cmd), ==, 0);
  elfsym_image *img = elfsym_image_open(path);
  elfsym_image *orig = elfsym_image_open(exe);
  PP_CHECK(img != NULL && orig != NULL);
  if (img && orig) {
    PP_CHECK_STR(elfsym_build_id(img), elfsym_build_id(orig));
    PP_CHECK(elfsym_symbol_count(img) < elfsym_symbol_count(orig));
  }
  elfsym_image_free(img);
  elfsym_image_free(orig);
  unlink(path);
}

/* Corrupted copies of this binary (bytes overwritten in the headers, the
 * section and program header tables, and at random; every truncation of the
 * first 4 KiB) must never crash: at worst no image or no symbols. */
static void test_elfsym_survives_corrupted_images(void) {
  char exe[PATH_MAX];
  if (self_exe(exe, sizeof exe) != 0)
    return;
  FILE *f = fopen(exe, "rb");
  PP_CHECK(f != NULL);
  if (!f)
    return;
  struct stat st;
  PP_CHECK(fstat(fileno(f), &st) == 0);
  size_t size = (size_t)st.st_size;
  uint8_t *orig = malloc(size), *img = malloc(size);
  PP_CHECK(orig && img && fread(orig, 1, size, f) == size);
  fclose(f);
  if (!orig || !img)
    goto done;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)orig;
  size_t regions[][2] = {
      {0, sizeof *eh},
      {eh->e_phoff, (size_t)eh->e_phnum * eh->e_phentsize},
      {eh->e_shoff, (size_t)eh->e_shnum * eh->e_shentsize},
      {0, size},
  };
  unsigned seed = 12345;
  int opened = 0, with_syms = 0;
  for (int round = 0; round < 400; round++) {
    memcpy(img, orig, size);
    size_t *r = regions[round % 4];
    if (r[0] >= size || r[1] == 0)
      continue;
    size_t span = r[0] + r[1] > size ? size - r[0] : r[1];
    for (int k = 0; k < 1 + round % 7; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = r[0] + (seed >> 8) % span;
      seed = seed * 1103515245u + 12345u;
      img[at] = (uint8_t)(round % 3 == 0 ? 0xff : (seed >> 16));
    }
    elfsym_image *im = elfsym_image_from_memory(img, size);
    if (!im)
      continue;
    opened++;
    elfsym_symbol sym;
    uint64_t vaddr;
    if (elfsym_symbol_count(im) > 0)
      with_syms++;
    for (uint64_t pc = 0x1000; pc < 0x40000; pc += 0x777)
      if (elfsym_pc_to_vaddr(im, 0x1000, 0x1000, pc, &vaddr))
        (void)elfsym_lookup(im, vaddr, NULL, &sym);
    elfsym_image_free(im);
  }
  for (size_t len = 0; len <= 4096 && len <= size; len += 7) {
    elfsym_image *im = elfsym_image_from_memory(orig, len);
    if (im) {
      (void)elfsym_symbol_count(im);
      elfsym_image_free(im);
    }
  }
  fprintf(stderr, "corrupted images: %d of 400 opened, %d with symbols\n", opened, with_syms);
  PP_CHECK(opened > 0);
done:
  free(orig);
  free(img);
}

int main(void) {
  pp_test_mkdtemp(g_tmpdir, sizeof g_tmpdir, "elfsym-file");
  PP_RUN(test_elfsym_survives_broken_files);
  PP_RUN(test_elfsym_survives_corrupted_images);
  rmdir(g_tmpdir);
  PP_DONE();
}
