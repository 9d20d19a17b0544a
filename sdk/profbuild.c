/* Aggregated stacks -> pprof. A build runs in passes so ids come out dense and
 * mappings know whether they have functions before they are added:
 *   1. collect every (pc, is-return-address) frame, sort, dedup;
 *   2. symbolize each distinct frame once (return addresses as pc-1);
 *   3. add mappings (the main executable first, as pprof expects);
 *   4. add functions and locations; 5. add samples (frames found by bsearch). */
#include "profbuild.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlphdr.h"
#include "elfsym.h"
#include "procmaps.h"

/* Generations a file may stay out of /proc/self/maps before its symbols are
 * dropped: a library dlclose'd and dlopen'ed again soon is not re-read. */
#define PROFBUILD_CACHE_KEEP 16

typedef struct pmap {
  uint64_t start, end, offset;
  const char *path;  /* points into pb->maps */
  elfsym_image *img; /* NULL: no symbols (unreadable, not ELF, anonymous) */
  bool is_main;
  /* A file not opened yet: the first build with a pc in it opens it
   * (pmap_image), so a profile reads only the objects its samples touch. */
  bool img_pending, deleted;
  uint64_t inode;
  uint32_t dev_major, dev_minor;
} pmap;

/* A library dlclose'd since some build: its executable mappings, with
 * symbols read while it was still mapped. */
typedef struct retained {
  struct retained *next;
  elfsym_cache *cache; /* owns the images of maps[] */
  pmap *maps;          /* paths owned */
  size_t n;
  unsigned builds_left;
} retained;

/* Pushed by any thread at dlclose, taken whole by a refresh. */
static _Atomic(retained *) g_unloaded;
static atomic_uint g_unloaded_n;

struct profbuild {
  procmaps maps;
  retained *retained; /* newest first */
  pmap *pm;           /* executable regions, sorted by start */
  size_t npm;
  elfsym_cache *cache;
  elfsym_image *vdso; /* owned, read once from memory */
  uint64_t vdso_start;
  bool maps_loaded;
  char *exe_path; /* readlink /proc/self/exe, " (deleted)" stripped */
  uint64_t exe_ino;
};

typedef struct frame_key {
  uint64_t pc;
  uint64_t ret; /* 1 for return addresses (symbolized as pc-1) */
} frame_key;

typedef struct frame_info {
  int64_t pm;        /* index in pb->pm, -1 if the pc is in no known mapping */
  elfsym_symbol sym; /* valid if found */
  bool found;
  uint64_t location_id;
} frame_info;

static char *read_exe_path(void) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return NULL;
  buf[n] = '\0';
  static const char del[] = " (deleted)";
  size_t dl = sizeof del - 1;
  if ((size_t)n > dl && strcmp(buf + n - dl, del) == 0)
    buf[n - dl] = '\0';
  return strdup(buf);
}

profbuild *profbuild_new(void) {
  profbuild *pb = calloc(1, sizeof *pb);
  if (!pb)
    return NULL;
  pb->cache = elfsym_cache_new();
  if (!pb->cache)
    goto fail;
  pb->exe_path = read_exe_path(); /* NULL is fine: no main mapping preference */
  struct stat st;
  if (stat("/proc/self/exe", &st) == 0)
    pb->exe_ino = (uint64_t)st.st_ino;
  return pb;
fail:
  profbuild_free(pb);
  return NULL;
}

static void retained_free(retained *r) {
  for (size_t i = 0; r && i < r->n; i++)
    free((char *)r->maps[i].path);
  if (r) {
    elfsym_cache_free(r->cache);
    free(r->maps);
  }
  free(r);
}

void profbuild_free(profbuild *pb) {
  if (!pb)
    return;
  for (retained *r = pb->retained, *next; r; r = next) {
    next = r->next;
    retained_free(r);
  }
  free(pb->pm);
  procmaps_free(&pb->maps);
  elfsym_cache_free(pb->cache);
  elfsym_image_free(pb->vdso);
  free(pb->exe_path);
  free(pb);
}

static elfsym_image *vdso_image(profbuild *pb, const procmaps_entry *e) {
  uint64_t base = (uint64_t)getauxval(AT_SYSINFO_EHDR);
  if (base == 0 || base != e->start || e->end <= e->start || e->end - e->start > (1u << 20))
    return NULL;
  if (!pb->vdso || pb->vdso_start != base) {
    elfsym_image_free(pb->vdso);
    pb->vdso = elfsym_image_from_memory((const void *)(uintptr_t)base, e->end - e->start);
    pb->vdso_start = base;
  }
  return pb->vdso;
}

