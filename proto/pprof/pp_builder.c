/* The pprof builder: interned strings and deduplicated mappings, functions,
 * locations and samples, each in a flat array indexed by a hash table
 * (O(1) average per add), ids dense 1..N in insertion order. Variable-length
 * parts live in a shared pool addressed by offset (locations' lines) or in
 * chunks that never move (strings, and samples' values, location ids and
 * labels, encoded as pack writes them: see bsample), so an add costs no
 * allocation of its own. */
#include "pp_builder_tab.h"
#include "pp_varint.h"
#include "pp_vec.h"

#include <stdlib.h>
#include <string.h>

#define MAX_COMMENTS 256

/* Makes room for `more` elements in the vector at (*v, n, *cap). */
static int vec_reserve(void **v, size_t n, size_t *cap, size_t more, size_t elem) {
  if (more > SIZE_MAX / elem - n)
    return -1;
  return pp_vec_grow(v, cap, n + more, elem, 16);
}

#define RESERVE(vec, more)                                                                         \
  vec_reserve((void **)&(vec).v, (vec).n, &(vec).cap, (more), sizeof *(vec).v)

/* size bytes at an align-byte boundary (a power of two, at most 8) from
 * the chunks of l; NULL on ENOMEM. */
static void *chunk_alloc(chunk_list *l, size_t size, size_t align) {
  mem_chunk *c = l->head;
  size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
  if (!c || at > c->cap || c->cap - at < size) {
    size_t cap = l->next_cap ? l->next_cap : CHUNK_FIRST;
    bool own = size > cap; /* a large record gets a chunk of its own */
    if (own)
      cap = size;
    /* Spares (all full-size) only where a new list grows full-size chunks
     * too: the chunks, and so pp_builder_mem_content, stay a new builder's. */
    if (!own && cap == CHUNK_MAX && l->spare) { /* paged in already */
      c = l->spare;
      l->spare = c->next;
      l->spare_bytes -= sizeof *c + c->cap;
    } else if (cap > SIZE_MAX - sizeof *c || !(c = malloc(sizeof *c + cap))) {
      return NULL;
    }
    c->used = 0;
    c->cap = cap;
    l->bytes += sizeof *c + cap;
    if (own && l->head) { /* behind the head, which keeps filling */
      c->next = l->head->next;
      l->head->next = c;
    } else {
      c->next = l->head;
      l->head = c;
      if (!own)
        l->next_cap = cap < CHUNK_MAX ? cap * 2 : CHUNK_MAX;
    }
    at = 0;
  }
  c->used = at + size;
  return c->mem + at;
}

static void chunk_chain_free(mem_chunk *c) {
  for (mem_chunk *next; c; c = next) {
    next = c->next;
    free(c);
  }
}

static void chunks_free(chunk_list *l) {
  chunk_chain_free(l->head);
  chunk_chain_free(l->spare);
}

/* Empties l for a reset builder: its full-size chunks become spares that
 * the next batch fills instead of new ones (freed, they went back to the
 * kernel and every page faulted in again); smaller ones go. */
static void chunks_reset(chunk_list *l) {
  for (mem_chunk *c = l->head, *next; c; c = next) {
    next = c->next;
    if (c->cap == CHUNK_MAX) {
      c->next = l->spare;
      l->spare = c;
      l->spare_bytes += sizeof *c + c->cap;
    } else {
      free(c);
    }
  }
  l->head = NULL;
  l->bytes = 0;
  l->next_cap = 0;
}

static void chunks_drop_spares(chunk_list *l) {
  chunk_chain_free(l->spare);
  l->spare = NULL;
  l->spare_bytes = 0;
}

void pp_builder_drop_spares(pp_builder *b) {
  chunks_drop_spares(&b->str_mem);
  chunks_drop_spares(&b->sample_mem);
}

/* The tables' expected sizes at creation (pp_htab_init). */
#define STR_IX_INIT 64
#define MAP_IX_INIT 16
#define FUNC_IX_INIT 64
#define LOC_IX_INIT 64
#define SAMPLE_IX_INIT 64

