/* Images of ELF files, read with libelf (elfutils): build ids, program
 * headers, symbol tables, debug files. Files are opened with ELF_C_READ, not mmap, so
 * a file truncated under us gives read errors instead of SIGBUS, and with
 * O_NONBLOCK, so a path replaced by a FIFO cannot hang the collector. */
#include "elfsym_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static bool g_libelf_ok;
static void libelf_init(void) {
  g_libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

bool elfsym_libelf_ready(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  return pthread_once(&once, libelf_init) == 0 && g_libelf_ok;
}

/* ---- build id and program headers ---- */

char *elfsym_hex_string(const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char *s = malloc(2 * n + 1);
  if (!s)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  s[2 * n] = '\0';
  return s;
}

/* The GNU build id in a block of notes as malloc'ed hex; NULL if there is
 * none (or on ENOMEM, with *oom set). */
static char *build_id_in_notes(Elf_Data *data, bool *oom) {
  size_t off = 0, name_off, desc_off;
  GElf_Nhdr nh;
  if (!data || !data->d_buf)
    return NULL;
  while (off < data->d_size) {
    size_t next = gelf_getnote(data, off, &nh, &name_off, &desc_off);
    if (next == 0 || next <= off)
      break;
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 && nh.n_descsz <= 64 &&
        name_off + 4 <= data->d_size && desc_off + nh.n_descsz <= data->d_size &&
        memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0) {
      char *s = elfsym_hex_string((const uint8_t *)data->d_buf + desc_off, nh.n_descsz);
      if (!s)
        *oom = true;
      return s;
    }
    off = next;
  }
  return NULL;
}

char *elfsym_read_build_id(Elf *elf, bool *oom) {
  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) == 0) {
    for (size_t i = 0; i < nph; i++) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz == 0)
        continue;
      Elf_Type t = ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
      Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, t);
      char *s = build_id_in_notes(d, oom);
      if (s || *oom)
        return s;
    }
  }
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
      continue;
    char *s = build_id_in_notes(elf_getdata(scn, NULL), oom);
    if (s || *oom)
      return s;
  }
  return NULL;
}

int elfsym_read_loads(Elf *elf, elfsym_image *img) {
  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) != 0 || nph == 0)
    return 0;
  if (nph > 65535)
    return 0;
  img->loads = calloc(nph, sizeof *img->loads);
  if (!img->loads)
    return -1;
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
      continue;
    load_seg *l = &img->loads[img->nloads++];
    l->offset = ph.p_offset;
    l->vaddr = ph.p_vaddr;
    l->filesz = ph.p_filesz;
    l->exec = (ph.p_flags & PF_X) != 0;
  }
  return 0;
}

/* ---- symbols ---- */

static int underscores(const char *s) {
  int n = 0;
  while (s[n] == '_')
    n++;
  return n;
}

/* Which of two symbols at one address names it, the lesser first: sized,
 * global before weak before local, fewer leading underscores, shorter,
 * then by name. */
static int alias_cmp(uint64_t sx, uint8_t rx, const char *nx, uint64_t sy, uint8_t ry,
                     const char *ny) {
  if ((sx != 0) != (sy != 0))
    return sx != 0 ? -1 : 1;
  if (rx != ry)
    return rx < ry ? -1 : 1;
  int ux = underscores(nx), uy = underscores(ny);
  if (ux != uy)
    return ux < uy ? -1 : 1;
  size_t lx = strlen(nx), ly = strlen(ny);
  if (lx != ly)
    return lx < ly ? -1 : 1;
  return strcmp(nx, ny);
}

/* By address; within an address the preferred alias first (alias_cmp). */
static int sym_tmp_cmp(const void *a, const void *b, void *names) {
  const sym_tmp *x = a, *y = b;
  if (x->addr != y->addr)
    return x->addr < y->addr ? -1 : 1;
  return alias_cmp(x->size, x->bind_rank, (const char *)names + x->name, y->size, y->bind_rank,
                   (const char *)names + y->name);
}

static bool section_has_symbols(const GElf_Shdr *sh) {
  return sh->sh_entsize != 0 && sh->sh_size / sh->sh_entsize >= 2;
}

/* Sorts tmp, keeps the preferred alias per address, and installs the result
 * in img (taking names). Frees tmp on success; on failure the caller frees
 * both. With ntmp == 0 both are freed and img keeps no symbols. */
