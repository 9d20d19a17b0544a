/* pprof validation with the rules `go tool pprof` applies when it reads a
 * profile, and parsing (gunzip, unpack, validate). */
#include "pp_builder_int.h"
#include "pp_hash.h"

#include <inttypes.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GZIP_MAGIC0 0x1f
#define GZIP_MAGIC1 0x8b

void pp_say(char *why, size_t whylen, const char *fmt, ...) {
  if (!why || whylen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

typedef struct vctx {
  const Perftools__Profiles__Profile *p;
  char *why;
  size_t whylen;
} vctx;

/* Checks a string index; what names the field for the reason. */
static bool str_ok(const vctx *c, int64_t ix, const char *what, size_t n) {
  if (ix >= 0 && (uint64_t)ix < c->p->n_string_table)
    return true;
  if (n == SIZE_MAX)
    pp_say(c->why, c->whylen, "%s string index %" PRId64 " out of range (string_table has %zu)",
           what, ix, c->p->n_string_table);
  else
    pp_say(c->why, c->whylen,
           "%s %zu: string index %" PRId64 " out of range (string_table has %zu)", what, n, ix,
           c->p->n_string_table);
  return false;
}

static int index_ids(const vctx *c, pp_idmap *m, const char *what, size_t n,
                     uint64_t (*get)(const Perftools__Profiles__Profile *, size_t)) {
  if (pp_idmap_init(m, n) != 0) {
    pp_say(c->why, c->whylen, "out of memory indexing %s ids", what);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    m->keys[i] = get(c->p, i);
  uint64_t bad = 0;
  switch (pp_idmap_index(m, &bad)) {
  case 0:
    return 0;
  case 1:
    pp_say(c->why, c->whylen, "a %s has id 0 (ids must be non-zero)", what);
    return -1;
  case 2:
    pp_say(c->why, c->whylen, "%s id %" PRIu64 " is used twice (ids must be unique)", what, bad);
    return -1;
  default:
    pp_say(c->why, c->whylen, "out of memory indexing %s ids", what);
    return -1;
  }
}

static uint64_t mapping_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->mapping[i]->id;
}
static uint64_t function_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->function[i]->id;
}
static uint64_t location_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->location[i]->id;
}

static bool value_type_ok(const vctx *c, const Perftools__Profiles__ValueType *vt, const char *what,
                          size_t n) {
  return str_ok(c, vt->type, what, n) && str_ok(c, vt->unit, what, n);
}

