/* See unwind_tables.h for the publication contract. g_mu serialises
 * refreshes (the collector, and the final drain at stop); the handler never
 * takes it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unwind_tables.h"

#include "cfi_elf.h"
#include "dlphdr.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct utab_obj {
  uintptr_t lo, hi; /* executable PT_LOAD range */
  uintptr_t bias;   /* dlpi_addr: row pcs are relative to it */
  cfi_table *t;     /* NULL: no table (yet, or no CFI) */
  uint64_t ident;   /* hash of the path and build id: another file at the same place differs */
  int done;         /* a build was tried: t is final */
} utab_obj;

typedef struct utab_set {
  uint32_t n;
  utab_obj o[];
} utab_set;

/* An object found by a scan that needs a table: its .eh_frame copied out
 * while the loader's lock kept it mapped. */
typedef struct pending {
  uintptr_t lo, hi, bias, eh_addr;
  uint8_t *eh; /* malloc'd copy, NULL if none */
  size_t eh_len;
  char *path;        /* the file, for its .debug_frame (NULL: none to read) */
  char build_id[41]; /* and its GNU build id, for a separate debug file */
  int prio;          /* 0 main executable, 1 libc, 2 others */
} pending;

typedef struct scan {
  const utab_set *cur;
  uintptr_t only_pc; /* non-zero: copy only the object holding this pc */
  int max_prio;      /* copy only objects of this priority or more urgent */
  utab_obj *found;
  pending *todo;
  size_t nfound, ntodo, cap;
  int first, oom;
} scan;

static _Atomic(utab_set *) g_set;
static _Atomic long g_readers;
static _Atomic int g_ready;
static _Atomic int g_wanted; /* the handler has asked for tables */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* Under g_mu: */
static unsigned long long g_adds = ~0ULL, g_subs = ~0ULL;
static void **g_retired;
static size_t g_nretired, g_capretired;
static utab_stats g_stats;
static char *g_debug_root; /* NULL: /usr/lib/debug */

void utab_enter(void) {
  atomic_fetch_add_explicit(&g_readers, 1, memory_order_seq_cst);
}

void utab_leave(void) {
  atomic_fetch_sub_explicit(&g_readers, 1, memory_order_release);
}

const cfi_row *utab_find(uintptr_t pc, int *known, const void **hint) {
  const utab_obj *h = *hint;
  if (h && pc >= h->lo && pc < h->hi) {
    *known = h->t ? UTAB_HAS_TABLE : h->done ? UTAB_NO_TABLE : UTAB_PENDING;
    return h->t ? cfi_lookup(h->t, pc) : NULL;
  }
  const utab_set *s = atomic_load_explicit(&g_set, memory_order_seq_cst);
  *known = UTAB_UNKNOWN;
  if (!s)
    return NULL;
  uint32_t a = 0, b = s->n;
  while (a < b) { /* first object with hi > pc */
    uint32_t m = a + (b - a) / 2;
    if (s->o[m].hi <= pc)
      a = m + 1;
    else
      b = m;
  }
  if (a == s->n || pc < s->o[a].lo)
    return NULL;
  *known = s->o[a].t ? UTAB_HAS_TABLE : s->o[a].done ? UTAB_NO_TABLE : UTAB_PENDING;
  *hint = &s->o[a];
  return s->o[a].t ? cfi_lookup(s->o[a].t, pc) : NULL;
}

int utab_want(void) {
  if (atomic_load_explicit(&g_wanted, memory_order_relaxed))
    return 0;
  return atomic_exchange_explicit(&g_wanted, 1, memory_order_relaxed) == 0;
}

int utab_wanted(void) {
  return atomic_load_explicit(&g_wanted, memory_order_relaxed);
}