int elfsym_set_symbols(elfsym_image *img, sym_tmp *tmp, size_t ntmp, char *names) {
  if (ntmp == 0) {
    free(tmp);
    free(names);
    return 0;
  }
  qsort_r(tmp, ntmp, sizeof *tmp, sym_tmp_cmp, names);
  sym *out = malloc(ntmp * sizeof *out);
  if (!out)
    return -1;
  size_t k = 0;
  for (size_t i = 0; i < ntmp; i++) {
    if (k > 0 && out[k - 1].addr == tmp[i].addr)
      continue; /* alias: first is preferred */
    out[k].addr = tmp[i].addr;
    out[k].size = tmp[i].size;
    out[k].name = tmp[i].name;
    k++;
  }
  img->syms = out;
  img->nsyms = k;
  img->names = names;
  free(tmp);
  return 0;
}

/* syms[0..lo] ascending by address, one symbol per address, lo the last at
 * or below vaddr: the index of the symbol that names vaddr, or -1. A sized
 * symbol must cover vaddr; past its end (assembly with an inner entry
 * point) the 16 symbols below are searched for one that does. An unsized
 * one names up to the next symbol, at most 1 MiB. */
ptrdiff_t elfsym_naming_symbol(const sym *syms, size_t lo, uint64_t vaddr) {
  const sym *s = &syms[lo];
  if (s->size == 0)
    return vaddr - s->addr < ((uint64_t)1 << 20) ? (ptrdiff_t)lo : -1;
  if (vaddr - s->addr < s->size)
    return (ptrdiff_t)lo;
  size_t stop = lo > ELFSYM_LOOK_BACK ? lo - ELFSYM_LOOK_BACK : 0;
  while (lo > stop) {
    lo--;
    if (syms[lo].size > 0 && vaddr - syms[lo].addr < syms[lo].size)
      return (ptrdiff_t)lo;
  }
  return -1;
}

void elfsym_sink_init(symsink *s, const uint64_t *v, size_t nv) {
  memset(s, 0, sizeof *s);
  s->v = v;
  s->nv = nv;
}

void elfsym_sink_free(symsink *s) {
  free(s->tmp);
  free(s->names);
  free(s->win);
  free(s->nwin);
  for (size_t i = 0; s->res && i < s->nv; i++)
    free((char *)s->res[i].name);
  free(s->res);
  elfsym_sink_init(s, s->v, s->nv);
}

/* Makes room for n more symbols in an all-symbols sink. */
static int sink_reserve(symsink *s, size_t n) {
  if (s->v || s->ntmp + n <= s->captmp)
    return 0;
  size_t cap = s->ntmp + (n ? n : 1);
  sym_tmp *t = realloc(s->tmp, cap * sizeof *t);
  if (!t)
    return -1;
  s->tmp = t;
  s->captmp = cap;
  return 0;
}

/* The window a symbol at addr would go to, and its place there; NULL
 * when it cannot matter to any address (above them all, or below the
 * FEW_WIN kept). */
static few_ent *few_place(const symsink *s, uint64_t addr, size_t *win, unsigned *at) {
  size_t lo = 0, hi = s->nv; /* the first address >= addr */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid] < addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == s->nv)
    return NULL;
  few_ent *w = s->win + lo * FEW_WIN;
  unsigned n = s->nwin[lo], i = 0;
  if (n == FEW_WIN && addr < w[FEW_WIN - 1].addr)
    return NULL; /* below a full window: most symbols, at once */
  while (i < n && w[i].addr > addr)
    i++;
  if (i == FEW_WIN)
    return NULL;
  *win = lo;
  *at = i;
  return w;
}

/* Few path: whether a symbol at addr can matter (so its name is worth
 * reading). Once one symbol was taken, the table is known to have some. */
static bool few_wants(symsink *s, uint64_t addr) {
  if (!s->win || s->taken == 0)
    return true;
  s->placed = few_place(s, addr, &s->placed_win, &s->placed_at);
  s->placed_addr = addr;
  return s->placed != NULL;
}

