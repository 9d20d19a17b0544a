/* cfi_elf_debug_frame (sdk/cfi_elf.c): the .debug_frame of an object's
 * own file, else of its debug file found by build id under a root. Two
 * builds of unwind_df_lib.c without .eh_frame: UDF_OWN keeps .debug_frame,
 * UDF_SPLIT was stripped of it and its debug file put under UDF_ROOT by
 * the build id UDF_ID (all four defined in CMakeLists.txt). */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi_elf.h"
#include "pp_test.h"

static cfi_table *get(const char *path, const char *id, const char *root, uintptr_t bias,
                      int want_rc) {
  cfi_table *t = (cfi_table *)1;
  cfi_stats st = {0};
  int rc = cfi_elf_debug_frame(path, id, root, bias, NULL, &t, &st);
  PP_CHECK_INT(rc, ==, want_rc);
  if (rc != 0) {
    PP_CHECK(t == NULL); /* *out is cleared on failure too */
    return NULL;
  }
  PP_CHECK(t != NULL);
  if (t) {
    PP_CHECK_INT(t->nrows, >, 1);
    PP_CHECK_INT(st.fdes, >, 0);
  }
  return t;
}

static void test_cfi_elf_refuses_bad_ids_and_files(void);

/* The object's own .debug_frame, at the bias given: a table built for the
 * loaded copy's bias covers its functions, one built at bias 0 does not. */
static void test_cfi_elf_reads_the_objects_own_debug_frame(void) {
  void *h = dlopen(UDF_OWN, RTLD_NOW | RTLD_LOCAL);
  PP_CHECK(h != NULL);
  struct link_map *lm = NULL;
  if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
    PP_CHECK(!"the library is loaded");
    return;
  }
  uintptr_t leaf = (uintptr_t)dlsym(h, "udf_leaf");
  PP_CHECK(leaf != 0);
  cfi_table *t = get(UDF_OWN, "", "", lm->l_addr, 0);
  if (t) {
    PP_CHECK_INT(t->base, ==, lm->l_addr);
    PP_CHECK(cfi_lookup(t, leaf) != NULL);
    PP_CHECK(cfi_lookup(t, (uintptr_t)test_cfi_elf_refuses_bad_ids_and_files) == NULL); /* ours */
    free(t);
  }
  t = get(UDF_OWN, "", "", 0, 0);
  if (t) {
    PP_CHECK_INT(t->base, ==, 0);
    PP_CHECK(lm->l_addr == 0 || cfi_lookup(t, leaf) == NULL);
    PP_CHECK(cfi_lookup(t, leaf - lm->l_addr) != NULL);
    free(t);
  }
  dlclose(h);
}

/* A file without .debug_frame falls back to the debug file of its build
 * id; the same code compiled the same way gives as many rows as the copy
 * that kept its own. */
static void test_cfi_elf_finds_the_debug_file_by_build_id(void) {
  cfi_table *own = get(UDF_OWN, "", "", 0, 0);
  get(UDF_SPLIT, "", "", 0, -1);                 /* stripped, and no build id */
  get(UDF_SPLIT, UDF_ID, "/nonexistent", 0, -1); /* not under that root */
  cfi_table *split = get(UDF_SPLIT, UDF_ID, UDF_ROOT, 0, 0);
  cfi_table *by_id = get(NULL, UDF_ID, UDF_ROOT, 0, 0); /* no file: the id alone */
  if (own && split)
    PP_CHECK_INT(split->nrows, ==, own->nrows);
  if (split && by_id)
    PP_CHECK_INT(by_id->nrows, ==, split->nrows);
  cfi_table *first = get(UDF_OWN, "0123456789abcdef", UDF_ROOT, 0, 0); /* the file wins */
  if (own && first)
    PP_CHECK_INT(first->nrows, ==, own->nrows);
  free(own);
  free(split);
  free(by_id);
  free(first);
}

/* Links root/.build-id/<id[0:2]>/<id[2:]>.debug to UDF_SPLIT's debug file,
 * so that only cfi_elf's check of the id can refuse it. */
static void link_debug_file(const char *root, const char *id) {
  char target[4096], dir[512], name[1024];
  snprintf(target, sizeof target, "%s/.build-id/%.2s/%s.debug", UDF_ROOT, UDF_ID, UDF_ID + 2);
  snprintf(dir, sizeof dir, "%s/.build-id", root); /* root: a short mkdtemp name */
  mkdir(dir, 0700);
  snprintf(dir, sizeof dir, "%s/.build-id/%.2s", root, id);
  mkdir(dir, 0700);
  snprintf(name, sizeof name, "%s/%s.debug", dir, id + 2);
  PP_CHECK_INT(symlink(target, name), ==, 0);
}

/* Build ids that are not lower-case hex of at least 4 digits are refused
 * though a debug file is there under their names; so are an empty root,
 * and paths that are not regular ELF files. */
static void test_cfi_elf_refuses_bad_ids_and_files(void) {
  static const char *bad[] = {"5EEDCF1D0000000000000000000000000000ABCD",
                              "5eedcf1d00000000000000000000000000000xyz", "5ee"};
  char root[] = "/tmp/test_cfi_elf_XXXXXX";
  PP_CHECK(mkdtemp(root) != NULL);
  link_debug_file(root, "5eed"); /* the shortest id taken, as a control */
  free(get(NULL, "5eed", root, 0, 0));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    link_debug_file(root, bad[i]);
    get(NULL, bad[i], root, 0, -1);
  }
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  PP_CHECK_INT(system(cmd), ==, 0);

  get(NULL, "", UDF_ROOT, 0, -1);
  get(NULL, NULL, UDF_ROOT, 0, -1);
  get(NULL, UDF_ID, "", 0, -1);
  get("/nonexistent/lib.so", "", "", 0, -1);
  get("/", "", "", 0, -1); /* a directory */
  char tmp[] = "/tmp/test_cfi_elf_XXXXXX";
  int fd = mkstemp(tmp);
  PP_CHECK(fd >= 0);
  if (fd >= 0) {
    PP_CHECK_INT(write(fd, "\177ELF not really", 15), ==, 15);
    close(fd);
    get(tmp, "", "", 0, -1);
    unlink(tmp);
  }
}

int main(void) {
  PP_RUN(test_cfi_elf_reads_the_objects_own_debug_frame);
  PP_RUN(test_cfi_elf_finds_the_debug_file_by_build_id);
  PP_RUN(test_cfi_elf_refuses_bad_ids_and_files);
  PP_DONE();
}