int pp_pprof_validate(const Perftools__Profiles__Profile *p, char *why, size_t whylen) {
  vctx c = {p, why, whylen};
  pp_idmap maps = {0}, funcs = {0}, locs = {0};
  int rc = -1;

  if (p->n_string_table == 0 || p->string_table[0] == NULL || p->string_table[0][0] != '\0') {
    pp_say(why, whylen, "string_table[0] must be the empty string");
    return -1;
  }
  for (size_t i = 0; i < p->n_sample_type; i++)
    if (!value_type_ok(&c, p->sample_type[i], "sample_type", i))
      return -1;
  if (p->period_type && !value_type_ok(&c, p->period_type, "period_type", SIZE_MAX))
    return -1;
  if (!str_ok(&c, p->drop_frames, "drop_frames", SIZE_MAX) ||
      !str_ok(&c, p->keep_frames, "keep_frames", SIZE_MAX) ||
      !str_ok(&c, p->default_sample_type, "default_sample_type", SIZE_MAX) ||
      !str_ok(&c, p->doc_url, "doc_url", SIZE_MAX))
    return -1;
  for (size_t i = 0; i < p->n_comment; i++)
    if (!str_ok(&c, p->comment[i], "comment", i))
      return -1;

  if (index_ids(&c, &maps, "mapping", p->n_mapping, mapping_id) != 0 ||
      index_ids(&c, &funcs, "function", p->n_function, function_id) != 0 ||
      index_ids(&c, &locs, "location", p->n_location, location_id) != 0)
    goto fail;

  for (size_t i = 0; i < p->n_mapping; i++) {
    const Perftools__Profiles__Mapping *m = p->mapping[i];
    if (!str_ok(&c, m->filename, "mapping", i) || !str_ok(&c, m->build_id, "mapping", i))
      goto fail;
  }
  for (size_t i = 0; i < p->n_function; i++) {
    const Perftools__Profiles__Function *f = p->function[i];
    if (!str_ok(&c, f->name, "function", i) || !str_ok(&c, f->system_name, "function", i) ||
        !str_ok(&c, f->filename, "function", i))
      goto fail;
  }
  for (size_t i = 0; i < p->n_location; i++) {
    const Perftools__Profiles__Location *l = p->location[i];
    if (l->mapping_id != 0 && pp_idmap_find(&maps, l->mapping_id) < 0) {
      pp_say(why, whylen, "location %" PRIu64 " refers to mapping %" PRIu64 ", which is missing",
             l->id, l->mapping_id);
      goto fail;
    }
    for (size_t j = 0; j < l->n_line; j++) {
      uint64_t fid = l->line[j]->function_id;
      if (fid == 0) { /* go tool pprof: "has a line with nil function" */
        pp_say(why, whylen, "location %" PRIu64 " line %zu has no function (function_id 0)", l->id,
               j);
        goto fail;
      }
      if (pp_idmap_find(&funcs, fid) < 0) {
        pp_say(why, whylen,
               "location %" PRIu64 " line %zu refers to function %" PRIu64 ", which is missing",
               l->id, j, fid);
        goto fail;
      }
    }
  }
  if (p->n_sample > 0 && p->n_sample_type == 0) {
    pp_say(why, whylen, "profile has %zu samples but no sample_type", p->n_sample);
    goto fail;
  }
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    if (s->n_value != p->n_sample_type) {
      pp_say(why, whylen, "sample %zu has %zu values, want %zu (one per sample_type)", i,
             s->n_value, p->n_sample_type);
      goto fail;
    }
    for (size_t j = 0; j < s->n_location_id; j++) {
      if (pp_idmap_find(&locs, s->location_id[j]) < 0) {
        pp_say(why, whylen, "sample %zu refers to location %" PRIu64 ", which is missing", i,
               s->location_id[j]);
        goto fail;
      }
    }
    for (size_t j = 0; j < s->n_label; j++) {
      const Perftools__Profiles__Label *l = s->label[j];
      if (!str_ok(&c, l->key, "sample label of sample", i) ||
          !str_ok(&c, l->str, "sample label of sample", i) ||
          !str_ok(&c, l->num_unit, "sample label of sample", i))
        goto fail;
      /* Index 0 or another "" entry: an empty key either way (a merge would
       * map both to index 0, which must not turn valid into invalid). */
      if (l->key == 0 || p->string_table[l->key][0] == '\0') {
        pp_say(why, whylen, "sample %zu label %zu has no key", i, j);
        goto fail;
      }
      if (l->str != 0 && (l->num != 0 || l->num_unit != 0)) {
        pp_say(why, whylen, "sample %zu label \"%s\" has both a string and a number", i,
               p->string_table[l->key]);
        goto fail;
      }
    }
  }
  rc = 0;
fail:
  pp_idmap_free(&maps);
  pp_idmap_free(&funcs);
  pp_idmap_free(&locs);
  return rc;
}

Perftools__Profiles__Profile *pp_pprof_parse(const uint8_t *data, size_t len, size_t max_size,
                                             char *why, size_t whylen) {
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  Perftools__Profiles__Profile *p = NULL;
  if (len >= 2 && data[0] == GZIP_MAGIC0 && data[1] == GZIP_MAGIC1) {
    if (pp_gunzip_why(data, len, max_size, &raw, &rawlen, why, whylen) != 0)
      return NULL;
    data = raw;
    len = rawlen;
  } else if (len > max_size) {
    pp_say(why, whylen, "profile is %zu bytes, over the %zu byte limit", len, max_size);
    return NULL;
  }
  p = perftools__profiles__profile__unpack(NULL, len, data);
  free(raw);
  if (!p) {
    pp_say(why, whylen, "not a pprof profile: protobuf decoding of %zu bytes failed", len);
    return NULL;
  }
  if (pp_pprof_validate(p, why, whylen) != 0) {
    perftools__profiles__profile__free_unpacked(p, NULL);
    return NULL;
  }
  return p;
}

/* ---- arena-backed parse ---- */

