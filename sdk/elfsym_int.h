/* Internal to the ELF reader (elfsym.c: lookups and the cache;
 * elfsym_file.c: images of files, with their build ids, program headers,
 * symbol tables and debug files read with libelf; elfsym_loaded.c: images
 * of objects read from loaded memory). Not
 * part of the SDK's interface: elfsym.h is. */
#ifndef PUSHPROF_ELFSYM_INT_H
#define PUSHPROF_ELFSYM_INT_H
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elfsym.h"

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

typedef struct sym_tmp {
  uint64_t addr, size;
  uint32_t name;
  uint8_t bind_rank;
} sym_tmp;

/* Where a table's function symbols go. Either all of them, to be sorted
 * into the image's table (elfsym_set_symbols); or, for a few addresses v[] (the
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

/* libelf initialised (once, thread-safe). */
bool elfsym_libelf_ready(void);
/* The build id as lowercase hex (malloc'ed), or NULL (*oom set on ENOMEM). */
char *elfsym_hex_string(const uint8_t *p, size_t n);
char *elfsym_read_build_id(Elf *elf, bool *oom);
/* The PT_LOAD segments into img; 0 or -1. */
int elfsym_read_loads(Elf *elf, elfsym_image *img);
/* An STT_NOTYPE symbol in an executable section (hand-written assembly). */
bool elfsym_notype_code(Elf *elf, const GElf_Sym *s);
/* Sorts tmp, keeps the preferred alias per address and installs the table
 * and names (taken) into img; 0 or -1 (ENOMEM). */
int elfsym_set_symbols(elfsym_image *img, sym_tmp *tmp, size_t ntmp, char *names);
/* Reads img's symbol table once (file, debug file, or nothing). */
void elfsym_load_symbols(elfsym_image *img);
/* The symbol naming vaddr at or below index lo, or -1. */
ptrdiff_t elfsym_naming_symbol(const sym *syms, size_t lo, uint64_t vaddr);
void elfsym_sink_init(symsink *s, const uint64_t *v, size_t nv);
void elfsym_sink_free(symsink *s);
/* An image of the ELF file open on fd (taken), read at open_path; keyed by
 * its build id, else by key_path with its inode and size. NULL if it is not
 * a readable ELF file or on ENOMEM. */
elfsym_image *elfsym_image_open_fd(int fd, const char *open_path, const char *key_path);
/* Reads img's symbols (its file, then its debug file) into out. */
void elfsym_read_symbols(elfsym_image *img, symsink *out);
#endif
