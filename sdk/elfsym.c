/* ELF reading with libelf (elfutils). Files are opened with ELF_C_READ, not
 * mmap, so a file truncated under us gives read errors instead of SIGBUS, and
 * with O_NONBLOCK, so a path replaced by a FIFO cannot hang the collector. */
#include "elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include "dlphdr.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

typedef struct load_seg {
  uint64_t offset, vaddr, filesz;
  bool exec;
} load_seg;

typedef struct sym {
  uint64_t addr, size;
  uint32_t name; /* offset into names */
} sym;

/* How many symbols below the one at or below an address elfsym_lookup
 * searches for one that covers it (an inner entry point). */
#define ELFSYM_LOOK_BACK 16

/* An address named by the few path (elfsym_lookup_many) before the whole
 * table was read. */
typedef struct picked {
  uint64_t vaddr;
  elfsym_symbol sym; /* name NULL: no symbol; name and demangled owned */
  bool demangle_tried;
} picked;

struct elfsym_image {
  char *key; /* "b:<build id>" or "f:<path>:<inode>:<size>" */
  char *build_id;
  load_seg *loads;
  size_t nloads;
  /* where to re-read the symbols from */
  char *open_path, *alt_path; /* alt: the maps path when opened via map_files */
  char *debug_root;           /* NULL: /usr/lib/debug */
  char *debuglink;            /* .gnu_debuglink's file name, once the symbols were read */
  uint32_t debuglink_crc;     /* and the CRC-32 of that debug file */
  uint64_t st_dev, st_ino;
  int64_t st_size;
  uint8_t *mem; /* memory images keep their bytes */
  size_t memsize;
  bool syms_loaded;
  bool from_memory; /* symbols copied from a loaded object at creation */
  sym *syms;
  size_t nsyms;
  char *names;
  char **dem;     /* lazily demangled names; entry == names+off when not mangled */
  picked *picked; /* sorted by vaddr; only while !syms_loaded matters */
  size_t npicked;
  unsigned refs;
};

typedef struct file_ent {
  char *path;
  uint64_t inode;
  uint32_t dev_major, dev_minor;
  bool deleted;
  elfsym_image *img; /* NULL: could not be read (cached failure) */
  unsigned last_gen;
} file_ent;

struct elfsym_cache {
  file_ent *files;
  size_t nfiles, capfiles;
  elfsym_image **imgs;
  size_t nimgs, capimgs;
  unsigned gen;
  char *debug_root; /* NULL: /usr/lib/debug */
};

static bool g_libelf_ok;
static void libelf_init(void) {
  g_libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static bool libelf_ready(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  return pthread_once(&once, libelf_init) == 0 && g_libelf_ok;
}

/* ---- build id and program headers ---- */

static char *hex_string(const uint8_t *p, size_t n) {
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
      char *s = hex_string((const uint8_t *)data->d_buf + desc_off, nh.n_descsz);
      if (!s)
        *oom = true;
      return s;
    }
    off = next;
  }
  return NULL;
}