pp_builder *pp_builder_new(void) {
  pp_builder *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  if (pp_htab_init(&b->str_ix, STR_IX_INIT) != 0 || pp_htab_init(&b->map_ix, MAP_IX_INIT) != 0 ||
      pp_htab_init(&b->func_ix, FUNC_IX_INIT) != 0 || pp_htab_init(&b->loc_ix, LOC_IX_INIT) != 0 ||
      pp_htab_init(&b->sample_ix, SAMPLE_IX_INIT) != 0)
    goto fail;
  if (pp_builder_string(b, "") != 0)
    goto fail;
  return b;
fail:
  pp_builder_free(b);
  return NULL;
}

void pp_builder_free(pp_builder *b) {
  if (!b)
    return;
  chunks_free(&b->str_mem);
  chunks_free(&b->sample_mem);
  free(b->strs.v);
  pp_htab_free(&b->str_ix);
  free(b->maps.v);
  pp_htab_free(&b->map_ix);
  free(b->funcs.v);
  pp_htab_free(&b->func_ix);
  free(b->locs.v);
  free(b->lines.v);
  pp_htab_free(&b->loc_ix);
  free(b->samples.v);
  pp_htab_free(&b->sample_ix);
  free(b->sample_types.v);
  free(b->comments.v);
  free(b->scratch_labels.v);
  free(b->scratch_bytes.v);
  free(b->scratch_locs.v);
  free(b->scratch_lines.v);
  free(b);
}

/* ---- strings ---- */

typedef struct str_key {
  const pp_builder *b;
  const char *s;
  uint32_t len;
} str_key;

static bool str_eq(const void *ctx, uint32_t idx) {
  const str_key *k = ctx;
  const char *t = k->b->strs.v[idx];
  return bstr_len(t) == k->len && memcmp(t, k->s, k->len) == 0;
}

/* A copy of s (len bytes, then a NUL) in the string chunks; NULL on ENOMEM. */
static char *str_store(pp_builder *b, const char *s, uint32_t len) {
  char *t = chunk_alloc(&b->str_mem, sizeof len + (size_t)len + 1, 1);
  if (!t)
    return NULL;
  memcpy(t, &len, sizeof len);
  t += sizeof len;
  memcpy(t, s, len);
  t[len] = '\0';
  return t;
}

/* pp_builder_string of s, len bytes, whose hash is h (str_hash). */
static int64_t string_hashed(pp_builder *b, const char *s, size_t len, uint64_t h) {
  if (len >= UINT32_MAX)
    return -1;
  str_key k = {b, s, (uint32_t)len};
  size_t slot;
  int64_t found = pp_htab_find_slot(&b->str_ix, h, str_eq, &k, &slot);
  if (found >= 0)
    return found;
  if (b->strs.n >= UINT32_MAX - 1 || RESERVE(b->strs, 1) != 0)
    return -1;
  char *copy = str_store(b, s, k.len);
  /* On failure the copy stays in its chunk unused, freed with the builder. */
  if (!copy || pp_htab_insert_at(&b->str_ix, slot, h, (uint32_t)b->strs.n) != 0)
    return -1;
  b->strs.v[b->strs.n] = copy;
  b->str_chars += k.len;
  return (int64_t)b->strs.n++;
}

static uint64_t str_hash(const char *s, size_t len) {
  return pp_hash_bytes(s, len, 0x5157);
}

int64_t pp_builder_string(pp_builder *b, const char *s) {
  if (!s)
    s = "";
  size_t len = strlen(s);
  return string_hashed(b, s, len, str_hash(s, len));
}

/* Strings hashed ahead of the one being interned: enough for their slots'
 * cache misses to overlap (a merge interns every string of a push, most of
 * them new under a per-request label such as trace_id). */
#define STRINGS_AHEAD 8

int pp_builder_strings(pp_builder *b, const char *const *strs, size_t n, int64_t *out) {
  size_t len[STRINGS_AHEAD];
  uint64_t h[STRINGS_AHEAD];
  const char *s[STRINGS_AHEAD];
  for (size_t base = 0; base < n; base += STRINGS_AHEAD) {
    size_t m = n - base < STRINGS_AHEAD ? n - base : STRINGS_AHEAD;
    for (size_t i = 0; i < m; i++) {
      s[i] = strs[base + i] ? strs[base + i] : "";
      len[i] = strlen(s[i]);
      h[i] = str_hash(s[i], len[i]);
      __builtin_prefetch(&b->str_ix.slots[(size_t)(uint32_t)(h[i] >> 32) & b->str_ix.mask]);
    }
    for (size_t i = 0; i < m; i++)
      if ((out[base + i] = string_hashed(b, s[i], len[i], h[i])) < 0)
        return -1;
  }
  return 0;
}