static int pmap_cmp(const void *a, const void *b) {
  const pmap *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- libraries unloaded between builds ---- */

typedef struct span_query {
  const struct link_map *lm;
  uint64_t lo, hi;
} span_query;

static int span_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  span_query *q = arg;
  if (info->dlpi_addr != q->lm->l_addr || info->dlpi_name != q->lm->l_name)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (q->hi == 0 || lo < q->lo)
      q->lo = lo;
    if (hi > q->hi)
      q->hi = hi;
  }
  return 1;
}

static int retained_add(retained *r, const procmaps_entry *e) {
  char *path = strdup(e->path);
  if (!path)
    return -1;
  elfsym_fileid id = {e->path, e->inode, e->dev_major, e->dev_minor, e->deleted, e->start, e->end};
  elfsym_image *img = elfsym_cache_get(r->cache, &id);
  if (img)
    (void)elfsym_symbol_count(img); /* now: the file may be gone at build time */
  r->maps[r->n++] =
      (pmap){.start = e->start, .end = e->end, .offset = e->offset, .path = path, .img = img};
  return 0;
}

void profbuild_retain_library(void *handle) {
  struct link_map *lm = NULL;
  procmaps m = {0};
  retained *r = NULL;
  if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
      lm->l_name[0] == '\0')
    return; /* the main program is never unloaded */
  if (atomic_fetch_add(&g_unloaded_n, 1) >= PROFBUILD_RETAIN_MAX)
    goto fail; /* no build for a while: its names are lost, memory is not */
  span_query q = {.lm = lm};
  if (dlphdr_iterate(span_cb, &q) == 0 || q.hi == 0 || procmaps_read_self(&m) != 0)
    goto fail;
  r = calloc(1, sizeof *r);
  if (!r || !(r->cache = elfsym_cache_new()) || !(r->maps = calloc(m.n ? m.n : 1, sizeof *r->maps)))
    goto fail;
  for (size_t i = 0; i < m.n; i++) {
    const procmaps_entry *e = &m.v[i];
    if (e->executable && procmaps_is_file(e) && e->start >= q.lo && e->end <= q.hi &&
        retained_add(r, e) != 0)
      goto fail;
  }
  if (r->n == 0)
    goto fail;
  procmaps_free(&m);
  r->builds_left = 2; /* a sample taken just before dlclose may reach only the second */
  r->next = atomic_load_explicit(&g_unloaded, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&g_unloaded, &r->next, r, memory_order_release,
                                                memory_order_relaxed))
    ;
  return;
fail:
  atomic_fetch_sub(&g_unloaded_n, 1);
  procmaps_free(&m);
  retained_free(r);
}

/* Takes the libraries retained since the last refresh, newest first ahead
 * of the older ones. */
static void adopt_unloaded(profbuild *pb) {
  retained *fresh = atomic_exchange_explicit(&g_unloaded, NULL, memory_order_acquire);
  if (!fresh)
    return;
  retained *last = fresh;
  unsigned n = 1;
  for (; last->next; last = last->next)
    n++;
  atomic_fetch_sub(&g_unloaded_n, n);
  last->next = pb->retained;
  pb->retained = fresh;
}

/* Counts down every retained library's builds; returns those whose last
 * build is over, to free once pb->pm no longer points into them. */
static retained *expire_retained(profbuild *pb) {
  retained *expired = NULL, **link = &pb->retained;
  while (*link) {
    retained *r = *link;
    if (r->builds_left == 0) {
      *link = r->next;
      r->next = expired;
      expired = r;
    } else {
      r->builds_left--;
      link = &r->next;
    }
  }
  return expired;
}

/* Adds the retained mappings that overlap no current or newer one (the
 * address range may hold another library now, or the same one again). */
static size_t add_retained(const profbuild *pb, pmap *pm, size_t n) {
  for (const retained *r = pb->retained; r; r = r->next) {
    for (size_t i = 0; i < r->n; i++) {
      const pmap *p = &r->maps[i];
      bool clash = false;
      for (size_t j = 0; j < n && !clash; j++)
        clash = pm[j].start < p->end && p->start < pm[j].end;
      if (!clash)
        pm[n++] = *p;
    }
  }
  return n;
}