static void few_add(symsink *s, uint64_t addr, uint64_t size, const char *name, uint8_t rank) {
  size_t lo = s->placed_win;
  unsigned i = s->placed_at;
  few_ent *w = s->placed && s->placed_addr == addr ? s->placed : few_place(s, addr, &lo, &i);
  s->placed = NULL;
  if (!w)
    return;
  unsigned n = s->nwin[lo];
  if (i < n && w[i].addr == addr) {
    if (alias_cmp(size, rank, name, w[i].size, w[i].rank, w[i].name) < 0)
      w[i] = (few_ent){addr, size, name, rank};
    return;
  }
  if (n == FEW_WIN)
    n--; /* the lowest falls out */
  memmove(&w[i + 1], &w[i], (n - i) * sizeof *w);
  w[i] = (few_ent){addr, size, name, rank};
  s->nwin[lo] = (uint8_t)(n + 1);
}

/* A symbol table's name without its version: "memcpy@@GLIBC_2.14" and
 * "memcpy@GLIBC_2.2.5" (in .symtab of glibc's debug files, and of programs
 * that define versioned symbols) are the function memcpy that perf, gdb and
 * every other profile name without it; keeping the version would split one
 * function in two when profiles of different tools are merged or diffed. */
static size_t unversioned_len(const char *name) {
  const char *at = strchr(name, '@');
  return at && at != name ? (size_t)(at - name) : strlen(name);
}

/* One function symbol of a table; -1 on ENOMEM. */
static int sink_add(symsink *s, uint64_t addr, uint64_t size, const char *name, uint8_t rank) {
  if (s->v) {
    if (s->win)
      few_add(s, addr, size, name, rank);
    s->taken++;
    return 0;
  }
  size_t len = unversioned_len(name) + 1;
  if (s->nnames + len > UINT32_MAX)
    return 0; /* offsets are 32-bit: the rest is left out */
  if (s->ntmp == s->captmp && sink_reserve(s, s->captmp ? s->captmp : 256) != 0)
    return -1;
  if (!s->names || s->nnames + len > s->capnames) {
    size_t nc = s->capnames ? s->capnames : 4096;
    while (s->nnames + len + 1 > nc)
      nc *= 2;
    char *nn = realloc(s->names, nc);
    if (!nn)
      return -1;
    if (!s->names) {
      nn[0] = '\0'; /* offset 0: no name */
      s->nnames = 1;
    }
    s->names = nn;
    s->capnames = nc;
  }
  memcpy(s->names + s->nnames, name, len - 1);
  s->names[s->nnames + len - 1] = '\0';
  s->tmp[s->ntmp++] = (sym_tmp){addr, size, (uint32_t)s->nnames, rank};
  s->nnames += len;
  s->taken++;
  return 0;
}

/* Few path: before a table's Elf is closed, the answer per address, with
 * its name copied; the windows are freed. */
static void few_finish(symsink *s) {
  if (!s->v || !s->win)
    return;
  for (size_t k = 0; k < s->nv && !s->oom; k++) {
    /* The symbols at or below v[k], ascending, as a slice of the table. */
    sym tab[FEW_WIN];
    few_ent ent[FEW_WIN];
    size_t m = 0;
    for (size_t j = k + 1; j-- > 0 && m < FEW_WIN;)
      for (unsigned i = 0; i < s->nwin[j] && m < FEW_WIN; i++)
        ent[m++] = s->win[j * FEW_WIN + i];
    if (m == 0)
      continue;
    for (size_t i = 0; i < m; i++)
      tab[i] = (sym){ent[m - 1 - i].addr, ent[m - 1 - i].size, (uint32_t)(m - 1 - i)};
    ptrdiff_t at = elfsym_naming_symbol(tab, m - 1, s->v[k]);
    if (at < 0)
      continue;
    const few_ent *e = &ent[tab[at].name];
    char *name = strndup(e->name, unversioned_len(e->name));
    if (!name) {
      s->oom = true;
      break;
    }
    s->res[k] = (elfsym_symbol){name, name, e->addr, e->size};
  }
  free(s->win);
  free(s->nwin);
  s->win = NULL;
  s->nwin = NULL;
}

