#include "cfi_elf.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path opened for libelf (a regular file only): the descriptor, or -1. */
static int open_elf(const char *path, Elf **elf, size_t *shstr) {
  *elf = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return -1;
  struct stat sb;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && elf_version(EV_CURRENT) != EV_NONE &&
      (*elf = elf_begin(fd, ELF_C_READ, NULL)) != NULL && elf_kind(*elf) == ELF_K_ELF &&
      elf_getshdrstrndx(*elf, shstr) == 0)
    return fd;
  if (*elf)
    elf_end(*elf);
  *elf = NULL;
  close(fd);
  return -1;
}

/* The .debug_frame of one file, compiled; -1 if it has none. */
static int from_file(const char *path, uintptr_t bias, const _Atomic int *cancel, cfi_table **out,
                     cfi_stats *st) {
  int rc = -1;
  Elf *elf;
  size_t shstr;
  int fd = open_elf(path, &elf, &shstr);
  if (fd < 0)
    return -1;
  for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    const char *name;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
        !(name = elf_strptr(elf, shstr, sh.sh_name)) || strcmp(name, ".debug_frame") != 0)
      continue;
    Elf_Data *d = elf_getdata(scn, NULL); /* compressed sections are not read: -1 */
    if ((sh.sh_flags & SHF_COMPRESSED) || !d || !d->d_buf || d->d_size == 0)
      break;
    int b = cfi_build(d->d_buf, d->d_size, bias, bias, CFI_DEBUG_FRAME, cancel, out, st);
    if (b == 0 && (*out)->nrows == 0) {
      free(*out);
      *out = NULL;
      b = -1;
    }
    rc = b == 0 ? 0 : -1;
    break;
  }
  elf_end(elf);
  close(fd);
  return rc;
}

int cfi_elf_debug_frame(const char *path, const char *build_id, const char *debug_root,
                        uintptr_t bias, const _Atomic int *cancel, cfi_table **out, cfi_stats *st) {
  *out = NULL;
  if (path && path[0] && from_file(path, bias, cancel, out, st) == 0)
    return 0;
  const char *root = debug_root ? debug_root : "/usr/lib/debug";
  size_t idlen = build_id ? strlen(build_id) : 0;
  if (idlen < 4 || !root[0] || strspn(build_id, "0123456789abcdef") != idlen)
    return -1;
  char dbg[4096];
  int n = snprintf(dbg, sizeof dbg, "%s/.build-id/%.2s/%s.debug", root, build_id, build_id + 2);
  if (n < 0 || (size_t)n >= sizeof dbg)
    return -1;
  return from_file(dbg, bias, cancel, out, st);
}

int cfi_elf_plt(const char *path, uintptr_t bias, uintptr_t plt[2], uintptr_t sec[2]) {
  Elf *elf;
  size_t shstr;
  int n = 0;
  plt[0] = plt[1] = sec[0] = sec[1] = 0;
  int fd = path && path[0] ? open_elf(path, &elf, &shstr) : -1;
  if (fd < 0)
    return 0;
  for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    const char *name;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
        sh.sh_size == 0 || !(name = elf_strptr(elf, shstr, sh.sh_name)))
      continue;
    uintptr_t *r = strcmp(name, ".plt") == 0 ? plt : strcmp(name, ".plt.sec") == 0 ? sec : NULL;
    if (!r || r[1])
      continue;
    r[0] = bias + (uintptr_t)sh.sh_addr;
    r[1] = r[0] + (uintptr_t)sh.sh_size;
    n++;
  }
  elf_end(elf);
  close(fd);
  return n;
}