static char *read_build_id(Elf *elf, bool *oom) {
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

static int read_loads(Elf *elf, elfsym_image *img) {
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

typedef struct sym_tmp {
  uint64_t addr, size;
  uint32_t name;
  uint8_t bind_rank;
} sym_tmp;

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
static int set_symbols(elfsym_image *img, sym_tmp *tmp, size_t ntmp, char *names) {
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
static ptrdiff_t naming_symbol(const sym *syms, size_t lo, uint64_t vaddr) {
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

/* Where a table's function symbols go. Either all of them, to be sorted
 * into the image's table (set_symbols); or, for a few addresses v[] (the
 * few path), only what elfsym_lookup on that table would look at for each:
 * its symbol at or below and the ELFSYM_LOOK_BACK symbols under that, one
 * per address, the preferred alias (alias_cmp; the first seen of equals,
 * as the stable sort keeps). That needs no sort and no copy of the names,
 * and gives the same answers. */
typedef struct few_ent {
  uint64_t addr, size;
  const char *name; /* into the Elf's data: copied by few_finish */
  uint8_t rank;
} few_ent;

typedef struct symsink {
  size_t taken; /* symbols accepted (the few path counts only up to the first) */
  bool oom;
  /* all: */
  sym_tmp *tmp;
  size_t ntmp, captmp;
  char *names;
  size_t nnames, capnames;
  /* few: the addresses, sorted and distinct; per address k, win[k] holds the
   * highest symbols in (v[k-1], v[k]], highest first; res[k] the answer. */
  const uint64_t *v;
  size_t nv;
  few_ent *win;
  uint8_t *nwin;
  elfsym_symbol *res; /* name NULL: none */
  few_ent *placed;    /* few_wants's answer for placed_addr, reused by few_add */
  uint64_t placed_addr;
  size_t placed_win;
  unsigned placed_at;
} symsink;
#define FEW_WIN (ELFSYM_LOOK_BACK + 1)

static void sink_init(symsink *s, const uint64_t *v, size_t nv) {
  memset(s, 0, sizeof *s);
  s->v = v;
  s->nv = nv;
}

static void sink_free(symsink *s) {
  free(s->tmp);
  free(s->names);
  free(s->win);
  free(s->nwin);
  for (size_t i = 0; s->res && i < s->nv; i++)
    free((char *)s->res[i].name);
  free(s->res);
  sink_init(s, s->v, s->nv);
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

/* One function symbol of a table; -1 on ENOMEM. */
static int sink_add(symsink *s, uint64_t addr, uint64_t size, const char *name, uint8_t rank) {
  if (s->v) {
    if (s->win)
      few_add(s, addr, size, name, rank);
    s->taken++;
    return 0;
  }
  size_t len = strlen(name) + 1;
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
  memcpy(s->names + s->nnames, name, len);
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
    ptrdiff_t at = naming_symbol(tab, m - 1, s->v[k]);
    if (at < 0)
      continue;
    const few_ent *e = &ent[tab[at].name];
    char *name = strdup(e->name);
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
static bool notype_code(Elf *elf, const GElf_Sym *s) {
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
    if (type != STT_FUNC && type != STT_GNU_IFUNC && !(type == STT_NOTYPE && notype_code(elf, &s)))
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
  char *id = read_build_id(elf, &oom);
  bool match = !id || !img->build_id[0] || strcmp(id, img->build_id) == 0;
  free(id);
  if (!match)
    goto done;
  symsink dbg;
  sink_init(&dbg, out->v, out->nv);
  if (symbols_from(elf, NULL, &dbg) && dbg.taken > 0) {
    sink_free(out);
    *out = dbg;
    taken = true;
  } else {
    sink_free(&dbg);
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
static void read_symbols(elfsym_image *img, symsink *out) {
  if (!libelf_ready())
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
static void load_symbols(elfsym_image *img) {
  if (img->syms_loaded)
    return;
  img->syms_loaded = true;
  symsink s;
  sink_init(&s, NULL, 0);
  read_symbols(img, &s);
  if (!s.oom && (!img->from_memory || s.taken > 0) && s.ntmp > 0) {
    sym *old = img->syms;
    char *old_names = img->names;
    if (set_symbols(img, s.tmp, s.ntmp, s.names) == 0) {
      s.tmp = NULL; /* taken */
      s.names = NULL;
      free(old);
      free(old_names);
    }
  }
  sink_free(&s);
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
  img->build_id = read_build_id(elf, &oom);
  if (oom)
    goto fail;
  if (!img->build_id && !(img->build_id = strdup("")))
    goto fail;
  if (read_loads(elf, img) != 0)
    goto fail;
  return img;
fail:
  elfsym_image_free(img);
  return NULL;
}

/* open_path: what to re-open for the symbols; key_path names the file in the key
 * and is the second choice for re-opening. */
static elfsym_image *image_open_fd(int fd, const char *open_path, const char *key_path) {
  const char *path = key_path;
  struct stat st;
  elfsym_image *img = NULL;
  if (!libelf_ready() || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
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
  elfsym_image *img = image_open_fd(fd, path, path);
  close(fd);
  return img;
}

elfsym_image *elfsym_image_from_memory(const void *data, size_t size) {
  if (!libelf_ready() || !data || size < 64)
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
        char *s = hex_string((const uint8_t *)dp, nh->n_descsz);
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
  if (set_symbols(img, tmp, ntmp, names) != 0)
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

const char *elfsym_build_id(const elfsym_image *img) {
  return img->build_id;
}

bool elfsym_pc_to_vaddr(const elfsym_image *img, uint64_t map_start, uint64_t map_offset,
                        uint64_t pc, uint64_t *vaddr) {
  if (pc < map_start)
    return false;
  uint64_t off = pc - map_start + map_offset;
  const load_seg *hit = NULL;
  for (size_t i = 0; i < img->nloads; i++) {
    const load_seg *l = &img->loads[i];
    if (off < l->offset || off - l->offset >= l->filesz)
      continue;
    if (!hit || (l->exec && !hit->exec))
      hit = l;
  }
  if (!hit)
    return false;
  *vaddr = off - hit->offset + hit->vaddr;
  return true;
}

const char *elfsym_debuglink(elfsym_image *img, uint32_t *crc) {
  load_symbols(img);
  if (img->debuglink && crc)
    *crc = img->debuglink_crc;
  return img->debuglink;
}

bool elfsym_table_read(const elfsym_image *img) {
  return img->syms_loaded;
}

size_t elfsym_symbol_count(elfsym_image *img) {
  load_symbols(img);
  return img->nsyms;
}

bool elfsym_lookup(elfsym_image *img, uint64_t vaddr, elfsym_demangle_fn demangle,
                   elfsym_symbol *out) {
  load_symbols(img);
  if (img->nsyms == 0 || vaddr < img->syms[0].addr)
    return false;
  size_t lo = 0, hi = img->nsyms; /* last symbol with addr <= vaddr */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (img->syms[mid].addr <= vaddr)
      lo = mid;
    else
      hi = mid;
  }
  ptrdiff_t at = naming_symbol(img->syms, lo, vaddr);
  if (at < 0)
    return false;
  lo = (size_t)at;
  const sym *s = &img->syms[lo];
  const char *name = img->names + s->name;
  out->name = name;
  out->demangled = name;
  out->addr = s->addr;
  out->size = s->size;
  if (demangle && name[0] == '_' && name[1] == 'Z') {
    if (!img->dem)
      img->dem = calloc(img->nsyms, sizeof *img->dem);
    if (img->dem) {
      if (!img->dem[lo]) {
        int status = -1;
        char *d = demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
          img->dem[lo] = d;
        } else {
          free(d);
          img->dem[lo] = (char *)name;
        }
      }
      out->demangled = img->dem[lo];
    }
  }
  return true;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int picked_cmp(const void *a, const void *b) {
  return u64_cmp(&((const picked *)a)->vaddr, &((const picked *)b)->vaddr);
}

static picked *find_picked(const elfsym_image *img, uint64_t vaddr) {
  picked key = {.vaddr = vaddr};
  return img->npicked ? bsearch(&key, img->picked, img->npicked, sizeof key, picked_cmp) : NULL;
}

/* Names the addresses not answered yet by one pass over the symbol table
 * (the few path), or reads the whole table when they are too many. */
static void pick_symbols(elfsym_image *img, const uint64_t *vaddrs, size_t n) {
  uint64_t *v = malloc((n ? n : 1) * sizeof *v);
  size_t nv = 0;
  if (!v)
    return; /* unnamed this time; asked again next time */
  for (size_t i = 0; i < n; i++)
    if (!find_picked(img, vaddrs[i]))
      v[nv++] = vaddrs[i];
  if (img->npicked + nv > ELFSYM_FEW_MAX) { /* counted with repeats: a big profile, not sorted */
    load_symbols(img);
    goto done;
  }
  qsort(v, nv, sizeof *v, u64_cmp);
  size_t k = 0;
  for (size_t i = 0; i < nv; i++)
    if (k == 0 || v[k - 1] != v[i])
      v[k++] = v[i];
  nv = k;
  if (nv == 0)
    goto done;
  picked *grown = realloc(img->picked, (img->npicked + nv) * sizeof *grown);
  if (!grown)
    goto done;
  img->picked = grown;
  symsink s;
  sink_init(&s, v, nv);
  read_symbols(img, &s);
  if (img->from_memory && s.taken == 0) {
    img->syms_loaded = true; /* no debug file: the .dynsym read at creation is the table */
  } else if (!s.oom) {
    for (size_t i = 0; i < nv; i++) {
      picked *p = &img->picked[img->npicked++];
      memset(p, 0, sizeof *p);
      p->vaddr = v[i];
      if (s.res && s.res[i].name) {
        p->sym = s.res[i];
        s.res[i].name = NULL; /* taken */
      }
    }
    qsort(img->picked, img->npicked, sizeof *img->picked, picked_cmp);
  }
  sink_free(&s);
done:
  free(v);
}

void elfsym_lookup_many(elfsym_image *img, const uint64_t *vaddrs, size_t n,
                        elfsym_demangle_fn demangle, elfsym_symbol *out, bool *found) {
  if (!img->syms_loaded)
    pick_symbols(img, vaddrs, n);
  for (size_t i = 0; i < n; i++) {
    if (img->syms_loaded) {
      found[i] = elfsym_lookup(img, vaddrs[i], demangle, &out[i]);
      continue;
    }
    picked *p = find_picked(img, vaddrs[i]);
    found[i] = p && p->sym.name;
    if (!found[i])
      continue;
    const char *name = p->sym.name;
    if (demangle && !p->demangle_tried && name[0] == '_' && name[1] == 'Z') {
      int status = -1;
      char *d = demangle(name, NULL, NULL, &status);
      if (d && status == 0)
        p->sym.demangled = d;
      else
        free(d);
      p->demangle_tried = true;
    }
    out[i] = p->sym;
    if (!demangle)
      out[i].demangled = name;
  }
}

/* ---- cache ---- */

elfsym_cache *elfsym_cache_new(void) {
  return calloc(1, sizeof(elfsym_cache));
}

void elfsym_cache_free(elfsym_cache *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->nfiles; i++)
    free(c->files[i].path);
  for (size_t i = 0; i < c->nimgs; i++)
    elfsym_image_free(c->imgs[i]);
  free(c->files);
  free(c->imgs);
  free(c->debug_root);
  free(c);
}

/* Tries the exact mapped file first (works for deleted and replaced files),
 * then the path. */
static elfsym_image *open_mapped(const elfsym_fileid *id) {
  char mf[96];
  snprintf(mf, sizeof mf, "/proc/self/map_files/%" PRIx64 "-%" PRIx64, id->map_start, id->map_end);
  if (id->map_end > id->map_start) {
    int fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      elfsym_image *img = image_open_fd(fd, mf, id->path ? id->path : "");
      close(fd);
      if (img)
        return img;
    }
  }
  elfsym_image *img = NULL;
  if (!id->deleted && id->path && id->path[0] == '/')
    img = elfsym_image_open(id->path);
  if (!img)
    img = elfsym_image_from_loaded(id->map_start);
  return img;
}

static elfsym_image *intern_image(elfsym_cache *c, elfsym_image *img) {
  for (size_t i = 0; i < c->nimgs; i++) {
    if (strcmp(c->imgs[i]->key, img->key) == 0) {
      elfsym_image_free(img);
      return c->imgs[i];
    }
  }
  if (c->nimgs == c->capimgs) {
    size_t cap = c->capimgs ? c->capimgs * 2 : 16;
    elfsym_image **v = realloc(c->imgs, cap * sizeof *v);
    if (!v) {
      elfsym_image_free(img);
      return NULL;
    }
    c->imgs = v;
    c->capimgs = cap;
  }
  c->imgs[c->nimgs++] = img;
  return img;
}

int elfsym_cache_set_debug_root(elfsym_cache *c, const char *dir) {
  char *d = NULL;
  if (dir && !(d = strdup(dir)))
    return -1;
  free(c->debug_root);
  c->debug_root = d;
  return 0;
}

elfsym_image *elfsym_cache_get(elfsym_cache *c, const elfsym_fileid *id) {
  const char *path = id->path ? id->path : "";
  for (size_t i = 0; i < c->nfiles; i++) {
    file_ent *f = &c->files[i];
    if (f->inode == id->inode && f->dev_major == id->dev_major && f->dev_minor == id->dev_minor &&
        f->deleted == id->deleted && strcmp(f->path, path) == 0) {
      f->last_gen = c->gen;
      return f->img;
    }
  }
  if (c->nfiles == c->capfiles) {
    size_t cap = c->capfiles ? c->capfiles * 2 : 16;
    file_ent *v = realloc(c->files, cap * sizeof *v);
    if (!v)
      return NULL;
    c->files = v;
    c->capfiles = cap;
  }
  char *pcopy = strdup(path);
  if (!pcopy)
    return NULL;
  elfsym_image *img = open_mapped(id);
  if (img && c->debug_root && !(img->debug_root = strdup(c->debug_root))) {
    elfsym_image_free(img);
    img = NULL;
  }
  if (img) {
    img = intern_image(c, img);
    if (img)
      img->refs++;
  }
  file_ent *f = &c->files[c->nfiles++];
  f->path = pcopy;
  f->inode = id->inode;
  f->dev_major = id->dev_major;
  f->dev_minor = id->dev_minor;
  f->deleted = id->deleted;
  f->img = img;
  f->last_gen = c->gen;
  return img;
}

void elfsym_cache_sweep(elfsym_cache *c, unsigned keep) {
  size_t k = 0;
  for (size_t i = 0; i < c->nfiles; i++) {
    file_ent *f = &c->files[i];
    if (c->gen - f->last_gen > keep) {
      if (f->img)
        f->img->refs--;
      free(f->path);
      continue;
    }
    c->files[k++] = *f;
  }
  c->nfiles = k;
  k = 0;
  for (size_t i = 0; i < c->nimgs; i++) {
    if (c->imgs[i]->refs == 0) {
      elfsym_image_free(c->imgs[i]);
      continue;
    }
    c->imgs[k++] = c->imgs[i];
  }
  c->nimgs = k;
  c->gen++;
}

size_t elfsym_cache_images(const elfsym_cache *c) {
  return c->nimgs;
}