int utab_ready(void) {
  return atomic_load_explicit(&g_ready, memory_order_relaxed);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void retire(void *p) {
  if (!p)
    return;
  if (g_nretired == g_capretired) {
    size_t cap = g_capretired ? g_capretired * 2 : 16;
    void **v = realloc(g_retired, cap * sizeof *v);
    if (!v)
      return; /* leaked rather than freed under a reader */
    g_retired = v;
    g_capretired = cap;
  }
  g_retired[g_nretired++] = p;
}

static void reclaim_locked(void) {
  if (g_nretired == 0 || atomic_load_explicit(&g_readers, memory_order_seq_cst) != 0)
    return;
  for (size_t i = 0; i < g_nretired; i++)
    free(g_retired[i]);
  g_nretired = 0;
}

void utab_reclaim(void) {
  pthread_mutex_lock(&g_mu);
  reclaim_locked();
  pthread_mutex_unlock(&g_mu);
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data) {
  unsigned long long *c = data;
  if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    return -1;
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1; /* the counters are global: one entry is enough */
}

/* The end of .eh_frame: its terminator, or the end of the segment holding
 * it, walking entry lengths only. */
static size_t eh_frame_len(const uint8_t *p, const uint8_t *seg_end) {
  const uint8_t *q = p;
  while (seg_end - q >= 4) {
    uint32_t len;
    memcpy(&len, q, 4);
    if (len == 0)
      return (size_t)(q + 4 - p);
    uint64_t adv = 4 + (uint64_t)len;
    if (len == 0xffffffffu) {
      uint64_t l64;
      if (seg_end - q < 12)
        break;
      memcpy(&l64, q + 4, 8);
      adv = 12 + l64;
    }
    if (adv > (uint64_t)(seg_end - q))
      break;
    q += adv;
  }
  return (size_t)(q - p);
}

/* Decodes .eh_frame_hdr's eh_frame_ptr (pc-relative or absolute). */
static uintptr_t eh_frame_from_hdr(const uint8_t *hdr) {
  if (hdr[0] != 1)
    return 0;
  uint8_t enc = hdr[1];
  const uint8_t *f = hdr + 4;
  int64_t v;
  switch (enc & 0x0f) {
  case 0x03: { /* udata4 */
    uint32_t u;
    memcpy(&u, f, 4);
    v = u;
    break;
  }
  case 0x0b: { /* sdata4 */
    int32_t s;
    memcpy(&s, f, 4);
    v = s;
    break;
  }
  case 0x00:
  case 0x04:
  case 0x0c: {
    uint64_t u;
    memcpy(&u, f, 8);
    v = (int64_t)u;
    break;
  }
  default:
    return 0;
  }
  if ((enc & 0x70) == 0x10)
    return (uintptr_t)f + (uintptr_t)v;
  if ((enc & 0x70) == 0)
    return (uintptr_t)v;
  return 0;
}

/* The GNU build id from the object's PT_NOTE segments, as hex ("" if none). */
static void note_build_id(const struct dl_phdr_info *info, char *hex) {
  hex[0] = '\0';
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE)
      continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (end - p >= 12) {
      uint32_t nsz, dsz, type;
      memcpy(&nsz, p, 4);
      memcpy(&dsz, p + 4, 4);
      memcpy(&type, p + 8, 4);
      size_t nal = ((size_t)nsz + 3) & ~(size_t)3, dal = ((size_t)dsz + 3) & ~(size_t)3;
      if (nal > (size_t)(end - p) - 12 || dal > (size_t)(end - p) - 12 - nal)
        break;
      if (type == NT_GNU_BUILD_ID && nsz == 4 && memcmp(p + 12, "GNU", 4) == 0 && dsz >= 4 &&
          dsz <= 20) {
        static const char digits[] = "0123456789abcdef";
        for (uint32_t k = 0; k < dsz; k++) {
          hex[2 * k] = digits[p[12 + nal + k] >> 4];
          hex[2 * k + 1] = digits[p[12 + nal + k] & 15];
        }
        hex[2 * dsz] = '\0';
        return;
      }
      p += 12 + nal + dal;
    }
  }
}

/* A malloc'ed copy of the object's .eh_frame (found by its header at hdr),
 * its length and address; NULL if there is none or on ENOMEM. Under the
 * loader's lock (the object stays mapped). */