#define VEC_MEM(vec) ((vec).cap * sizeof *(vec).v)
#define HTAB_MEM(t) (((t).mask + 1) * sizeof *(t).slots)

size_t pp_builder_mem(const pp_builder *b) {
  if (!b)
    return 0;
  return sizeof *b + b->str_mem.bytes + b->str_mem.spare_bytes + b->sample_mem.bytes +
         b->sample_mem.spare_bytes + VEC_MEM(b->strs) + HTAB_MEM(b->str_ix) + VEC_MEM(b->maps) +
         HTAB_MEM(b->map_ix) + VEC_MEM(b->funcs) + HTAB_MEM(b->func_ix) + VEC_MEM(b->locs) +
         VEC_MEM(b->lines) + HTAB_MEM(b->loc_ix) + VEC_MEM(b->samples) + HTAB_MEM(b->sample_ix) +
         VEC_MEM(b->sample_types) + VEC_MEM(b->comments) + VEC_MEM(b->scratch_labels) +
         VEC_MEM(b->scratch_bytes) + VEC_MEM(b->scratch_locs) + VEC_MEM(b->scratch_lines);
}

/* A vector's capacity after growing from nothing to n elements
 * (vec_reserve: 16, then doubling). */
static size_t vec_fresh(size_t n, size_t elem) {
  size_t c = n ? 16 : 0;
  while (c < n)
    c *= 2;
  return c * elem;
}

/* A table's size after growing from pp_htab_init(expected) to count
 * entries (pp_htab_init and pp_htab_insert's rules). */
static size_t htab_fresh(size_t count, size_t expected) {
  size_t c = 16;
  while (c < expected * 2)
    c <<= 1;
  while (count * 2 > c)
    c <<= 1;
  return c * sizeof(pp_htab_slot);
}

#define VEC_FRESH(vec) vec_fresh((vec).n, sizeof *(vec).v)

size_t pp_builder_mem_content(const pp_builder *b) {
  if (!b)
    return 0;
  /* The scratch vectors are emptied after each use: their capacity is what
   * any builder that did the same work holds. */
  return sizeof *b + b->str_mem.bytes + b->sample_mem.bytes + VEC_FRESH(b->strs) +
         htab_fresh(b->str_ix.count, STR_IX_INIT) + VEC_FRESH(b->maps) +
         htab_fresh(b->map_ix.count, MAP_IX_INIT) + VEC_FRESH(b->funcs) +
         htab_fresh(b->func_ix.count, FUNC_IX_INIT) + VEC_FRESH(b->locs) + VEC_FRESH(b->lines) +
         htab_fresh(b->loc_ix.count, LOC_IX_INIT) + VEC_FRESH(b->samples) +
         htab_fresh(b->sample_ix.count, SAMPLE_IX_INIT) + VEC_FRESH(b->sample_types) +
         VEC_FRESH(b->comments) + VEC_MEM(b->scratch_labels) + VEC_MEM(b->scratch_bytes) +
         VEC_MEM(b->scratch_locs) + VEC_MEM(b->scratch_lines);
}

static void htab_clear(pp_htab *t) {
  memset(t->slots, 0, (t->mask + 1) * sizeof *t->slots);
  t->count = 0;
}

int pp_builder_reset(pp_builder *b) {
  chunks_reset(&b->str_mem);
  chunks_reset(&b->sample_mem);
  pp_builder keep = *b;
  /* Everything else as calloc left it in pp_builder_new. */
  memset(b, 0, sizeof *b);
#define KEEP_VEC(f)                                                                                \
  do {                                                                                             \
    b->f.v = keep.f.v;                                                                             \
    b->f.cap = keep.f.cap;                                                                         \
  } while (0)
#define KEEP_TAB(f)                                                                                \
  do {                                                                                             \
    b->f = keep.f;                                                                                 \
    htab_clear(&b->f);                                                                             \
  } while (0)
  b->str_mem = keep.str_mem;
  b->sample_mem = keep.sample_mem;
  KEEP_VEC(strs);
  KEEP_VEC(maps);
  KEEP_VEC(funcs);
  KEEP_VEC(locs);
  KEEP_VEC(lines);
  KEEP_VEC(samples);
  KEEP_VEC(sample_types);
  KEEP_VEC(comments);
  KEEP_VEC(scratch_labels);
  KEEP_VEC(scratch_bytes);
  KEEP_VEC(scratch_locs);
  KEEP_VEC(scratch_lines);
  KEEP_TAB(str_ix);
  KEEP_TAB(map_ix);
  KEEP_TAB(func_ix);
  KEEP_TAB(loc_ix);
  KEEP_TAB(sample_ix);
#undef KEEP_VEC
#undef KEEP_TAB
  /* String 0 is "", as in a new builder; its chunk is the first new one. */
  return pp_builder_string(b, "") == 0 ? 0 : -1;
}