#define ARENA_ALIGN 16
#define ARENA_SLACK ((size_t)64 << 10)
#define ARENA_FIRST_MAX ((size_t)256 << 20)
/* Decoded structs take 5-15x the encoded size. The first chunk is sized for
 * the worst of that: pages never touched cost no memory, and one chunk is
 * usually enough. */
#define ARENA_EXPANSION 16
/* Chunks kept for reuse (their pages are already faulted in: a fresh 6 MiB
 * arena costs ~1,500 page faults, as much again as the decoding itself). */
#define CACHE_MAX_CHUNKS 8
#define CACHE_MAX_TOUCHED ((size_t)8 << 20)

typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t used, cap;
  size_t touched; /* high-water mark of used: what the chunk holds in RAM */
  _Alignas(ARENA_ALIGN) unsigned char mem[];
} arena_chunk;

struct pp_pprof {
  Perftools__Profiles__Profile *prof;
  arena_chunk *chunks;
  size_t total;
  size_t next_cap;
  bool oom;
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static arena_chunk *cache;
static size_t cache_n, cache_touched;

/* The smallest cached chunk of at least min bytes, else a new one of cap. */
static arena_chunk *chunk_get(size_t min, size_t cap) {
  arena_chunk *best = NULL, **bestp = NULL;
  pthread_mutex_lock(&cache_mu);
  for (arena_chunk **pp = &cache; *pp; pp = &(*pp)->next)
    if ((*pp)->cap >= min && (!best || (*pp)->cap < best->cap)) {
      best = *pp;
      bestp = pp;
    }
  if (best) {
    *bestp = best->next;
    cache_n--;
    cache_touched -= best->touched;
  }
  pthread_mutex_unlock(&cache_mu);
  if (best) {
    best->used = 0;
    return best;
  }
  if (cap > SIZE_MAX - sizeof(arena_chunk))
    return NULL;
  arena_chunk *c = malloc(sizeof *c + cap);
  if (c) {
    c->cap = cap;
    c->used = 0;
    c->touched = 0;
  }
  return c;
}

static void chunk_put(arena_chunk *c) {
  if (c->used > c->touched)
    c->touched = c->used;
  pthread_mutex_lock(&cache_mu);
  bool keep = cache_n < CACHE_MAX_CHUNKS && cache_touched + c->touched <= CACHE_MAX_TOUCHED;
  if (keep) {
    c->next = cache;
    cache = c;
    cache_n++;
    cache_touched += c->touched;
  }
  pthread_mutex_unlock(&cache_mu);
  if (!keep)
    free(c);
}

void pp_pprof_cache_trim(void) {
  pthread_mutex_lock(&cache_mu);
  arena_chunk *c = cache;
  cache = NULL;
  cache_n = 0;
  cache_touched = 0;
  pthread_mutex_unlock(&cache_mu);
  while (c) {
    arena_chunk *n = c->next;
    free(c);
    c = n;
  }
}

static void *arena_alloc(void *data, size_t size) {
  pp_pprof *a = data;
  if (size > SIZE_MAX - ARENA_ALIGN) {
    a->oom = true;
    return NULL;
  }
  size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (size == 0)
    size = ARENA_ALIGN;
  arena_chunk *c = a->chunks;
  if (!c || c->cap - c->used < size) {
    size_t cap = a->next_cap < size ? size : a->next_cap;
    c = chunk_get(size, cap);
    if (!c) {
      a->oom = true;
      return NULL;
    }
    c->next = a->chunks;
    a->chunks = c;
    a->total += c->cap;
    a->next_cap = c->cap <= SIZE_MAX / 2 ? c->cap * 2 : c->cap;
  }
  void *p = c->mem + c->used;
  c->used += size;
  return p;
}

static void arena_free(void *data, void *ptr) {
  (void)data; /* everything goes at once, in pp_pprof_free */
  (void)ptr;
}

void pp_pprof_free(pp_pprof *p) {
  if (!p)
    return;
  arena_chunk *c = p->chunks;
  while (c) {
    arena_chunk *n = c->next;
    chunk_put(c);
    c = n;
  }
  free(p);
}

const Perftools__Profiles__Profile *pp_pprof_profile(const pp_pprof *p) {
  return p->prof;
}

size_t pp_pprof_mem(const pp_pprof *p) {
  size_t used = 0;
  for (const arena_chunk *c = p->chunks; c; c = c->next)
    used += c->used;
  return used;
}

/* ---- a direct decoder for the common encoding ----
 *
 * protobuf-c's generic unpack was the biggest user-space cost of a push in
 * the sidecar (two passes per message through its descriptors, one small
 * allocation per field). This decoder reads the encoding pprof writers
 * produce (known fields, their usual wire types, packed repeated scalars)
 * straight into the arena. Anything else (an unknown field, an unpacked
 * repeated scalar, a repeated period_type, a group, an overlong varint, a
 * length past the end) makes it give up, and protobuf-c decodes the input
 * instead: what is accepted, and how, never differs from protobuf-c. */

typedef enum { FAST_OK, FAST_FALLBACK, FAST_OOM } fast_rc;

typedef struct rd {
  const uint8_t *p, *end;
} rd;

static bool rd_varint_slow(rd *r, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned i = 0; i < 10 && r->p < r->end; i++) {
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (i == 9 && b > 1)
        return false; /* more than 64 bits */
      *v = x;
      return true;
    }
  }
  return false;
}