static uint8_t *copy_eh_frame(const struct dl_phdr_info *info, uintptr_t hdr, size_t *len,
                              uintptr_t *addr) {
  uintptr_t eh = eh_frame_from_hdr((const uint8_t *)hdr);
  for (int i = 0; eh && i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type != PT_LOAD || eh < a || eh >= a + ph->p_filesz)
      continue;
    size_t n = eh_frame_len((const uint8_t *)eh, (const uint8_t *)(a + ph->p_filesz));
    uint8_t *copy = n ? malloc(n) : NULL;
    if (copy) {
      memcpy(copy, (const void *)eh, n);
      *len = n;
      *addr = eh;
    }
    return copy;
  }
  return NULL;
}

/* The executable PT_LOAD range of an object and its .eh_frame_hdr (0 if none). */
static void object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi,
                        uintptr_t *hdr) {
  *lo = UINTPTR_MAX;
  *hi = 0;
  *hdr = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      uintptr_t a = info->dlpi_addr + ph->p_vaddr;
      if (a < *lo)
        *lo = a;
      if (a + ph->p_memsz > *hi)
        *hi = a + ph->p_memsz;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      *hdr = info->dlpi_addr + ph->p_vaddr;
    }
  }
}

static int grow(scan *sc) {
  if (sc->nfound < sc->cap)
    return 0;
  size_t cap = sc->cap ? sc->cap * 2 : 32;
  utab_obj *f = realloc(sc->found, cap * sizeof *f);
  if (f)
    sc->found = f;
  pending *t = realloc(sc->todo, cap * sizeof *t);
  if (t)
    sc->todo = t;
  if (!f || !t)
    return -1;
  sc->cap = cap;
  return 0;
}

static const utab_obj *find_same(const utab_set *s, const utab_obj *o) {
  for (uint32_t i = 0; s && i < s->n; i++)
    if (s->o[i].lo == o->lo && s->o[i].hi == o->hi && s->o[i].bias == o->bias &&
        s->o[i].ident == o->ident)
      return &s->o[i];
  return NULL;
}

static uint64_t fnv1a(uint64_t h, const char *str) {
  for (; *str; str++)
    h = (h ^ (unsigned char)*str) * 0x100000001b3ULL;
  return h;
}

/* Runs under the loader's lock: the object cannot be unmapped meanwhile,
 * so reading its .eh_frame here is safe. Copies only; compiles nothing. */

/* The file of a loaded object (dl_iterate_phdr's name; first: the program,
 * named ""), or NULL if it has none (the vDSO, whose name is no path). */
static const char *object_file(const char *name, int first) {
  if (name[0] == '/')
    return name;
  return first && name[0] == '\0' ? "/proc/self/exe" : NULL;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data) {
  scan *sc = data;
  (void)size;
  int first = sc->first;
  sc->first = 0;
  uintptr_t lo, hi, hdr;
  object_span(info, &lo, &hi, &hdr);
  if (hi <= lo || grow(sc) != 0) {
    sc->oom |= hi > lo;
    return 0;
  }
  utab_obj *o = &sc->found[sc->nfound++];
  o->lo = lo;
  o->hi = hi;
  o->bias = info->dlpi_addr;
  char id[41];
  note_build_id(info, id);
  o->ident = fnv1a(fnv1a(0xcbf29ce484222325ULL, info->dlpi_name ? info->dlpi_name : ""), id);
  const utab_obj *same = find_same(sc->cur, o);
  o->t = same ? same->t : NULL;
  o->done = same ? same->done : 0;
  if (o->done)
    return 0; /* built earlier (or known to have no CFI) */
  if (sc->only_pc && (sc->only_pc < lo || sc->only_pc >= hi))
    return 0; /* not asked for: stays to be built by a full refresh */
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  int prio = first && name[0] == '\0' ? 0 : strncmp(base, "libc.so", 7) == 0 ? 1 : 2;
  if (prio > sc->max_prio)
    return 0; /* known (pending), built by a later refresh */
  pending *p = &sc->todo[sc->ntodo++];
  memset(p, 0, sizeof *p);
  p->lo = lo;
  p->hi = hi;
  p->bias = info->dlpi_addr;
  p->prio = prio;
  memcpy(p->build_id, id, sizeof id);
  if (!hdr) {
    p->path = strdup(name[0] ? name : first ? "/proc/self/exe" : "");
    return 0;
  }
  /* A file to fall back on if the .eh_frame turns out to cover little
   * (sparse_eh_frame). */
  const char *file = object_file(name, first);
  if (file)
    p->path = strdup(file);
  p->eh = copy_eh_frame(info, hdr, &p->eh_len, &p->eh_addr);
  return 0;
}