size_t pp_builder_string_count(const pp_builder *b) {
  return b->strs.n;
}

const char *pp_builder_string_at(const pp_builder *b, int64_t ix) {
  return ix >= 0 && (size_t)ix < b->strs.n ? b->strs.v[ix] : NULL;
}

static bool string_ok(const pp_builder *b, int64_t ix) {
  return ix >= 0 && (size_t)ix < b->strs.n;
}

/* ---- profile-level fields ---- */

int pp_builder_add_sample_type_ix(pp_builder *b, int64_t type, int64_t unit) {
  if (!string_ok(b, type) || !string_ok(b, unit) || RESERVE(b->sample_types, 2) != 0)
    return -1;
  /* Samples already added would have too few values. */
  if (b->samples.n > 0)
    return -1;
  b->sample_types.v[b->sample_types.n++] = type;
  b->sample_types.v[b->sample_types.n++] = unit;
  return 0;
}

int pp_builder_add_sample_type(pp_builder *b, const char *type, const char *unit) {
  int64_t t = pp_builder_string(b, type), u = pp_builder_string(b, unit);
  if (t < 0 || u < 0)
    return -1;
  return pp_builder_add_sample_type_ix(b, t, u);
}

void pp_builder_set_period_ix(pp_builder *b, int64_t type, int64_t unit, int64_t period) {
  b->period_type = type;
  b->period_unit = unit;
  b->period = period;
  b->has_period_type = true;
}

int pp_builder_set_period(pp_builder *b, const char *type, const char *unit, int64_t period) {
  int64_t t = pp_builder_string(b, type), u = pp_builder_string(b, unit);
  if (t < 0 || u < 0)
    return -1;
  pp_builder_set_period_ix(b, t, u, period);
  return 0;
}

void pp_builder_set_time(pp_builder *b, int64_t time_nanos, int64_t duration_nanos) {
  b->time_nanos = time_nanos;
  b->duration_nanos = duration_nanos;
}

int pp_builder_add_comment_ix(pp_builder *b, int64_t ix) {
  if (!string_ok(b, ix))
    return -1;
  for (size_t i = 0; i < b->comments.n; i++)
    if (b->comments.v[i] == ix)
      return 0;
  if (b->comments.n >= MAX_COMMENTS)
    return 0;
  if (RESERVE(b->comments, 1) != 0)
    return -1;
  b->comments.v[b->comments.n++] = ix;
  return 0;
}

int pp_builder_add_comment(pp_builder *b, const char *comment) {
  int64_t ix = pp_builder_string(b, comment);
  return ix < 0 ? -1 : pp_builder_add_comment_ix(b, ix);
}

int pp_builder_set_default_sample_type(pp_builder *b, const char *type) {
  int64_t ix = pp_builder_string(b, type);
  if (ix < 0)
    return -1;
  b->default_sample_type = ix;
  return 0;
}

void pp_builder_set_extras_ix(pp_builder *b, int64_t drop_frames, int64_t keep_frames,
                              int64_t default_sample_type, int64_t doc_url) {
  if (!b->drop_frames && string_ok(b, drop_frames))
    b->drop_frames = drop_frames;
  if (!b->keep_frames && string_ok(b, keep_frames))
    b->keep_frames = keep_frames;
  if (!b->default_sample_type && string_ok(b, default_sample_type))
    b->default_sample_type = default_sample_type;
  if (!b->doc_url && string_ok(b, doc_url))
    b->doc_url = doc_url;
}

void pp_builder_get_meta(const pp_builder *b, pp_builder_meta *m) {
  m->nsample_types = b->sample_types.n / 2;
  m->sample_types = b->sample_types.v;
  m->period_type = b->period_type;
  m->period_unit = b->period_unit;
  m->period = b->period;
  m->has_period_type = b->has_period_type;
  m->time_nanos = b->time_nanos;
  m->duration_nanos = b->duration_nanos;
}