/* Starts a table in a few-path sink: fresh windows. */
static int few_begin(symsink *s) {
  if (!s->v)
    return 0;
  free(s->win);
  free(s->nwin);
  s->win = malloc(s->nv * FEW_WIN * sizeof *s->win);
  s->nwin = calloc(s->nv, 1);
  if (!s->res)
    s->res = calloc(s->nv, sizeof *s->res);
  if (!s->win || !s->nwin || !s->res) {
    s->oom = true;
    return -1;
  }
  return 0;
}

/* Hand-written assembly often names its entry points with no .type
 * (STT_NOTYPE): ISA-L's deflate, OpenSSL's and glibc's string routines in
 * places. Such a symbol names code when it is global or weak and defined
 * in an executable section; local ones are left out (assemblers' labels
 * and mapping symbols). Without it, their samples took the name of the
 * typed function before them (libisal's deflate showed as crc32_gzip_*). */
bool elfsym_notype_code(Elf *elf, const GElf_Sym *s) {
  int bind = GELF_ST_BIND(s->st_info);
  if ((bind != STB_GLOBAL && bind != STB_WEAK) || s->st_shndx == SHN_UNDEF ||
      s->st_shndx >= SHN_LORESERVE)
    return false;
  GElf_Shdr sh;
  Elf_Scn *scn = elf_getscn(elf, s->st_shndx);
  return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
         sh.sh_type == SHT_PROGBITS;
}

static int load_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, symsink *sink) {
  Elf_Data *data = elf_getdata(scn, NULL);
  if (!data || sh->sh_entsize == 0)
    return 0;
  size_t n = sh->sh_size / sh->sh_entsize;
  if (n > (size_t)1 << 26)
    n = (size_t)1 << 26;
  if (sink_reserve(sink, n) != 0)
    return -1;
  /* ELFCLASS64: the converted section is an array of GElf_Sym already
   * (gelf_getsym would copy each out); as gelf_getsym, stop at its end. */
  const GElf_Sym *direct = NULL;
  if (gelf_getclass(elf) == ELFCLASS64 && data->d_type == ELF_T_SYM && data->d_buf &&
      (uintptr_t)data->d_buf % _Alignof(GElf_Sym) == 0) {
    direct = data->d_buf;
    if (n > data->d_size / sizeof(GElf_Sym))
      n = data->d_size / sizeof(GElf_Sym);
  }
  for (size_t i = 0; i < n; i++) {
    GElf_Sym s;
    if (direct)
      s = direct[i];
    else if (!gelf_getsym(data, (int)i, &s))
      break;
    int type = GELF_ST_TYPE(s.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC &&
        !(type == STT_NOTYPE && elfsym_notype_code(elf, &s)))
      continue;
    if (s.st_shndx == SHN_UNDEF || s.st_value == 0)
      continue;
    if (sink->v && !few_wants(sink, s.st_value))
      continue; /* cannot name any address asked for: its name is not read */
    const char *name = elf_strptr(elf, sh->sh_link, s.st_name);
    if (!name || !name[0])
      continue;
    int bind = GELF_ST_BIND(s.st_info);
    if (sink_add(sink, s.st_value, s.st_size, name,
                 bind == STB_GLOBAL ? 0
                 : bind == STB_WEAK ? 1
                                    : 2) != 0)
      return -1;
  }
  return 0;
}

/* .gnu_debuglink: a file name, NUL, padding to 4 bytes, and the CRC-32 of
 * the debug file in the object's byte order. Only a plain file name is
 * taken (no '/', not "." or ".."), so the lookup stays in the directories
 * GDB searches. Sets img->debuglink; -1 on ENOMEM only. */
