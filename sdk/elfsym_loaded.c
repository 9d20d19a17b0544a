#include "elfsym_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlphdr.h"

/* ---- objects loaded by the dynamic linker, read from memory ---- */

/* For files that cannot be opened (deleted and /proc/self/map_files refused
 * without CAP_SYS_ADMIN / CAP_CHECKPOINT_RESTORE, or a path outside a chroot):
 * the build id and .dynsym are in loaded memory. Every read is checked to lie
 * inside a readable PT_LOAD of the object. No libelf here: section headers are
 * not loaded, so this reads the dynamic section directly. */
typedef struct loaded_obj {
  const struct dl_phdr_info *info;
} loaded_obj;

static bool loaded_readable(const loaded_obj *o, uintptr_t addr, size_t len) {
  if (addr + len < addr)
    return false;
  for (int i = 0; i < o->info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &o->info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
      continue;
    uintptr_t lo = o->info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (addr >= lo && addr + len <= hi)
      return true;
  }
  return false;
}

/* glibc relocates most d_ptr entries in place; some ports do not. */
/* A defined function, or a global/weak untyped symbol (see notype_code)
 * inside an executable segment: section headers are not mapped. */
static bool loaded_code_sym(const loaded_obj *o, const ElfW(Sym) * s) {
  int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
  if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
    return false;
  if (type == STT_FUNC || type == STT_GNU_IFUNC)
    return true;
  if (type != STT_NOTYPE || (bind != STB_GLOBAL && bind != STB_WEAK) ||
      s->st_shndx >= SHN_LORESERVE)
    return false;
  for (int i = 0; i < o->info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &o->info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && s->st_value >= ph->p_vaddr &&
        s->st_value - ph->p_vaddr < ph->p_memsz)
      return true;
  }
  return false;
}

static uintptr_t loaded_ptr(const loaded_obj *o, ElfW(Addr) p) {
  return p < o->info->dlpi_addr ? o->info->dlpi_addr + p : p;
}

static char *loaded_build_id(const loaded_obj *o, bool *oom) {
  for (int i = 0; i < o->info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &o->info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE)
      continue;
    uintptr_t p = o->info->dlpi_addr + ph->p_vaddr, end = p + ph->p_filesz;
    size_t align = ph->p_align == 8 ? 8 : 4;
    if (end < p || !loaded_readable(o, p, ph->p_filesz))
      continue;
    while (end - p >= sizeof(ElfW(Nhdr))) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      size_t name = (nh->n_namesz + align - 1) & ~(align - 1);
      size_t desc = (nh->n_descsz + align - 1) & ~(align - 1);
      if (name > end - p || desc > end - p)
        break;
      uintptr_t np = p + sizeof *nh, dp = np + name;
      if (dp < np || dp > end || desc > end - dp)
        break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && nh->n_descsz > 0 &&
          nh->n_descsz <= 64 && memcmp((const void *)np, "GNU", 4) == 0) {
        char *s = elfsym_hex_string((const uint8_t *)dp, nh->n_descsz);
        if (!s)
          *oom = true;
        return s;
      }
      p = dp + desc;
    }
  }
  return NULL;
}

/* Number of .dynsym entries, from DT_HASH or DT_GNU_HASH; 0 if unknown. */
static size_t loaded_nsyms(const loaded_obj *o, uintptr_t hash, uintptr_t gnu_hash) {
  if (hash && loaded_readable(o, hash, 8))
    return ((const uint32_t *)hash)[1];
  if (!gnu_hash || !loaded_readable(o, gnu_hash, 16))
    return 0;
  const uint32_t *w = (const uint32_t *)gnu_hash;
  uint32_t nbuckets = w[0], symoffset = w[1], bloom_size = w[2];
  uintptr_t buckets = gnu_hash + 16 + (uintptr_t)bloom_size * sizeof(ElfW(Addr));
  if (nbuckets == 0 || nbuckets > (1u << 24) || bloom_size > (1u << 24) ||
      !loaded_readable(o, buckets, (size_t)nbuckets * 4))
    return 0;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; i++)
    if (((const uint32_t *)buckets)[i] > last)
      last = ((const uint32_t *)buckets)[i];
  if (last < symoffset)
    return symoffset;
  uintptr_t chain = buckets + (uintptr_t)nbuckets * 4;
  for (uint32_t i = last - symoffset; i < (1u << 24); i++) {
    if (!loaded_readable(o, chain + (uintptr_t)i * 4, 4))
      return 0;
    if (((const uint32_t *)chain)[i] & 1)
      return (size_t)symoffset + i + 1;
  }
  return 0;
}