bool pp_builder_merge_started(const pp_builder *b) {
  return b->merge_started;
}

void pp_builder_set_merge_started(pp_builder *b) {
  b->merge_started = true;
}

/* ---- mappings ---- */

static bool mapping_eq(const void *ctx, uint32_t idx) {
  const bmapping *k = ((const bmapping *const *)ctx)[0];
  const bmapping *m = &((const pp_builder *)((const void *const *)ctx)[1])->maps.v[idx];
  return m->start == k->start && m->limit == k->limit && m->offset == k->offset &&
         m->file == k->file && m->build_id == k->build_id &&
         ((m->flags ^ k->flags) & PP_MAPPING_HAS_FUNCTIONS) == 0;
}

uint64_t pp_builder_mapping_ix(pp_builder *b, uint64_t start, uint64_t limit, uint64_t offset,
                               int64_t file, int64_t build_id, unsigned flags) {
  if (!string_ok(b, file) || !string_ok(b, build_id))
    return 0;
  bmapping k = {start, limit, offset, file, build_id, flags};
  uint64_t words[6] = {
      start, limit, offset, (uint64_t)file, (uint64_t)build_id, flags & PP_MAPPING_HAS_FUNCTIONS};
  uint64_t h = pp_hash_bytes(words, sizeof words, 0x3a9);
  const void *ctx[2] = {&k, b};
  int64_t found = pp_htab_find(&b->map_ix, h, mapping_eq, ctx);
  if (found >= 0) {
    b->maps.v[found].flags |= flags;
    return (uint64_t)found + 1;
  }
  if (RESERVE(b->maps, 1) != 0 || pp_htab_insert(&b->map_ix, h, (uint32_t)b->maps.n) != 0)
    return 0;
  b->maps.v[b->maps.n++] = k;
  return b->maps.n;
}

uint64_t pp_builder_mapping(pp_builder *b, uint64_t start, uint64_t limit, uint64_t offset,
                            const char *file, const char *build_id, bool has_functions) {
  int64_t f = pp_builder_string(b, file), id = pp_builder_string(b, build_id);
  if (f < 0 || id < 0)
    return 0;
  return pp_builder_mapping_ix(b, start, limit, offset, f, id,
                               has_functions ? PP_MAPPING_HAS_FUNCTIONS : 0);
}

/* ---- functions ---- */

static bool function_eq(const void *ctx, uint32_t idx) {
  const bfunction *k = ((const void *const *)ctx)[0];
  const pp_builder *b = ((const void *const *)ctx)[1];
  return memcmp(&b->funcs.v[idx], k, sizeof *k) == 0;
}

uint64_t pp_builder_function_ix(pp_builder *b, int64_t name, int64_t system_name, int64_t filename,
                                int64_t start_line) {
  if (!string_ok(b, name) || !string_ok(b, system_name) || !string_ok(b, filename))
    return 0;
  bfunction k = {name, system_name, filename, start_line};
  uint64_t h = pp_hash_bytes(&k, sizeof k, 0xf7);
  const void *ctx[2] = {&k, b};
  int64_t found = pp_htab_find(&b->func_ix, h, function_eq, ctx);
  if (found >= 0)
    return (uint64_t)found + 1;
  if (RESERVE(b->funcs, 1) != 0 || pp_htab_insert(&b->func_ix, h, (uint32_t)b->funcs.n) != 0)
    return 0;
  b->funcs.v[b->funcs.n++] = k;
  return b->funcs.n;
}

uint64_t pp_builder_function(pp_builder *b, const char *name, const char *system_name,
                             const char *filename, int64_t start_line) {
  int64_t n = pp_builder_string(b, name), s = pp_builder_string(b, system_name),
          f = pp_builder_string(b, filename);
  if (n < 0 || s < 0 || f < 0)
    return 0;
  return pp_builder_function_ix(b, n, s, f, start_line);
}

/* ---- locations ---- */

typedef struct loc_key {
  const pp_builder *b;
  uint64_t mapping_id, address;
  const bline *lines;
  size_t nlines;
} loc_key;