static int read_debuglink(Elf *elf, Elf_Scn *scn, elfsym_image *img) {
  GElf_Ehdr eh;
  Elf_Data *d = elf_rawdata(scn, NULL);
  if (!gelf_getehdr(elf, &eh) || !d || !d->d_buf)
    return 0;
  const char *name = d->d_buf;
  size_t size = d->d_size, len = strnlen(name, size);
  size_t crc_off = (len + 1 + 3) & ~(size_t)3;
  if (len == 0 || len > 255 || crc_off + 4 > size || memchr(name, '/', len) ||
      strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return 0;
  const uint8_t *c = (const uint8_t *)name + crc_off;
  uint32_t le = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
  uint32_t be = (uint32_t)c[3] | (uint32_t)c[2] << 8 | (uint32_t)c[1] << 16 | (uint32_t)c[0] << 24;
  free(img->debuglink);
  img->debuglink = strndup(name, len);
  img->debuglink_crc = eh.e_ident[EI_DATA] == ELFDATA2MSB ? be : le;
  return img->debuglink ? 0 : -1;
}

/* true if the symbols came from .symtab (so no separate debug file is needed).
 * Otherwise, with want_link, the .gnu_debuglink is kept in img. */

/* Feeds sink the function symbols of .symtab, else of .dynsym; true if
 * they came from .symtab. With link (an image), its .gnu_debuglink is kept
 * there when they did not. */
static bool symbols_from(Elf *elf, elfsym_image *link_img, symsink *sink) {
  Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL, *link = NULL;
  GElf_Shdr symsh, dynsh;
  size_t shstrndx = 0;
  bool names = elf_getshdrstrndx(elf, &shstrndx) == 0;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh))
      continue;
    if (link_img && !link && names && sh.sh_type == SHT_PROGBITS) {
      const char *nm = elf_strptr(elf, shstrndx, sh.sh_name);
      if (nm && strcmp(nm, ".gnu_debuglink") == 0)
        link = scn;
    }
    if (sh.sh_type == SHT_SYMTAB && !symtab && section_has_symbols(&sh)) {
      symtab = scn;
      symsh = sh;
    } else if (sh.sh_type == SHT_DYNSYM && !dynsym && section_has_symbols(&sh)) {
      dynsym = scn;
      dynsh = sh;
    }
  }
  if (few_begin(sink) != 0)
    return false;
  if (symtab) {
    if (load_symtab(elf, symtab, &symsh, sink) != 0) {
      sink->oom = true; /* a partial table could misname: none */
      return false;
    }
    if (sink->taken > 0) {
      few_finish(sink);
      return true;
    }
  }
  if (dynsym)
    (void)load_symtab(elf, dynsym, &dynsh, sink);
  few_finish(sink);
  if (link)
    (void)read_debuglink(elf, link, link_img); /* ENOMEM: no debug file, as if none */
  return false;
}

/* The CRC-32 (zlib's, which is GDB's) of a whole file; -1 on a read error
 * or ENOMEM. */