/* Most varints in a profile are one or two bytes (ids, indices, tags). */
static inline bool rd_varint(rd *r, uint64_t *v) {
  if (r->end - r->p >= 2) {
    if (r->p[0] < 0x80) {
      *v = *r->p++;
      return true;
    }
    if (r->p[1] < 0x80) {
      *v = (uint64_t)(r->p[0] & 0x7f) | (uint64_t)r->p[1] << 7;
      r->p += 2;
      return true;
    }
  }
  return rd_varint_slow(r, v);
}

/* The next field's number and wire type; false at the end or on anything
 * unusual (a tag over 5 bytes, field number 0). */
static bool rd_tag(rd *r, uint32_t *field, unsigned *wt) {
  const uint8_t *start = r->p;
  uint64_t t;
  if (!rd_varint(r, &t) || r->p - start > 5 || (t >> 3) == 0 || (t >> 3) > UINT32_MAX)
    return false;
  *field = (uint32_t)(t >> 3);
  *wt = (unsigned)(t & 7);
  return true;
}

/* A length-delimited field's bytes as a reader. */
static bool rd_bytes(rd *r, rd *out) {
  uint64_t n;
  if (!rd_varint(r, &n) || n > (uint64_t)(r->end - r->p))
    return false;
  out->p = r->p;
  out->end = r->p + n;
  r->p += n;
  return true;
}

/* Varints in a packed blob; false if the last one does not end. */
static bool packed_count(rd b, size_t *n) {
  size_t k = 0;
  for (const uint8_t *q = b.p; q < b.end; q++)
    k += !(*q & 0x80);
  if (b.p < b.end && (b.end[-1] & 0x80))
    return false;
  *n += k;
  return true;
}

static bool packed_read(rd b, uint64_t *out, size_t *k) {
  while (b.p < b.end)
    if (!rd_varint(&b, &out[(*k)++]))
      return false;
  return true;
}

static void *fast_alloc(pp_pprof *a, size_t n, size_t size) {
  if (n == 0)
    return NULL;
  if (n > SIZE_MAX / size) {
    a->oom = true;
    return NULL;
  }
  return arena_alloc(a, n * size);
}

/* Messages of varint fields only: each field number maps to a member. */
typedef struct scalar_field {
  uint32_t field;
  size_t off;
  bool is_bool; /* protobuf_c_boolean, else a 64-bit integer */
} scalar_field;

static fast_rc fast_scalars(rd m, void *msg, const scalar_field *f, size_t nf) {
  uint32_t field;
  unsigned wt;
  while (m.p < m.end) {
    if (!rd_tag(&m, &field, &wt) || wt != 0)
      return FAST_FALLBACK;
    size_t i = 0;
    while (i < nf && f[i].field != field)
      i++;
    uint64_t v;
    if (i == nf || !rd_varint(&m, &v))
      return FAST_FALLBACK;
    if (f[i].is_bool)
      *(protobuf_c_boolean *)((char *)msg + f[i].off) = v != 0;
    else
      memcpy((char *)msg + f[i].off, &v, sizeof v);
  }
  return FAST_OK;
}

#define SF(type, member, num, b)                                                                   \
  { num, offsetof(type, member), b }
static const scalar_field vt_fields[] = {SF(Perftools__Profiles__ValueType, type, 1, false),
                                         SF(Perftools__Profiles__ValueType, unit, 2, false)};