static int loaded_symbols(const loaded_obj *o, elfsym_image *img) {
  uintptr_t dyn = 0, symtab = 0, strtab = 0, hash = 0, gnu_hash = 0;
  size_t strsz = 0, dynsz = 0;
  for (int i = 0; i < o->info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &o->info->dlpi_phdr[i];
    if (ph->p_type == PT_DYNAMIC) {
      dyn = o->info->dlpi_addr + ph->p_vaddr;
      dynsz = ph->p_memsz;
    }
  }
  if (!dyn || !loaded_readable(o, dyn, dynsz))
    return 0;
  for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)dyn;
       (uintptr_t)(d + 1) <= dyn + dynsz && d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_SYMTAB:
      symtab = loaded_ptr(o, d->d_un.d_ptr);
      break;
    case DT_STRTAB:
      strtab = loaded_ptr(o, d->d_un.d_ptr);
      break;
    case DT_STRSZ:
      strsz = d->d_un.d_val;
      break;
    case DT_HASH:
      hash = loaded_ptr(o, d->d_un.d_ptr);
      break;
    case DT_GNU_HASH:
      gnu_hash = loaded_ptr(o, d->d_un.d_ptr);
      break;
    default:
      break;
    }
  }
  size_t n = loaded_nsyms(o, hash, gnu_hash);
  if (!symtab || !strtab || !strsz || n == 0 || n > ((size_t)1 << 24) ||
      !loaded_readable(o, symtab, n * sizeof(ElfW(Sym))) || !loaded_readable(o, strtab, strsz))
    return 0;
  const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
  const char *strs = (const char *)strtab;
  size_t ntmp = 0, nnames = 1, cap = 1;
  for (size_t i = 0; i < n; i++) { /* sizes first: one allocation each */
    if (!loaded_code_sym(o, &syms[i]) || syms[i].st_name == 0 || syms[i].st_name >= strsz)
      continue;
    const char *nm = strs + syms[i].st_name;
    size_t len = strnlen(nm, strsz - syms[i].st_name);
    if (syms[i].st_name + len >= strsz)
      continue; /* not terminated inside the table */
    ntmp++;
    cap += len + 1;
  }
  if (ntmp == 0 || cap > UINT32_MAX)
    return 0;
  sym_tmp *tmp = malloc(ntmp * sizeof *tmp);
  char *names = malloc(cap);
  if (!tmp || !names)
    goto fail;
  names[0] = '\0';
  ntmp = 0;
  for (size_t i = 0; i < n; i++) {
    if (!loaded_code_sym(o, &syms[i]) || syms[i].st_name == 0 || syms[i].st_name >= strsz)
      continue;
    const char *nm = strs + syms[i].st_name;
    size_t len = strnlen(nm, strsz - syms[i].st_name);
    if (syms[i].st_name + len >= strsz)
      continue;
    memcpy(names + nnames, nm, len + 1);
    int bind = ELF64_ST_BIND(syms[i].st_info);
    tmp[ntmp].addr = syms[i].st_value;
    tmp[ntmp].size = syms[i].st_size;
    tmp[ntmp].name = (uint32_t)nnames;
    tmp[ntmp].bind_rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
    ntmp++;
    nnames += len + 1;
  }
  if (elfsym_set_symbols(img, tmp, ntmp, names) != 0)
    goto fail;
  return 0;
fail:
  free(tmp);
  free(names);
  return -1;
}

typedef struct loaded_find {
  uintptr_t addr;
  elfsym_image *img;
  bool found;
} loaded_find;

static int loaded_find_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  loaded_find *f = arg;
  loaded_obj o = {info};
  bool oom = false;
  (void)size;
  bool covers = false;
  for (int i = 0; i < info->dlpi_phnum && !covers; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    covers =
        ph->p_type == PT_LOAD && f->addr >= (lo & ~(uintptr_t)4095) && f->addr < lo + ph->p_memsz;
  }
  if (!covers)
    return 0;
  f->found = true;
  elfsym_image *img = calloc(1, sizeof *img);
  if (!img)
    return 1;
  img->build_id = loaded_build_id(&o, &oom);
  if (oom || (!img->build_id && !(img->build_id = strdup(""))))
    goto fail;
  img->loads = calloc(info->dlpi_phnum ? info->dlpi_phnum : 1, sizeof *img->loads);
  if (!img->loads)
    goto fail;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    load_seg *l = &img->loads[img->nloads++];
    l->offset = ph->p_offset;
    l->vaddr = ph->p_vaddr;
    l->filesz = ph->p_filesz;
    l->exec = (ph->p_flags & PF_X) != 0;
  }
  if (loaded_symbols(&o, img) != 0)
    goto fail;
  img->from_memory = true;
  size_t klen = 2 * strlen(img->build_id) + 40;
  if (!(img->key = malloc(klen)))
    goto fail;
  if (img->build_id[0])
    snprintf(img->key, klen, "b:%s", img->build_id);
  else
    snprintf(img->key, klen, "l:%" PRIxPTR, (uintptr_t)info->dlpi_addr);
  f->img = img;
  return 1;
fail:
  elfsym_image_free(img);
  return 1;
}

elfsym_image *elfsym_image_from_loaded(uint64_t addr) {
  loaded_find f = {(uintptr_t)addr, NULL, false};
  if (addr == 0)
    return NULL;
  dlphdr_iterate(loaded_find_cb, &f);
  return f.img;
}