static bool location_eq(const void *ctx, uint32_t idx) {
  const loc_key *k = ctx;
  const blocation *l = &k->b->locs.v[idx];
  return l->mapping_id == k->mapping_id && l->address == k->address && l->nlines == k->nlines &&
         (k->nlines == 0 ||
          memcmp(&k->b->lines.v[l->line_off], k->lines, k->nlines * sizeof *k->lines) == 0);
}

uint64_t pp_builder_location(pp_builder *b, uint64_t mapping_id, uint64_t address,
                             const uint64_t *function_ids, const int64_t *lines, size_t nlines) {
  if (mapping_id > b->maps.n || (nlines && !function_ids))
    return 0;
  if (RESERVE(b->scratch_lines, nlines) != 0)
    return 0;
  bline *tmp = b->scratch_lines.v;
  for (size_t i = 0; i < nlines; i++) {
    if (function_ids[i] == 0 || function_ids[i] > b->funcs.n)
      return 0; /* go tool pprof rejects a line without a function */
    tmp[i].function_id = function_ids[i];
    tmp[i].line = lines ? lines[i] : 0;
  }
  loc_key k = {b, mapping_id, address, tmp, nlines};
  uint64_t head[2] = {mapping_id, address};
  uint64_t h = pp_hash_bytes(head, sizeof head, 0x10c);
  h = pp_hash_bytes(tmp, nlines * sizeof *tmp, h);
  int64_t found = pp_htab_find(&b->loc_ix, h, location_eq, &k);
  if (found >= 0)
    return (uint64_t)found + 1;
  if (b->locs.n >= UINT32_MAX - 1 || RESERVE(b->locs, 1) != 0 || RESERVE(b->lines, nlines) != 0 ||
      pp_htab_insert(&b->loc_ix, h, (uint32_t)b->locs.n) != 0)
    return 0;
  blocation *l = &b->locs.v[b->locs.n++];
  l->mapping_id = mapping_id;
  l->address = address;
  l->line_off = b->lines.n;
  l->nlines = nlines;
  if (nlines)
    memcpy(&b->lines.v[b->lines.n], tmp, nlines * sizeof *tmp);
  b->lines.n += nlines;
  return b->locs.n;
}

/* ---- samples ---- */

typedef struct sample_key {
  const pp_builder *b;
  const uint8_t *locs, *labs; /* encoded (see bsample) */
  uint32_t locs_len, labs_len;
} sample_key;

static bool sample_eq(const void *ctx, uint32_t idx) {
  const sample_key *k = ctx;
  const bsample *s = &k->b->samples.v[idx];
  if (s->locs_len != k->locs_len || s->labs_len != k->labs_len)
    return false;
  const uint8_t *t = bsample_bytes(s, k->b->sample_types.n / 2);
  return (k->locs_len == 0 || memcmp(t, k->locs, k->locs_len) == 0) &&
         (k->labs_len == 0 || memcmp(t + k->locs_len, k->labs, k->labs_len) == 0);
}

static int label_cmp(const pp_ilabel *a, const pp_ilabel *c) {
  if (a->key != c->key)
    return a->key < c->key ? -1 : 1;
  if (a->str != c->str)
    return a->str < c->str ? -1 : 1;
  if (a->num != c->num)
    return a->num < c->num ? -1 : 1;
  if (a->num_unit != c->num_unit)
    return a->num_unit < c->num_unit ? -1 : 1;
  return 0;
}

static int label_qcmp(const void *a, const void *c) {
  return label_cmp(a, c);
}

static void sort_labels(pp_ilabel *l, size_t n) {
  if (n > 16) {
    qsort(l, n, sizeof *l, label_qcmp);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    pp_ilabel x = l[i];
    size_t j = i;
    for (; j > 0 && label_cmp(&l[j - 1], &x) > 0; j--)
      l[j] = l[j - 1];
    l[j] = x;
  }
}

/* Adds with wrap-around instead of signed overflow (which is undefined). */
static int64_t add_wrap(int64_t a, int64_t c) {
  return (int64_t)((uint64_t)a + (uint64_t)c);
}

/* A label as pack writes it, a Sample.label field: tag, length, body (at
 * most BSAMPLE_LABEL_MAX bytes, so its length takes one byte). */