static const scalar_field label_fields[] = {SF(Perftools__Profiles__Label, key, 1, false),
                                            SF(Perftools__Profiles__Label, str, 2, false),
                                            SF(Perftools__Profiles__Label, num, 3, false),
                                            SF(Perftools__Profiles__Label, num_unit, 4, false)};
static const scalar_field mapping_fields[] = {
    SF(Perftools__Profiles__Mapping, id, 1, false),
    SF(Perftools__Profiles__Mapping, memory_start, 2, false),
    SF(Perftools__Profiles__Mapping, memory_limit, 3, false),
    SF(Perftools__Profiles__Mapping, file_offset, 4, false),
    SF(Perftools__Profiles__Mapping, filename, 5, false),
    SF(Perftools__Profiles__Mapping, build_id, 6, false),
    SF(Perftools__Profiles__Mapping, has_functions, 7, true),
    SF(Perftools__Profiles__Mapping, has_filenames, 8, true),
    SF(Perftools__Profiles__Mapping, has_line_numbers, 9, true),
    SF(Perftools__Profiles__Mapping, has_inline_frames, 10, true)};
static const scalar_field function_fields[] = {
    SF(Perftools__Profiles__Function, id, 1, false),
    SF(Perftools__Profiles__Function, name, 2, false),
    SF(Perftools__Profiles__Function, system_name, 3, false),
    SF(Perftools__Profiles__Function, filename, 4, false),
    SF(Perftools__Profiles__Function, start_line, 5, false)};
static const scalar_field line_fields[] = {SF(Perftools__Profiles__Line, function_id, 1, false),
                                           SF(Perftools__Profiles__Line, line, 2, false),
                                           SF(Perftools__Profiles__Line, column, 3, false)};
static const scalar_field location_fields[] = {
    SF(Perftools__Profiles__Location, id, 1, false),
    SF(Perftools__Profiles__Location, mapping_id, 2, false),
    SF(Perftools__Profiles__Location, address, 3, false),
    SF(Perftools__Profiles__Location, is_folded, 5, true)};
#undef SF
#define NF(a) (sizeof(a) / sizeof(a)[0])

static fast_rc fast_sample(pp_pprof *a, rd m, Perftools__Profiles__Sample *s) {
  size_t nloc = 0, nval = 0, nlab = 0;
  uint32_t field = 0;
  unsigned wt = 0;
  rd b, scan = m;
  while (scan.p < scan.end) { /* count */
    if (!rd_tag(&scan, &field, &wt) || wt != 2 || field < 1 || field > 3 || !rd_bytes(&scan, &b))
      return FAST_FALLBACK;
    if ((field == 1 && !packed_count(b, &nloc)) || (field == 2 && !packed_count(b, &nval)))
      return FAST_FALLBACK;
    nlab += field == 3;
  }
  s->location_id = fast_alloc(a, nloc, sizeof *s->location_id);
  s->value = fast_alloc(a, nval, sizeof *s->value);
  Perftools__Profiles__Label *labs = fast_alloc(a, nlab, sizeof *labs);
  s->label = fast_alloc(a, nlab, sizeof *s->label);
  if (a->oom)
    return FAST_OOM;
  while (m.p < m.end) {
    rd_tag(&m, &field, &wt);
    rd_bytes(&m, &b);
    if (field == 1 && !packed_read(b, s->location_id, &s->n_location_id))
      return FAST_FALLBACK;
    if (field == 2 && !packed_read(b, (uint64_t *)s->value, &s->n_value))
      return FAST_FALLBACK;
    if (field == 3) {
      Perftools__Profiles__Label *l = &labs[s->n_label];
      perftools__profiles__label__init(l);
      s->label[s->n_label++] = l;
      fast_rc rc = fast_scalars(b, l, label_fields, NF(label_fields));
      if (rc != FAST_OK)
        return rc;
    }
  }
  return FAST_OK;
}