static int file_crc32(int fd, uint32_t *out) {
  enum { CHUNK = 64 * 1024 };
  uint8_t *buf = malloc(CHUNK);
  int rc = -1;
  if (!buf)
    return -1;
  uLong crc = crc32(0L, Z_NULL, 0);
  for (;;) {
    ssize_t n = read(fd, buf, CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      goto done;
    if (n == 0)
      break;
    crc = crc32(crc, buf, (uInt)n);
  }
  *out = (uint32_t)crc;
  rc = 0;
done:
  free(buf);
  return rc;
}

/* Reads the symbols of the debug file at path into *out if it belongs to
 * img: by the CRC of .gnu_debuglink when check_crc, and by build id
 * whenever both have one. Only a .symtab with function symbols is taken
 * (it then replaces what *out held); true then. */
static bool try_debug_file(elfsym_image *img, const char *path, bool check_crc, symsink *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat st;
  Elf *elf = NULL;
  bool taken = false;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    goto done;
  if ((uint64_t)st.st_dev == img->st_dev && (uint64_t)st.st_ino == img->st_ino)
    goto done; /* the object itself (a link naming its own file) */
  if (check_crc) {
    uint32_t crc;
    if (file_crc32(fd, &crc) != 0 || crc != img->debuglink_crc || lseek(fd, 0, SEEK_SET) != 0)
      goto done;
  }
  elf = elf_begin(fd, ELF_C_READ, NULL);
  if (!elf || elf_kind(elf) != ELF_K_ELF)
    goto done;
  bool oom = false;
  char *id = elfsym_read_build_id(elf, &oom);
  bool match = !id || !img->build_id[0] || strcmp(id, img->build_id) == 0;
  free(id);
  if (!match)
    goto done;
  symsink dbg;
  elfsym_sink_init(&dbg, out->v, out->nv);
  if (symbols_from(elf, NULL, &dbg) && dbg.taken > 0) {
    elfsym_sink_free(out);
    *out = dbg;
    taken = true;
  } else {
    elfsym_sink_free(&dbg);
  }
done:
  if (elf)
    elf_end(elf);
  close(fd);
  return taken;
}

/* The object's own path as /proc/self/maps names it (not map_files), or NULL. */
static const char *object_path(const elfsym_image *img) {
  if (img->alt_path && img->alt_path[0] == '/')
    return img->alt_path;
  if (img->open_path && img->open_path[0] == '/' && strncmp(img->open_path, "/proc/", 6) != 0)
    return img->open_path;
  return NULL;
}

/* A separate debug file: its .symtab has the local functions .dynsym lacks.
 * Looked up as GDB does: by build id under the debug root (Debian's *-dbg /
 * -dbgsym packages, debuginfod caches laid out the same way), then by
 * .gnu_debuglink in the object's directory, its .debug/ subdirectory, and
 * the object's directory under the debug root. A debug root of "" turns
 * every lookup off. What it finds replaces *out. */
static void load_debug_symbols(elfsym_image *img, symsink *out) {
  const char *root = img->debug_root ? img->debug_root : "/usr/lib/debug";
  const char *obj = object_path(img);
  const char *slash = obj ? strrchr(obj, '/') : NULL;
  size_t idlen = strlen(img->build_id);
  if (!root[0])
    return;
  size_t plen = strlen(root) + idlen + 32;
  if (img->debuglink && slash)
    plen += 2 * (size_t)(slash - obj) + strlen(img->debuglink) + 16;
  char *path = malloc(plen);
  if (!path)
    return;
  if (idlen >= 4) {
    snprintf(path, plen, "%s/.build-id/%.2s/%s.debug", root, img->build_id, img->build_id + 2);
    if (try_debug_file(img, path, false, out))
      goto done;
  }
  if (!img->debuglink || !slash)
    goto done;
  int dlen = (int)(slash - obj); /* the directory, without its last '/' */
  const char *fmt[] = {"%s%.*s/%s", "%s%.*s/.debug/%s", "%s%.*s/%s"}; /* obj starts with '/' */
  for (int i = 0; i < 3; i++) {
    snprintf(path, plen, fmt[i], i == 2 ? root : "", dlen, obj, img->debuglink);
    if (try_debug_file(img, path, true, out))
      break;
  }
done:
  free(path);
}

/* The symbols of img into *out: the object's .symtab, else a separate
 * debug file's, else its .dynsym. The file is re-opened (only if it is
 * still the same file). For an image read from loaded memory only the
 * debug file is read: *out stays empty when there is none, and the
 * image's .dynsym, read at creation, stands. */
void elfsym_read_symbols(elfsym_image *img, symsink *out) {
  if (!elfsym_libelf_ready())
    return;
  if (img->from_memory) {
    load_debug_symbols(img, out); /* a .symtab beats the loaded .dynsym */
    return;
  }
  if (img->mem) {
    Elf *elf = elf_memory((char *)img->mem, img->memsize);
    if (!elf)
      return;
    bool full = elf_kind(elf) == ELF_K_ELF && symbols_from(elf, img, out);
    elf_end(elf);
    if (!full)
      load_debug_symbols(img, out);
    return;
  }
  const char *paths[2] = {img->open_path, img->alt_path};
  bool full = false;
  for (int i = 0; i < 2; i++) {
    if (!paths[i])
      continue;
    int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      continue;
    struct stat st;
    bool same = fstat(fd, &st) == 0 && (uint64_t)st.st_dev == img->st_dev &&
                (uint64_t)st.st_ino == img->st_ino && (int64_t)st.st_size == img->st_size;
    if (same) {
      Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
      if (elf) {
        full = elf_kind(elf) == ELF_K_ELF && symbols_from(elf, img, out);
        elf_end(elf);
      }
    }
    close(fd);
    if (same)
      break;
  }
  if (!full)
    load_debug_symbols(img, out);
}

/* Reads the whole table once, sorted, for elfsym_lookup. */
void elfsym_load_symbols(elfsym_image *img) {
  if (img->syms_loaded)
    return;
  img->syms_loaded = true;
  symsink s;
  elfsym_sink_init(&s, NULL, 0);
  elfsym_read_symbols(img, &s);
  if (!s.oom && (!img->from_memory || s.taken > 0) && s.ntmp > 0) {
    sym *old = img->syms;
    char *old_names = img->names;
    if (elfsym_set_symbols(img, s.tmp, s.ntmp, s.names) == 0) {
      s.tmp = NULL; /* taken */
      s.names = NULL;
      free(old);
      free(old_names);
    }
  }
  elfsym_sink_free(&s);
}

/* ---- images ---- */

void elfsym_image_free(elfsym_image *img) {
  if (!img)
    return;
  if (img->dem) {
    for (size_t i = 0; i < img->nsyms; i++)
      if (img->dem[i] && img->dem[i] != img->names + img->syms[i].name)
        free(img->dem[i]);
    free(img->dem);
  }
  for (size_t i = 0; i < img->npicked; i++) {
    if (img->picked[i].sym.demangled != img->picked[i].sym.name)
      free((char *)img->picked[i].sym.demangled);
    free((char *)img->picked[i].sym.name);
  }
  free(img->picked);
  free(img->key);
  free(img->build_id);
  free(img->loads);
  free(img->open_path);
  free(img->alt_path);
  free(img->debug_root);
  free(img->debuglink);
  free(img->mem);
  free(img->syms);
  free(img->names);
  free(img);
}

/* Reads build id and PT_LOADs; the symbols wait for the first lookup. */
static elfsym_image *image_from_elf(Elf *elf) {
  bool oom = false;
  if (elf_kind(elf) != ELF_K_ELF)
    return NULL;
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh))
    return NULL;
  elfsym_image *img = calloc(1, sizeof *img);
  if (!img)
    return NULL;
  img->build_id = elfsym_read_build_id(elf, &oom);
  if (oom)
    goto fail;
  if (!img->build_id && !(img->build_id = strdup("")))
    goto fail;
  if (elfsym_read_loads(elf, img) != 0)
    goto fail;
  return img;