int profbuild_refresh_maps(profbuild *pb) {
  procmaps m;
  if (procmaps_read_self(&m) != 0)
    return -1;
  adopt_unloaded(pb);
  size_t nexec = 0;
  for (size_t i = 0; i < m.n; i++)
    if (m.v[i].executable)
      nexec++;
  for (const retained *r = pb->retained; r; r = r->next)
    nexec += r->n;
  pmap *pm = calloc(nexec ? nexec : 1, sizeof *pm);
  if (!pm) {
    procmaps_free(&m);
    return -1;
  }
  retained *expired = expire_retained(pb);
  elfsym_cache_sweep(pb->cache, PROFBUILD_CACHE_KEEP);
  size_t n = 0;
  for (size_t i = 0; i < m.n; i++) {
    const procmaps_entry *e = &m.v[i];
    if (!e->executable)
      continue;
    bool file = procmaps_is_file(e);
    bool vdso = strcmp(e->path, "[vdso]") == 0;
    if (!file && !vdso)
      continue; /* JIT code, anonymous: pcs there stay address-only */
    pmap *p = &pm[n++];
    p->start = e->start;
    p->end = e->end;
    p->offset = e->offset;
    p->path = e->path;
    if (vdso) {
      p->img = vdso_image(pb, e);
    } else {
      p->img_pending = true;
      p->inode = e->inode;
      p->dev_major = e->dev_major;
      p->dev_minor = e->dev_minor;
      p->deleted = e->deleted;
      p->is_main = (pb->exe_path && strcmp(pb->exe_path, e->path) == 0) ||
                   (pb->exe_ino != 0 && pb->exe_ino == e->inode);
    }
  }
  n = add_retained(pb, pm, n);
  qsort(pm, n, sizeof *pm, pmap_cmp); /* find_pmap relies on it */
  free(pb->pm);
  procmaps_free(&pb->maps);
  pb->maps = m;
  pb->pm = pm;
  pb->npm = n;
  pb->maps_loaded = true;
  for (retained *next; expired; expired = next) {
    next = expired->next;
    retained_free(expired);
  }
  return 0;
}

/* The mapping's image, opened on first use (see pmap.img_pending). */
static elfsym_image *pmap_image(profbuild *pb, pmap *p) {
  if (p->img_pending) {
    elfsym_fileid id = {p->path,    p->inode, p->dev_major, p->dev_minor,
                        p->deleted, p->start, p->end};
    p->img = elfsym_cache_get(pb->cache, &id);
    p->img_pending = false;
  }
  return p->img;
}

static int frame_key_cmp(const void *a, const void *b) {
  const frame_key *x = a, *y = b;
  if (x->pc != y->pc)
    return x->pc < y->pc ? -1 : 1;
  if (x->ret != y->ret)
    return x->ret < y->ret ? -1 : 1;
  return 0;
}

static int64_t find_pmap(const pmap *pm, size_t n, uint64_t pc) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pc < pm[mid].start)
      hi = mid;
    else if (pc >= pm[mid].end)
      lo = mid + 1;
    else
      return (int64_t)mid;
  }
  return -1;
}

static elfsym_demangle_fn find_demangler(void) {
  /* Present exactly in processes that link libstdc++, which are those with
   * mangled names; the SDK itself needs no C++ runtime. */
  union {
    void *p;
    elfsym_demangle_fn fn;
  } u;
  u.p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  return u.fn;
}

static int add_header(pp_builder *b, const profbuild_meta *meta) {
  if (meta->types) {
    for (size_t i = 0; i < meta->ntypes; i++)
      if (pp_builder_add_sample_type(b, meta->types[i].type, meta->types[i].unit) != 0)
        return -1;
    if (pp_builder_set_period(b, meta->period_type.type, meta->period_type.unit, meta->period) != 0)
      return -1;
    if (meta->default_type && pp_builder_set_default_sample_type(b, meta->default_type) != 0)
      return -1;
  } else {
    if (pp_builder_add_sample_type(b, "samples", "count") != 0)
      return -1;
    if (pp_builder_add_sample_type(b, "cpu", "nanoseconds") != 0)
      return -1;
    if (pp_builder_set_period(b, "cpu", "nanoseconds", meta->period_ns) != 0)
      return -1;
  }
  pp_builder_set_time(b, meta->time_nanos, meta->duration_nanos);
  for (size_t i = 0; i < meta->ncomments; i++)
    if (meta->comments[i] && pp_builder_add_comment(b, meta->comments[i]) != 0)
      return -1;
  return 0;
}

