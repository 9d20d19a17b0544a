/* The SDK's ELF reader: lookups of a program counter's symbol in an image
 * (a file or memory, keyed by build id or path) and the cache of images by
 * mapped file. Images of files are elfsym_file.c's, of loaded objects
 * elfsym_loaded.c's (elfsym_int.h). */
#include "elfsym_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dlphdr.h"

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
  elfsym_load_symbols(img);
  if (img->debuglink && crc)
    *crc = img->debuglink_crc;
  return img->debuglink;
}

bool elfsym_table_read(const elfsym_image *img) {
  return img->syms_loaded;
}

size_t elfsym_symbol_count(elfsym_image *img) {
  elfsym_load_symbols(img);
  return img->nsyms;
}

bool elfsym_lookup(elfsym_image *img, uint64_t vaddr, elfsym_demangle_fn demangle,
                   elfsym_symbol *out) {
  elfsym_load_symbols(img);
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
  ptrdiff_t at = elfsym_naming_symbol(img->syms, lo, vaddr);
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
    elfsym_load_symbols(img);
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
  elfsym_sink_init(&s, v, nv);
  elfsym_read_symbols(img, &s);
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
  elfsym_sink_free(&s);
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
      elfsym_image *img = elfsym_image_open_fd(fd, mf, id->path ? id->path : "");
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