static uint8_t *put_label(uint8_t *p, const pp_ilabel *l) {
  uint8_t *body = pp_put_field(p + 2, 1, (uint64_t)l->key);
  body = pp_put_field(body, 2, (uint64_t)l->str);
  body = pp_put_field(body, 3, (uint64_t)l->num);
  body = pp_put_field(body, 4, (uint64_t)l->num_unit);
  p[0] = 3 << 3 | 2;
  p[1] = (uint8_t)(body - p - 2);
  return body;
}

/* Checks labels' string indices and copies them to b->scratch_labels. */
static int labels_to_scratch(pp_builder *b, const pp_ilabel *labels, size_t nlabels) {
  if ((nlabels && !labels) || RESERVE(b->scratch_labels, nlabels) != 0)
    return -1;
  for (size_t i = 0; i < nlabels; i++) {
    if (!string_ok(b, labels[i].key) || !string_ok(b, labels[i].str) ||
        !string_ok(b, labels[i].num_unit))
      return -1;
    b->scratch_labels.v[i] = labels[i];
  }
  return 0;
}

/* Encodes a sample's key into key (room for locs_len + nlabels *
 * BSAMPLE_LABEL_MAX bytes): its location ids as given, then its labels,
 * already in b->scratch_labels, sorted and encoded; hashes it and starts
 * fetching its table slot. */
static int prep_key(pp_builder *b, pp_sample_prep *p, uint8_t *key, const uint8_t *locs,
                    size_t locs_len, const int64_t *values, size_t nvalues, size_t nlabels) {
  if (nvalues != b->sample_types.n / 2 || nvalues == 0 || !values || (locs_len && !locs))
    return -1; /* go tool pprof rejects samples in a profile without sample types */
  if (locs_len)
    memmove(key, locs, locs_len);
  uint8_t *labs = key + locs_len, *q = labs;
  sort_labels(b->scratch_labels.v, nlabels);
  for (size_t i = 0; i < nlabels; i++) /* string indices stay below UINT32_MAX */
    q = put_label(q, &b->scratch_labels.v[i]);
  size_t labs_len = (size_t)(q - labs);
  if (locs_len + labs_len > UINT32_MAX) /* see bsample */
    return -1;
  p->key = key;
  p->locs_len = (uint32_t)locs_len;
  p->labs_len = (uint32_t)labs_len;
  p->values = values;
  p->nvalues = nvalues;
  p->h = pp_hash_bytes(labs, labs_len, pp_hash_bytes(key, locs_len, 0x5a));
  __builtin_prefetch(&b->sample_ix.slots[(size_t)(uint32_t)(p->h >> 32) & b->sample_ix.mask]);
  return 0;
}

/* Room for a key of locs_len bytes of location ids and nlabels labels in
 * *buf (capacity *cap); NULL when out of memory or too large. */
static uint8_t *key_room(uint8_t **buf, size_t *cap, size_t locs_len, size_t nlabels) {
  if (nlabels > SIZE_MAX / 4 / BSAMPLE_LABEL_MAX || locs_len > SIZE_MAX / 4)
    return NULL;
  size_t need = locs_len + nlabels * BSAMPLE_LABEL_MAX + 1;
  if (need > *cap) {
    size_t ncap = need < 256 ? 256 : need * 2;
    uint8_t *nb = realloc(*buf, ncap);
    if (!nb)
      return NULL;
    *buf = nb;
    *cap = ncap;
  }
  return *buf;
}

int pp_builder_sample_prep(pp_builder *b, pp_sample_prep *p, const uint8_t *locs, size_t locs_len,
                           const int64_t *values, size_t nvalues, const pp_ilabel *labels,
                           size_t nlabels) {
  uint8_t *key;
  if (labels_to_scratch(b, labels, nlabels) != 0 ||
      !(key = key_room(&p->buf, &p->cap, locs_len, nlabels)))
    return -1;
  return prep_key(b, p, key, locs, locs_len, values, nvalues, nlabels);
}