static fast_rc fast_location(pp_pprof *a, rd m, Perftools__Profiles__Location *l) {
  size_t nline = 0;
  uint32_t field = 0;
  unsigned wt = 0;
  rd b, scan = m;
  uint64_t v;
  while (scan.p < scan.end) { /* count the lines; the rest must be varints */
    if (!rd_tag(&scan, &field, &wt))
      return FAST_FALLBACK;
    if (field == 4 ? wt != 2 || !rd_bytes(&scan, &b) : wt != 0 || !rd_varint(&scan, &v))
      return FAST_FALLBACK;
    nline += field == 4;
  }
  Perftools__Profiles__Line *lines = fast_alloc(a, nline, sizeof *lines);
  l->line = fast_alloc(a, nline, sizeof *l->line);
  if (a->oom)
    return FAST_OOM;
  while (m.p < m.end) {
    const uint8_t *at = m.p;
    rd_tag(&m, &field, &wt);
    if (field == 4) {
      rd_bytes(&m, &b);
      Perftools__Profiles__Line *ln = &lines[l->n_line];
      perftools__profiles__line__init(ln);
      l->line[l->n_line++] = ln;
      fast_rc rc = fast_scalars(b, ln, line_fields, NF(line_fields));
      if (rc != FAST_OK)
        return rc;
    } else {
      rd_varint(&m, &v);
      rd one = {at, m.p};
      fast_rc rc = fast_scalars(one, l, location_fields, NF(location_fields));
      if (rc != FAST_OK)
        return rc;
    }
  }
  return FAST_OK;
}

/* Allocates n messages of size sz and their pointer array. */
static void *fast_msgs(pp_pprof *a, size_t n, size_t sz, void ***ptrs) {
  char *objs = fast_alloc(a, n, sz);
  *ptrs = fast_alloc(a, n, sizeof(void *));
  if (a->oom)
    return NULL;
  for (size_t i = 0; i < n; i++)
    (*ptrs)[i] = objs + i * sz;
  return objs;
}

static fast_rc fast_unpack(pp_pprof *a, const uint8_t *data, size_t len,
                           Perftools__Profiles__Profile **out) {
  size_t n[16] = {0};
  uint32_t field = 0;
  unsigned wt = 0;
  uint64_t v;
  rd m = {data, data + len}, scan = m, b;
  /* Pass 1: count; every field must have its usual wire type. */
  while (scan.p < scan.end) {
    if (!rd_tag(&scan, &field, &wt) || field > 15)
      return FAST_FALLBACK;
    bool delimited = field <= 6 || field == 11 || field == 13;
    if (delimited ? wt != 2 || !rd_bytes(&scan, &b) : wt != 0 || !rd_varint(&scan, &v))
      return FAST_FALLBACK;
    if (field == 13 && !packed_count(b, &n[13]))
      return FAST_FALLBACK;
    if (field != 13)
      n[field]++;
  }
  if (n[11] > 1)
    return FAST_FALLBACK; /* protobuf-c merges repeated submessages */
  Perftools__Profiles__Profile *p = arena_alloc(a, sizeof *p);
  if (!p)
    return FAST_OOM;
  perftools__profiles__profile__init(p);
  fast_msgs(a, n[1], sizeof(Perftools__Profiles__ValueType), (void ***)&p->sample_type);
  fast_msgs(a, n[2], sizeof(Perftools__Profiles__Sample), (void ***)&p->sample);
  fast_msgs(a, n[3], sizeof(Perftools__Profiles__Mapping), (void ***)&p->mapping);
  fast_msgs(a, n[4], sizeof(Perftools__Profiles__Location), (void ***)&p->location);
  fast_msgs(a, n[5], sizeof(Perftools__Profiles__Function), (void ***)&p->function);
  p->string_table = fast_alloc(a, n[6], sizeof *p->string_table);
  p->comment = fast_alloc(a, n[13], sizeof *p->comment);
  if (a->oom)
    return FAST_OOM;
  /* Pass 2: decode. */
  while (m.p < m.end) {
    const uint8_t *at = m.p;
    rd_tag(&m, &field, &wt);
    fast_rc rc = FAST_OK;
    if (wt == 2)
      rd_bytes(&m, &b);
    switch (field) {
    case 1: {
      Perftools__Profiles__ValueType *t = p->sample_type[p->n_sample_type++];
      perftools__profiles__value_type__init(t);
      rc = fast_scalars(b, t, vt_fields, NF(vt_fields));
      break;
    }
    case 2: {
      Perftools__Profiles__Sample *s = p->sample[p->n_sample++];
      perftools__profiles__sample__init(s);
      rc = fast_sample(a, b, s);
      break;
    }
    case 3: {
      Perftools__Profiles__Mapping *mp = p->mapping[p->n_mapping++];
      perftools__profiles__mapping__init(mp);
      rc = fast_scalars(b, mp, mapping_fields, NF(mapping_fields));
      break;
    }
    case 4: {
      Perftools__Profiles__Location *l = p->location[p->n_location++];
      perftools__profiles__location__init(l);
      rc = fast_location(a, b, l);
      break;
    }
    case 5: {
      Perftools__Profiles__Function *f = p->function[p->n_function++];
      perftools__profiles__function__init(f);
      rc = fast_scalars(b, f, function_fields, NF(function_fields));
      break;
    }
    case 6: {
      size_t sl = (size_t)(b.end - b.p);
      char *str = arena_alloc(a, sl + 1);
      if (!str)
        return FAST_OOM;
      memcpy(str, b.p, sl);
      str[sl] = '\0';
      p->string_table[p->n_string_table++] = str;
      break;
    }
    case 11: {
      Perftools__Profiles__ValueType *t = arena_alloc(a, sizeof *t);
      if (!t)
        return FAST_OOM;
      perftools__profiles__value_type__init(t);
      p->period_type = t;
      rc = fast_scalars(b, t, vt_fields, NF(vt_fields));
      break;
    }
    case 13:
      if (!packed_read(b, (uint64_t *)p->comment, &p->n_comment))
        rc = FAST_FALLBACK;
      break;
    default: { /* the varint fields of Profile */
      static const scalar_field pf[] = {
          {7, offsetof(Perftools__Profiles__Profile, drop_frames), false},
          {8, offsetof(Perftools__Profiles__Profile, keep_frames), false},
          {9, offsetof(Perftools__Profiles__Profile, time_nanos), false},
          {10, offsetof(Perftools__Profiles__Profile, duration_nanos), false},
          {12, offsetof(Perftools__Profiles__Profile, period), false},
          {14, offsetof(Perftools__Profiles__Profile, default_sample_type), false},
          {15, offsetof(Perftools__Profiles__Profile, doc_url), false}};
      rd_varint(&m, &v);
      rd one = {at, m.p};
      rc = fast_scalars(one, p, pf, NF(pf));
    }
    }
    if (rc != FAST_OK)
      return rc;
  }
  *out = p;
  return FAST_OK;
}
#undef NF

