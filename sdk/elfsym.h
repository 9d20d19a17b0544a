/* ELF symbol tables and build ids via libelf, cached per file: a file (path,
 * device, inode) resolves to an image keyed by its GNU build id (or by path,
 * inode and size when it has none), so a library mapped again, or the same
 * build at another path, is read once. Symbols are read on first lookup:
 * .symtab, else a separate debug file (by build id, then by .gnu_debuglink
 * with its CRC checked, in GDB's order), else .dynsym. A file is
 * opened through /proc/self/map_files (the exact mapped file, even if deleted
 * or replaced), else its path, else read from loaded memory.
 * Odd files (stripped, truncated, unreadable, deleted) never crash: they give
 * an image without symbols, or none at all.
 * Not async-signal-safe (allocates, does I/O). An elfsym_cache and everything
 * it returns belong to one thread at a time (the collector thread). */
#ifndef PUSHPROF_ELFSYM_H
#define PUSHPROF_ELFSYM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct elfsym_cache elfsym_cache;
typedef struct elfsym_image elfsym_image; /* owned by the cache */

/* Identifies a mapped file as /proc/self/maps describes it. */
typedef struct elfsym_fileid {
  const char *path;
  uint64_t inode;
  uint32_t dev_major, dev_minor;
  bool deleted;
  uint64_t map_start, map_end; /* to open /proc/self/map_files/<start>-<end> */
} elfsym_fileid;

/* Returns (a pointer into) the demangled form of a mangled name, malloc'ed,
 * or NULL when it is not a mangled name. Matches __cxa_demangle's contract. */
typedef char *(*elfsym_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

elfsym_cache *elfsym_cache_new(void); /* NULL on ENOMEM */
void elfsym_cache_free(elfsym_cache *c);

/* Where separate debug files are looked up when a file has no .symtab: by
 * build id (<dir>/.build-id/xx/yyyy.debug), then by .gnu_debuglink name
 * NAME in the file's directory D (D/NAME, D/.debug/NAME, <dir>/D/NAME).
 * NULL restores the default /usr/lib/debug, "" turns every lookup off
 * (the ones in D too). Affects images opened afterwards. 0 or -1 (ENOMEM). */
int elfsym_cache_set_debug_root(elfsym_cache *c, const char *dir);

/* The image of a mapped file; NULL if it cannot be opened or is not ELF (the
 * failure is cached too). Valid until the next elfsym_cache_sweep. */
elfsym_image *elfsym_cache_get(elfsym_cache *c, const elfsym_fileid *id);

/* Opens a file by path without the cache (tests, tools). Free with
 * elfsym_image_free. NULL if unreadable or not ELF. */
elfsym_image *elfsym_image_open(const char *path);
/* An ELF image in memory (e.g. the vDSO); the bytes are copied. */
elfsym_image *elfsym_image_from_memory(const void *data, size_t size);
/* The object the dynamic linker loaded at addr (dl_iterate_phdr), read from
 * memory: build id and .dynsym. The fallback for files that cannot be opened
 * (deleted, with /proc/self/map_files refused; paths outside a chroot). */
elfsym_image *elfsym_image_from_loaded(uint64_t addr);
void elfsym_image_free(elfsym_image *img);

/* Starts a new generation: files not looked up again in the last `keep`
 * generations are dropped. */
void elfsym_cache_sweep(elfsym_cache *c, unsigned keep);
size_t elfsym_cache_images(const elfsym_cache *c); /* live images (tests) */

/* Lower-case hex GNU build id, "" if the file has none. */
const char *elfsym_build_id(const elfsym_image *img);

/* Converts a runtime address inside a mapping (start, file offset) to the
 * ELF virtual address via the PT_LOAD headers. false if no segment covers it. */
bool elfsym_pc_to_vaddr(const elfsym_image *img, uint64_t map_start, uint64_t map_offset,
                        uint64_t pc, uint64_t *vaddr);

typedef struct elfsym_symbol {
  const char *name;      /* as in the symbol table (mangled) */
  const char *demangled; /* demangled if a demangler was given and it is mangled, else name */
  uint64_t addr, size;   /* ELF virtual address of the symbol */
} elfsym_symbol;

/* Finds the function containing vaddr (reads the symbols on first use).
 * demangle may be NULL. false if none. */
bool elfsym_lookup(elfsym_image *img, uint64_t vaddr, elfsym_demangle_fn demangle,
                   elfsym_symbol *out);
/* The same answers for n addresses at once (out[i] valid where found[i]).
 * While an image has been asked at most ELFSYM_FEW_MAX addresses this way
 * (not counting ones answered before), and no elfsym_lookup, they are
 * named by one pass over its symbol table (no sort, no copy of the names;
 * a separate debug file is still read when the object has no .symtab),
 * and the image keeps only those answers; past that the whole table is
 * read, as elfsym_lookup does. A process that took a few samples thus pays
 * little to name them. The names in out[] belong to the image (as
 * elfsym_lookup's). */
#define ELFSYM_FEW_MAX 64
void elfsym_lookup_many(elfsym_image *img, const uint64_t *vaddrs, size_t n,
                        elfsym_demangle_fn demangle, elfsym_symbol *out, bool *found);
size_t elfsym_symbol_count(elfsym_image *img);   /* reads the symbols if needed */
bool elfsym_table_read(const elfsym_image *img); /* the whole table was read (tests) */
/* The file name in the image's .gnu_debuglink and (crc may be NULL) the
 * CRC-32 it gives for the debug file; NULL if none or not a plain name. Set
 * only for an image without .symtab (reads the symbols if needed). */
const char *elfsym_debuglink(elfsym_image *img, uint32_t *crc);
#endif