int pp_builder_sample_commit(pp_builder *b, const pp_sample_prep *p) {
  size_t locs_len = p->locs_len, labs_len = p->labs_len, len = locs_len + labs_len;
  size_t nvalues = p->nvalues;
  const int64_t *values = p->values;
  sample_key k = {b, p->key, p->key + locs_len, p->locs_len, p->labs_len};
  size_t slot;
  int64_t found = pp_htab_find_slot(&b->sample_ix, p->h, sample_eq, &k, &slot);
  if (found >= 0) {
    int64_t *v = b->samples.v[found].rec;
    for (size_t i = 0; i < nvalues; i++)
      v[i] = add_wrap(v[i], values[i]);
    return 0;
  }
  if (b->samples.n >= UINT32_MAX || RESERVE(b->samples, 1) != 0 || len > SIZE_MAX / 2 ||
      nvalues > (SIZE_MAX / 2 - len) / sizeof *values)
    return -1;
  int64_t *rec = chunk_alloc(&b->sample_mem, nvalues * sizeof *values + len, sizeof *rec);
  if (!rec || pp_htab_insert_at(&b->sample_ix, slot, p->h, (uint32_t)b->samples.n) != 0)
    return -1; /* a record left unused stays in its chunk, freed with the builder */
  bsample *s = &b->samples.v[b->samples.n++];
  s->rec = rec;
  s->locs_len = (uint32_t)locs_len;
  s->labs_len = (uint32_t)labs_len;
  memcpy(rec, values, nvalues * sizeof *values);
  if (len)
    memcpy(bsample_bytes(s, nvalues), p->key, len);
  b->sample_bytes += len;
  return 0;
}

void pp_sample_prep_free(pp_sample_prep *p) {
  free(p->buf);
  p->buf = NULL;
  p->cap = 0;
}

/* Adds a sample whose labels are in b->scratch_labels: prep and commit at
 * once, the key in b->scratch_bytes. */
static int sample_add_enc(pp_builder *b, const uint8_t *locs, size_t locs_len,
                          const int64_t *values, size_t nvalues, size_t nlabels) {
  pp_sample_prep p;
  if (nlabels > SIZE_MAX / 4 / BSAMPLE_LABEL_MAX || locs_len > SIZE_MAX / 4 ||
      RESERVE(b->scratch_bytes, locs_len + nlabels * BSAMPLE_LABEL_MAX + 1) != 0 ||
      prep_key(b, &p, b->scratch_bytes.v, locs, locs_len, values, nvalues, nlabels) != 0)
    return -1;
  return pp_builder_sample_commit(b, &p);
}

/* sample_add_enc of location ids given as numbers, checked here. */
static int sample_add_scratch(pp_builder *b, const uint64_t *location_ids, size_t nlocs,
                              const int64_t *values, size_t nvalues, size_t nlabels) {
  if (nlocs && !location_ids)
    return -1;
  if (nlocs > SIZE_MAX / 4 / BSAMPLE_LOC_MAX ||
      RESERVE(b->scratch_locs, nlocs * BSAMPLE_LOC_MAX + 1) != 0)
    return -1;
  uint8_t *p = b->scratch_locs.v;
  for (size_t i = 0; i < nlocs; i++) {
    if (location_ids[i] == 0 || location_ids[i] > b->locs.n)
      return -1;
    p = pp_put_varint(p, location_ids[i]); /* locs.n stays below UINT32_MAX */
  }
  return sample_add_enc(b, b->scratch_locs.v, (size_t)(p - b->scratch_locs.v), values, nvalues,
                        nlabels);
}

int pp_builder_sample_ix(pp_builder *b, const uint64_t *location_ids, size_t nlocs,
                         const int64_t *values, size_t nvalues, const pp_ilabel *labels,
                         size_t nlabels) {
  if (labels_to_scratch(b, labels, nlabels) != 0)
    return -1;
  return sample_add_scratch(b, location_ids, nlocs, values, nvalues, nlabels);
}

int pp_builder_sample(pp_builder *b, const uint64_t *location_ids, size_t nlocs,
                      const int64_t *values, size_t nvalues, const pp_label *labels,
                      size_t nlabels) {
  if ((nlabels && !labels) || RESERVE(b->scratch_labels, nlabels) != 0)
    return -1;
  for (size_t i = 0; i < nlabels; i++) {
    pp_ilabel l = {pp_builder_string(b, labels[i].key), 0, 0, 0};
    if (labels[i].str) {
      l.str = pp_builder_string(b, labels[i].str);
    } else {
      l.num = labels[i].num;
      l.num_unit = pp_builder_string(b, labels[i].num_unit);
    }
    if (l.key < 0 || l.str < 0 || l.num_unit < 0)
      return -1;
    b->scratch_labels.v[i] = l;
  }
  return sample_add_scratch(b, location_ids, nlocs, values, nvalues, nlabels);
}

size_t pp_builder_sample_count(const pp_builder *b) {
  return b->samples.n;
}