static uint64_t pseudo_location(pp_builder *b, const char *name) {
  uint64_t fid = pp_builder_function(b, name, name, "", 0);
  if (fid == 0)
    return 0;
  int64_t line = 0;
  return pp_builder_location(b, 0, 0, &fid, &line, 1);
}

static int frame_index(const frame_key *keys, size_t n, const frame_key *k, size_t *idx) {
  const frame_key *f = bsearch(k, keys, n, sizeof *keys, frame_key_cmp);
  if (!f)
    return -1;
  *idx = (size_t)(f - keys);
  return 0;
}

/* Names every frame (return addresses as pc-1) and marks per mapping
 * whether its frames got names (1) or some did not (2). -1 on ENOMEM. */
static int symbolize(profbuild *pb, const frame_key *keys, frame_info *info, size_t nu,
                     elfsym_demangle_fn demangle, unsigned char *map_funcs) {
  elfsym_image **img = calloc(nu ? nu : 1, sizeof *img);
  uint64_t *vaddr = malloc((nu ? nu : 1) * sizeof *vaddr);
  uint64_t *batch = malloc((nu ? nu : 1) * sizeof *batch);
  size_t *idx = malloc((nu ? nu : 1) * sizeof *idx);
  elfsym_symbol *syms = malloc((nu ? nu : 1) * sizeof *syms);
  bool *found = malloc((nu ? nu : 1) * sizeof *found);
  int rc = -1;
  if (!img || !vaddr || !batch || !idx || !syms || !found)
    goto done;
  for (size_t i = 0; i < nu; i++) {
    frame_info *fi = &info[i];
    uint64_t q = keys[i].ret && keys[i].pc > 0 ? keys[i].pc - 1 : keys[i].pc;
    fi->pm = find_pmap(pb->pm, pb->npm, q);
    if (fi->pm < 0)
      continue;
    pmap *p = &pb->pm[fi->pm];
    img[i] = pmap_image(pb, p);
    if (!img[i] || !elfsym_pc_to_vaddr(img[i], p->start, p->offset, q, &vaddr[i])) {
      img[i] = NULL;
      map_funcs[fi->pm] |= 2;
    }
  }
  for (size_t i = 0; i < nu; i++) {
    if (!img[i])
      continue;
    elfsym_image *cur = img[i];
    size_t n = 0;
    for (size_t j = i; j < nu; j++) {
      if (img[j] != cur)
        continue;
      idx[n] = j;
      batch[n++] = vaddr[j];
      img[j] = NULL; /* done */
    }
    elfsym_lookup_many(cur, batch, n, demangle, syms, found);
    for (size_t k = 0; k < n; k++) {
      frame_info *fi = &info[idx[k]];
      fi->found = found[k];
      if (found[k])
        fi->sym = syms[k];
      map_funcs[fi->pm] |= found[k] ? 1 : 2;
    }
  }
  rc = 0;
done:
  free(img);
  free(vaddr);
  free(batch);
  free(idx);
  free(syms);
  free(found);
  return rc;
}