fail:
  elfsym_image_free(img);
  return NULL;
}

/* open_path: what to re-open for the symbols; key_path names the file in the key
 * and is the second choice for re-opening. */
elfsym_image *elfsym_image_open_fd(int fd, const char *open_path, const char *key_path) {
  const char *path = key_path;
  struct stat st;
  elfsym_image *img = NULL;
  if (!elfsym_libelf_ready() || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return NULL;
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  if (!elf)
    return NULL;
  img = image_from_elf(elf);
  elf_end(elf);
  if (!img)
    return NULL;
  img->open_path = strdup(open_path);
  if (strcmp(open_path, key_path) != 0 && key_path[0] == '/' && !(img->alt_path = strdup(key_path)))
    goto fail;
  img->st_dev = (uint64_t)st.st_dev;
  img->st_ino = (uint64_t)st.st_ino;
  img->st_size = (int64_t)st.st_size;
  char key[64];
  snprintf(key, sizeof key, ":%" PRIu64 ":%" PRId64, img->st_ino, img->st_size);
  size_t klen = strlen(path) + strlen(key) + 3 + 2 * strlen(img->build_id);
  img->key = malloc(klen);
  if (!img->open_path || !img->key)
    goto fail;
  if (img->build_id[0])
    snprintf(img->key, klen, "b:%s", img->build_id);
  else
    snprintf(img->key, klen, "f:%s%s", path, key);
  return img;
fail:
  elfsym_image_free(img);
  return NULL;
}

elfsym_image *elfsym_image_open(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return NULL;
  elfsym_image *img = elfsym_image_open_fd(fd, path, path);
  close(fd);
  return img;
}

elfsym_image *elfsym_image_from_memory(const void *data, size_t size) {
  if (!elfsym_libelf_ready() || !data || size < 64)
    return NULL;
  uint8_t *copy = malloc(size);
  if (!copy)
    return NULL;
  memcpy(copy, data, size);
  Elf *elf = elf_memory((char *)copy, size);
  elfsym_image *img = NULL;
  if (elf) {
    img = image_from_elf(elf);
    elf_end(elf);
  }
  if (!img) {
    free(copy);
    return NULL;
  }
  img->mem = copy;
  img->memsize = size;
  img->key = malloc(2 * strlen(img->build_id) + 32);
  if (!img->key) {
    elfsym_image_free(img);
    return NULL;
  }
  if (img->build_id[0])
    sprintf(img->key, "b:%s", img->build_id);
  else
    sprintf(img->key, "m:%p", (void *)img);
  return img;
}