pp_pprof *pp_pprof_parse_pooled(const uint8_t *data, size_t len, size_t max_size, char *why,
                                size_t whylen) {
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  pp_pprof *a = calloc(1, sizeof *a);
  if (!a) {
    pp_say(why, whylen, "out of memory parsing a profile");
    return NULL;
  }
  if (len >= 2 && data[0] == GZIP_MAGIC0 && data[1] == GZIP_MAGIC1) {
    if (pp_gunzip_why(data, len, max_size, &raw, &rawlen, why, whylen) != 0)
      goto fail;
    data = raw;
    len = rawlen;
  } else if (len > max_size) {
    pp_say(why, whylen, "profile is %zu bytes, over the %zu byte limit", len, max_size);
    goto fail;
  }
  a->next_cap = len < (ARENA_FIRST_MAX - ARENA_SLACK) / ARENA_EXPANSION
                    ? len * ARENA_EXPANSION + ARENA_SLACK
                    : ARENA_FIRST_MAX;
  fast_rc fr = fast_unpack(a, data, len, &a->prof);
  if (fr == FAST_FALLBACK) {
    for (arena_chunk *c = a->chunks; c; c = c->next)
      c->used = 0; /* what the direct decoder took is garbage now */
    a->oom = false;
    ProtobufCAllocator al = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
    a->prof = perftools__profiles__profile__unpack(&al, len, data);
  } else if (fr == FAST_OOM) {
    a->prof = NULL;
  }
  free(raw);
  raw = NULL;
  if (!a->prof) {
    if (a->oom)
      pp_say(why, whylen, "out of memory decoding a pprof profile of %zu bytes", len);
    else
      pp_say(why, whylen, "not a pprof profile: protobuf decoding of %zu bytes failed", len);
    goto fail;
  }
  if (pp_pprof_validate(a->prof, why, whylen) != 0)
    goto fail;
  return a;
fail:
  free(raw);
  pp_pprof_free(a);
  return NULL;
}