int profbuild_build(profbuild *pb, const profbuild_stack *stacks, size_t n,
                    const profbuild_meta *meta, uint8_t **out, size_t *len) {
  pp_builder *b = NULL;
  frame_key *keys = NULL;
  frame_info *info = NULL;
  uint64_t *map_ids = NULL, *locs = NULL;
  /* Per mapping: 1 some location got a name, 2 some did not. has_functions
   * only when every location has one, so readers (go tool pprof, Pyroscope,
   * Parca) still symbolize the rest by build id. */
  unsigned char *map_funcs = NULL;
  int rc = -1;
  if (!pb || !meta || !out || !len || (n && !stacks))
    return -1;
  if (!pb->maps_loaded)
    (void)profbuild_refresh_maps(pb); /* without maps: address-only */
  elfsym_demangle_fn demangle = find_demangler();

  /* 1. distinct frames */
  size_t nframes = 0, maxdepth = 1;
  for (size_t i = 0; i < n; i++) {
    if (!stacks[i].pcs)
      continue;
    nframes += stacks[i].depth;
    if (stacks[i].depth > maxdepth)
      maxdepth = stacks[i].depth;
  }
  keys = malloc((nframes ? nframes : 1) * sizeof *keys);
  locs = malloc((maxdepth + 1) * sizeof *locs); /* + a pseudo leaf */
  if (!keys || !locs)
    goto done;
  size_t nk = 0;
  for (size_t i = 0; i < n; i++) {
    if (!stacks[i].pcs)
      continue;
    for (uint32_t d = 0; d < stacks[i].depth; d++) {
      keys[nk].pc = (uint64_t)stacks[i].pcs[d];
      keys[nk].ret = d > 0 || stacks[i].leaf_is_return;
      nk++;
    }
  }
  qsort(keys, nk, sizeof *keys, frame_key_cmp);
  size_t nu = 0;
  for (size_t i = 0; i < nk; i++)
    if (nu == 0 || frame_key_cmp(&keys[nu - 1], &keys[i]) != 0)
      keys[nu++] = keys[i];

  /* 2. symbolize, per object all its addresses at once (few: no full table) */
  info = calloc(nu ? nu : 1, sizeof *info);
  map_funcs = calloc(pb->npm ? pb->npm : 1, sizeof *map_funcs);
  map_ids = calloc(pb->npm ? pb->npm : 1, sizeof *map_ids);
  if (!info || !map_funcs || !map_ids)
    goto done;
  if (symbolize(pb, keys, info, nu, demangle, map_funcs) != 0)
    goto done;

  /* 3. header and mappings, main executable first */
  b = pp_builder_new();
  if (!b || add_header(b, meta) != 0)
    goto done;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < pb->npm; i++) {
      pmap *p = &pb->pm[i];
      if (p->is_main != (pass == 0))
        continue;
      /* Build ids of the objects samples touched (and of the program):
       * the others are listed by path only, never opened. */
      elfsym_image *img = map_funcs[i] || p->is_main ? pmap_image(pb, p) : p->img;
      map_ids[i] = pp_builder_mapping(b, p->start, p->end, p->offset, p->path,
                                      img ? elfsym_build_id(img) : "", map_funcs[i] == 1);
      if (map_ids[i] == 0)
        goto done;
    }
  }

  /* 4. functions and locations */
  for (size_t i = 0; i < nu; i++) {
    frame_info *fi = &info[i];
    uint64_t mid = fi->pm >= 0 ? map_ids[fi->pm] : 0;
    if (fi->found) {
      uint64_t fid = pp_builder_function(b, fi->sym.demangled, fi->sym.name, "", 0);
      int64_t line = 0;
      if (fid == 0)
        goto done;
      fi->location_id = pp_builder_location(b, mid, keys[i].pc, &fid, &line, 1);
    } else {
      fi->location_id = pp_builder_location(b, mid, keys[i].pc, NULL, NULL, 0);
    }
    if (fi->location_id == 0)
      goto done;
  }

  /* 5. samples */
  for (size_t i = 0; i < n; i++) {
    const profbuild_stack *s = &stacks[i];
    int64_t cpu[2] = {s->count, s->count * meta->period_ns};
    const int64_t *values = meta->types ? s->values : cpu;
    size_t nvalues = meta->types ? meta->ntypes : 2;
    if (!values)
      goto done;
    size_t nlocs = 0;
    if (s->special || !s->pcs || s->depth == 0) {
      locs[0] = pseudo_location(b, s->special ? s->special : "[pushprof] no stack");
      if (locs[0] == 0)
        goto done;
      nlocs = 1;
    }
    if (s->pcs) {
      for (uint32_t d = 0; d < s->depth; d++) {
        frame_key k = {(uint64_t)s->pcs[d], d > 0 || s->leaf_is_return};
        size_t idx;
        if (frame_index(keys, nu, &k, &idx) != 0)
          goto done; /* cannot happen */
        locs[nlocs++] = info[idx].location_id;
      }
    }
    if (pp_builder_sample(b, locs, nlocs, values, nvalues, s->labels, s->nlabels) != 0)
      goto done;
  }
  rc = pp_builder_pack(b, out, len);
done:
  if (b)
    pp_builder_free(b);
  free(keys);
  free(info);
  free(map_ids);
  free(map_funcs);
  free(locs);
  return rc;
}