static int obj_cmp(const void *a, const void *b) {
  const utab_obj *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int prio_cmp(const void *a, const void *b) {
  const pending *x = a, *y = b;
  return x->prio - y->prio;
}

static void mark_done(scan *sc, const pending *p, cfi_table *t) {
  for (size_t j = 0; j < sc->nfound; j++)
    if (sc->found[j].lo == p->lo && sc->found[j].bias == p->bias) {
      sc->found[j].t = t;
      sc->found[j].done = 1;
    }
}

/* Publishes a copy of objs; the previous array is retired. */
static int publish(const utab_obj *objs, size_t n) {
  utab_set *s = malloc(sizeof *s + n * sizeof s->o[0]);
  if (!s)
    return -1;
  s->n = (uint32_t)n;
  memcpy(s->o, objs, n * sizeof *objs);
  utab_set *old = atomic_exchange_explicit(&g_set, s, memory_order_seq_cst);
  retire(old);
  return 0;
}

/* only_pc: the object holding it only; else the objects up to max_prio
 * (a refresh of them all records the loader's counters). */
/* Bytes of code the table has a row for. */
static uint64_t covered(const cfi_table *t) {
  uint64_t n = 0;
  for (uint32_t i = 0; i + 1 < t->nrows; i++)
    if (t->rows[i].kind != CFI_GAP)
      n += t->rows[i + 1].pc - t->rows[i].pc;
  return n;
}

/* An object built without unwind tables may still have an .eh_frame: the
 * FDEs of the C runtime's stubs linked into it (as on aarch64), nothing of
 * its own code. Where .eh_frame covers less than half of the executable
 * span, its .debug_frame (the object's own code, not the stubs) is taken
 * instead where there is one. *t is replaced or kept; returns -2 if
 * cancelled (then *t is freed). */
static int sparse_eh_frame(const pending *p, const _Atomic int *cancel, cfi_table **t,
                           cfi_stats *st) {
  if (!p->path || covered(*t) >= (p->hi - p->lo) / 2)
    return 0;
  cfi_table *d = NULL;
  cfi_stats dst;
  int rc = cfi_elf_debug_frame(p->path, p->build_id, g_debug_root, p->bias, cancel, &d, &dst);
  if (rc == -2) {
    free(*t);
    *t = NULL;
    return -2;
  }
  if (rc == 0 && covered(d) > 0) {
    free(*t);
    *t = d;
    *st = dst;
  } else {
    free(d);
  }
  return 0;
}

#if defined(__aarch64__)
/* aarch64's linker gives PLT stubs no FDE. A stub moves neither SP nor x30,
 * which still holds its caller's return address: CFA = SP, RA in the link
 * register (followed only for the interrupted frame, where x30 is known).
 * The lazy-binding header, the first 32 bytes of .plt, pushes x16 and x30
 * with its first instruction: past it CFA = SP + 16, the RA at CFA - 8.
 * Added where the CFI says nothing; a failure leaves the table as it was
 * (those PCs then take a frame-pointer step). */
static const cfi_row g_plt_stub = {0, 0, CFI_FP_SAME, CFI_CFA_SP, CFI_RA_LINKREG};
static const cfi_row g_plt_pushed = {0, 16, CFI_FP_SAME, CFI_CFA_SP, -1};

static void add_plt_rows(const pending *p, cfi_table **t) {
  uintptr_t plt[2], sec[2];
  if (!p->path || cfi_elf_plt(p->path, p->bias, plt, sec) == 0)
    return;
  if (plt[1] - plt[0] > 32) {
    cfi_add_range(t, plt[0], plt[0] + 4, &g_plt_stub);
    cfi_add_range(t, plt[0] + 4, plt[0] + 32, &g_plt_pushed);
    cfi_add_range(t, plt[0] + 32, plt[1], &g_plt_stub);
  }
  if (sec[1] > sec[0])
    cfi_add_range(t, sec[0], sec[1], &g_plt_stub);
}

/* The PLT row of pc, for walks before the whole table (see add_plt_rows),
 * or NULL when pc is in no PLT. */
static const cfi_row *plt_row(const uintptr_t plt[2], const uintptr_t sec[2], uintptr_t pc) {
  if (plt[1] - plt[0] > 32 && pc >= plt[0] + 4 && pc < plt[0] + 32)
    return &g_plt_pushed;
  if ((pc >= plt[0] && pc < plt[1]) || (pc >= sec[0] && pc < sec[1]))
    return &g_plt_stub;
  return NULL;
}
#endif

static int refresh_locked(const _Atomic int *cancel, uintptr_t only_pc, int max_prio) {
  unsigned long long c[2] = {0, 0};
  dlphdr_iterate(counters_cb, c);
  if (!only_pc && c[0] == g_adds && c[1] == g_subs) {
    reclaim_locked();
    return 0;
  }
  scan sc = {0};
  sc.cur = atomic_load_explicit(&g_set, memory_order_relaxed);
  sc.only_pc = only_pc;
  sc.max_prio = only_pc ? 2 : max_prio;
  sc.first = 1;
  dlphdr_iterate(scan_cb, &sc);
  int built = 0;
  if (sc.oom)
    goto out; /* the counters stay stale: the next refresh tries again */
  if (!only_pc && max_prio >= 2) {
    g_adds = c[0];
    g_subs = c[1];
  }
  qsort(sc.found, sc.nfound, sizeof *sc.found, obj_cmp);
  /* Tables of objects gone (dlclose) leave with the old array. */
  for (uint32_t i = 0; sc.cur && i < sc.cur->n; i++)
    if (sc.cur->o[i].t) {
      int kept = 0;
      for (size_t j = 0; j < sc.nfound && !kept; j++)
        kept = sc.found[j].t == sc.cur->o[i].t;
      if (!kept)
        retire(sc.cur->o[i].t);
    }
  if (publish(sc.found, sc.nfound) != 0)
    goto out;
  qsort(sc.todo, sc.ntodo, sizeof *sc.todo, prio_cmp);
  if (!only_pc && (sc.ntodo == 0 || sc.todo[0].prio > 1))
    atomic_store_explicit(&g_ready, 1, memory_order_relaxed); /* built before, on demand */
  for (size_t i = 0; i < sc.ntodo; i++) {
    pending *p = &sc.todo[i];
    if (cancel && atomic_load(cancel))
      break;
    int64_t t0 = now_ns();
    cfi_table *t = NULL;
    cfi_stats st;
    int rc;
    if (p->eh) {
      rc = cfi_build(p->eh, p->eh_len, p->eh_addr, p->bias, CFI_EH_FRAME, cancel, &t, &st);
      if (rc == 0)
        rc = sparse_eh_frame(p, cancel, &t, &st);
    } else if (p->path)
      rc = cfi_elf_debug_frame(p->path, p->build_id, g_debug_root, p->bias, cancel, &t, &st);
    else
      rc = -1;
#if defined(__aarch64__)
    if (rc == 0)
      add_plt_rows(p, &t);
#endif
    g_stats.build_ns += (uint64_t)(now_ns() - t0);
    if (rc == -2)
      break; /* cancelled: not done, the next refresh retries */
    if (rc != 0) {
      mark_done(&sc, p, NULL);
      continue;
    }
    g_stats.bad_entries += st.bad_entries;
    g_stats.bad_ops += st.bad_ops;
    g_stats.unknown_rows += st.unknown_rows;
    mark_done(&sc, p, t);
    built++;
    if (publish(sc.found, sc.nfound) != 0) {
      free(t); /* never published */
      mark_done(&sc, p, NULL);
    }
    if (!only_pc && (i + 1 == sc.ntodo || sc.todo[i + 1].prio > 1))
      atomic_store_explicit(&g_ready, 1, memory_order_relaxed); /* executable and libc */
  }
  if (cancel && atomic_load(cancel))
    g_adds = g_subs = ~0ULL; /* unbuilt objects: the next refresh retries */
  else if (!only_pc)
    atomic_store_explicit(&g_ready, 1, memory_order_relaxed); /* even if a build failed */
  reclaim_locked();
out:
  for (size_t i = 0; i < sc.ntodo; i++) {
    free(sc.todo[i].eh);
    free(sc.todo[i].path);
  }
  free(sc.todo);
  free(sc.found);
  return built;
}

int utab_refresh(const _Atomic int *cancel) {
  pthread_mutex_lock(&g_mu);
  int built = refresh_locked(cancel, 0, 2);
  pthread_mutex_unlock(&g_mu);
  return built;
}

int utab_refresh_first(const _Atomic int *cancel) {
  pthread_mutex_lock(&g_mu);
  int built = utab_ready() ? 0 : refresh_locked(cancel, 0, 1);
  pthread_mutex_unlock(&g_mu);
  return built;
}

int utab_build_for(uintptr_t pc) {
  pthread_mutex_lock(&g_mu);
  int built = pc ? refresh_locked(NULL, pc, 2) : 0;
  pthread_mutex_unlock(&g_mu);
  return built;
}

/* ---- rows on demand, for deferred walks ---- */

/* An object whose table is not built yet, with its FDEs indexed and the
 * FDEs walks needed compiled one by one (cfi_index). Owned by the deferred
 * walks (one at a time); freed by utab_on_demand_trim only. */
typedef struct od_obj {
  uintptr_t lo, hi;         /* executable range */
  uintptr_t plt[2], sec[2]; /* aarch64: its .plt and .plt.sec (plt_row) */
  cfi_index *ix;            /* NULL: no .eh_frame; rows only from a full build */
  cfi_table **one;          /* the FDE tables compiled so far */
  size_t n, cap;
} od_obj;

static pthread_mutex_t g_od_mu = PTHREAD_MUTEX_INITIALIZER;
/* Under g_od_mu: */
static od_obj *g_od;
static size_t g_nod, g_capod;
static unsigned long long g_od_adds = ~0ULL, g_od_subs = ~0ULL; /* the loader's, when filled */
static uint32_t g_od_fdes;                                      /* compiled, in all */

static void od_free(od_obj *o) {
  for (size_t i = 0; i < o->n; i++)
    free(o->one[i]);
  free(o->one);
  cfi_index_free(o->ix);
}

typedef struct od_scan {
  uintptr_t pc;
  od_obj o;
  uint8_t *eh;
  size_t eh_len;
  uintptr_t eh_addr, bias;
  int found, seen;
  char path[4096]; /* the object's file, "" if it has none */
} od_scan;

static int od_scan_cb(struct dl_phdr_info *info, size_t size, void *data) {
  od_scan *sc = data;
  uintptr_t lo, hi, hdr;
  (void)size;
  object_span(info, &lo, &hi, &hdr);
  int first = sc->seen++ == 0;
  if (sc->pc < lo || sc->pc >= hi)
    return 0;
  sc->found = 1;
  const char *file = object_file(info->dlpi_name ? info->dlpi_name : "", first);
  if (file)
    snprintf(sc->path, sizeof sc->path, "%s", file);
  sc->o.lo = lo;
  sc->o.hi = hi;
  sc->bias = info->dlpi_addr;
  if (hdr)
    sc->eh = copy_eh_frame(info, hdr, &sc->eh_len, &sc->eh_addr);
  return 1;
}

void utab_on_demand_trim(void) {
  unsigned long long c[2] = {0, 0};
  dlphdr_iterate(counters_cb, c);
  pthread_mutex_lock(&g_od_mu);
  int changed = c[0] != g_od_adds || c[1] != g_od_subs; /* dlopen, dlclose: start afresh */
  g_od_adds = c[0];
  g_od_subs = c[1];
  size_t k = 0;
  utab_enter();
  const utab_set *s = atomic_load_explicit(&g_set, memory_order_seq_cst);
  for (size_t i = 0; i < g_nod; i++) {
    int built = 0;
    for (uint32_t j = 0; s && j < s->n && !built; j++)
      built = s->o[j].lo == g_od[i].lo && s->o[j].t != NULL;
    if (changed || built)
      od_free(&g_od[i]); /* its full table is out: these are no longer needed */
    else
      g_od[k++] = g_od[i];
  }
  utab_leave();
  g_nod = k;
  pthread_mutex_unlock(&g_od_mu);
}

/* The object holding pc, indexed now if it is new. NULL if none or ENOMEM. */
static od_obj *od_object(uintptr_t pc) {
  for (size_t i = 0; i < g_nod; i++)
    if (pc >= g_od[i].lo && pc < g_od[i].hi)
      return &g_od[i];
  if (g_nod == g_capod) {
    size_t cap = g_capod ? g_capod * 2 : 8;
    od_obj *v = realloc(g_od, cap * sizeof *v);
    if (!v)
      return NULL;
    g_od = v;
    g_capod = cap;
  }
  od_scan sc;
  memset(&sc, 0, sizeof sc);
  sc.pc = pc;
  dlphdr_iterate(od_scan_cb, &sc);
  if (!sc.found)
    return NULL;
  if (sc.eh && cfi_index_build(sc.eh, sc.eh_len, sc.eh_addr, sc.bias, CFI_EH_FRAME, &sc.o.ix) != 0)
    sc.o.ix = NULL; /* the copy was freed */
#if defined(__aarch64__)
  if (sc.path[0])
    cfi_elf_plt(sc.path, sc.bias, sc.o.plt, sc.o.sec);
#endif
  g_od[g_nod] = sc.o;
  return &g_od[g_nod++];
}

const cfi_row *utab_row_on_demand(uintptr_t pc, int *known) {
  const cfi_row *row = NULL;
  pthread_mutex_lock(&g_od_mu);
  od_obj *o = od_object(pc);
  if (!o || !o->ix)
    goto out; /* *known stays: the walk asks for a full build */
  *known = UTAB_HAS_TABLE;
  for (size_t i = 0; i < o->n; i++)
    if (pc >= o->one[i]->lo && pc < o->one[i]->hi) {
      row = cfi_lookup(o->one[i], pc);
      goto out;
    }
  cfi_table *t = NULL;
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 16;
    cfi_table **v = realloc(o->one, cap * sizeof *v);
    if (!v)
      goto oom;
    o->one = v;
    o->cap = cap;
  }
  if (cfi_index_table(o->ix, pc, &t) != 0)
    goto oom;
  if (t && t->nrows > 0 && pc >= t->lo && pc < t->hi) {
    o->one[o->n++] = t;
    g_od_fdes++;
    row = cfi_lookup(t, pc);
  } else {
    free(t); /* no FDE holds pc: as a gap in the whole table */
#if defined(__aarch64__)
    row = plt_row(o->plt, o->sec, pc);
#endif
  }
  goto out;
oom:
  *known = UTAB_PENDING;
out:
  pthread_mutex_unlock(&g_od_mu);
  return row;
}

void utab_get_stats(utab_stats *out) {
  pthread_mutex_lock(&g_mu);
  *out = g_stats;
  const utab_set *s = atomic_load(&g_set);
  out->objects = out->tables = 0;
  out->rows = out->bytes = 0;
  for (uint32_t i = 0; s && i < s->n; i++) {
    out->objects++;
    if (s->o[i].t) {
      out->tables++;
      out->rows += s->o[i].t->nrows;
      out->bytes += s->o[i].t->bytes;
    }
  }
  out->retired = (uint32_t)g_nretired;
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_lock(&g_od_mu);
  out->on_demand = (uint32_t)g_nod;
  out->on_demand_fdes = g_od_fdes;
  pthread_mutex_unlock(&g_od_mu);
}

void utab_atfork_child(void) {
  atomic_store(&g_readers, 0);
  pthread_mutex_init(&g_mu, NULL);
  pthread_mutex_init(&g_od_mu, NULL);
}

void utab_set_debug_root_for_tests(const char *dir) {
  pthread_mutex_lock(&g_mu);
  free(g_debug_root);
  g_debug_root = dir ? strdup(dir) : NULL;
  pthread_mutex_unlock(&g_mu);
}
