/* pprof -> OTLP profiles; see otlp_convert.h for the rules. Every dictionary
 * table is an interner over int64 keys (strings over their bytes): the key
 * holds the entry's fields, so equal entries get one index, and entry 0 is
 * the all-zero key, interned first. Packing turns the keys into protobuf-c
 * messages in one arena that lives only for the pack. */
#include "otlp_convert.h"

#include <stdlib.h>
#include <string.h>

#include "otlp_profiles.pb-c.h"
#include "pp_why.h"
#include "pp_hash.h"
#include "pp_hex.h"
#include "pp_vec.h"

#define IX_MAX INT32_MAX /* OTLP indices are int32 */

static int grow(void *v, size_t *cap, size_t need, size_t elem) {
  return pp_vec_grow(v, cap, need, elem, 16);
}

/* ---- interners ---- */

/* Variable-length int64 keys in one pool; entry i is pool[off[i]..off[i+1]). */
typedef struct ktab {
  int64_t *pool;
  size_t plen, pcap;
  size_t *off; /* n + 1 entries */
  size_t n, cap;
  pp_htab h;
} ktab;

typedef struct keq_ctx {
  const ktab *t;
  const int64_t *k;
  size_t len;
} keq_ctx;

static bool ktab_eq(const void *ctx, uint32_t idx) {
  const keq_ctx *c = ctx;
  size_t len = c->t->off[idx + 1] - c->t->off[idx];
  /* (no pointer arithmetic on an empty pool: it may still be NULL) */
  return len == c->len &&
         (len == 0 || memcmp(c->t->pool + c->t->off[idx], c->k, len * sizeof *c->k) == 0);
}

static int ktab_init(ktab *t) {
  memset(t, 0, sizeof *t);
  t->off = malloc(16 * sizeof *t->off);
  if (!t->off || pp_htab_init(&t->h, 16) != 0)
    return -1;
  t->cap = 16;
  t->off[0] = 0;
  return 0;
}

static void ktab_free(ktab *t) {
  free(t->pool);
  free(t->off);
  pp_htab_free(&t->h);
  memset(t, 0, sizeof *t);
}

/* Index of key k (len int64s), interned if new; -1 on ENOMEM or overflow. */
static int64_t ktab_intern(ktab *t, const int64_t *k, size_t len) {
  uint64_t h = pp_hash_bytes(k, len * sizeof *k, 0x6f746c70);
  keq_ctx c = {t, k, len};
  int64_t found = pp_htab_find(&t->h, h, ktab_eq, &c);
  if (found >= 0)
    return found;
  if (t->n >= IX_MAX)
    return -1;
  /* off has one entry more than the entries: its capacity counts that. */
  if (grow(&t->pool, &t->pcap, t->plen + len, sizeof *t->pool) != 0 ||
      grow(&t->off, &t->cap, t->n + 2, sizeof *t->off) != 0)
    return -1;
  if (pp_htab_insert(&t->h, h, (uint32_t)t->n) != 0)
    return -1;
  if (len)
    memcpy(t->pool + t->plen, k, len * sizeof *k);
  t->plen += len;
  t->off[t->n + 1] = t->plen;
  return (int64_t)t->n++;
}

static const int64_t *ktab_get(const ktab *t, size_t i, size_t *len) {
  *len = t->off[i + 1] - t->off[i];
  return *len ? t->pool + t->off[i] : NULL;
}

typedef struct stab {
  char **s;
  size_t n, cap;
  pp_htab h;
} stab;

typedef struct seq_ctx {
  const stab *t;
  const char *s;
} seq_ctx;

static bool stab_eq(const void *ctx, uint32_t idx) {
  const seq_ctx *c = ctx;
  return strcmp(c->t->s[idx], c->s) == 0;
}

static int64_t stab_intern(stab *t, const char *s) {
  if (!s)
    s = "";
  uint64_t h = pp_hash_bytes(s, strlen(s), 0x737472);
  seq_ctx c = {t, s};
  int64_t found = pp_htab_find(&t->h, h, stab_eq, &c);
  if (found >= 0)
    return found;
  if (t->n >= IX_MAX)
    return -1;
  if (grow(&t->s, &t->cap, t->n + 1, sizeof *t->s) != 0)
    return -1;
  char *dup = strdup(s);
  if (!dup || pp_htab_insert(&t->h, h, (uint32_t)t->n) != 0) {
    free(dup);
    return -1;
  }
  t->s[t->n] = dup;
  return (int64_t)t->n++;
}

static void stab_free(stab *t) {
  for (size_t i = 0; i < t->n; i++)
    free(t->s[i]);
  free(t->s);
  pp_htab_free(&t->h);
  memset(t, 0, sizeof *t);
}

/* ---- the request being built ---- */

enum { ATTR_STR = 0, ATTR_INT = 1 };
/* Key layouts (int64 each):
 *   attribute  key, kind, value (string index or number), unit
 *   mapping    start, limit, offset, filename, build-id attribute
 *   function   name, system name, filename, start line
 *   location   mapping, address, then (function, line) pairs
 *   stack      location indices, leaf first
 *   link       trace id high, low, span id
 *   sample     stack, link, then sorted attribute indices */
enum { T_ATTR, T_MAP, T_FUNC, T_LOC, T_STACK, T_LINK, T_NTABLES };

typedef struct res_attr {
  char *key, *str;
  int64_t num;
  bool is_int;
} res_attr;

typedef struct resource {
  res_attr *attrs;
  size_t nattrs;
  char *scope_name, *scope_version;
  size_t first_profile, nprofiles;
} resource;

typedef struct profile {
  int64_t type, unit, period_type, period_unit, period;
  bool has_period_type;
  int64_t time_ns, duration_ns;
  ktab *samples; /* shared by the profiles of one pprof; owned by the first */
  int64_t *values;
  size_t stride, col; /* values[sample * stride + col] */
  uint32_t dropped;
} profile;

struct pp_otlp {
  stab strings;
  ktab t[T_NTABLES];
  resource *res;
  size_t nres, capres;
  profile *prof;
  size_t nprof, capprof;
  pp_otlp_stats st;
};

pp_otlp *pp_otlp_new(void) {
  pp_otlp *o = calloc(1, sizeof *o);
  if (!o)
    return NULL;
  static const int64_t zeros[5];
  static const size_t zero_len[T_NTABLES] = {
      [T_ATTR] = 4, [T_MAP] = 5, [T_FUNC] = 4, [T_LOC] = 2, [T_STACK] = 0, [T_LINK] = 3};
  if (pp_htab_init(&o->strings.h, 256) != 0 || stab_intern(&o->strings, "") != 0)
    goto fail;
  for (int i = 0; i < T_NTABLES; i++)
    if (ktab_init(&o->t[i]) != 0 || ktab_intern(&o->t[i], zeros, zero_len[i]) != 0)
      goto fail;
  return o;
fail:
  pp_otlp_free(o);
  return NULL;
}

void pp_otlp_free(pp_otlp *o) {
  if (!o)
    return;
  stab_free(&o->strings);
  for (int i = 0; i < T_NTABLES; i++)
    ktab_free(&o->t[i]);
  for (size_t i = 0; i < o->nres; i++) {
    for (size_t j = 0; j < o->res[i].nattrs; j++) {
      free(o->res[i].attrs[j].key);
      free(o->res[i].attrs[j].str);
    }
    free(o->res[i].attrs);
    free(o->res[i].scope_name);
    free(o->res[i].scope_version);
  }
  free(o->res);
  for (size_t i = 0; i < o->nprof; i++) {
    if (o->prof[i].col == 0) {
      ktab_free(o->prof[i].samples);
      free(o->prof[i].samples);
      free(o->prof[i].values);
    }
  }
  free(o->prof);
  free(o);
}

void pp_otlp_get_stats(const pp_otlp *o, pp_otlp_stats *st) {
  *st = o->st;
}

bool pp_otlp_hex_id(const char *s, uint8_t *out, size_t n) {
  if (!s || strlen(s) != 2 * n)
    return false;
  bool nonzero = false;
  for (size_t i = 0; i < n; i++) {
    int hi = pp_hexval(s[2 * i]), lo = pp_hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out[i] = (uint8_t)(hi * 16 + lo);
    nonzero |= out[i] != 0;
  }
  return nonzero;
}

/* ---- conversion of one pprof ---- */

typedef struct conv {
  pp_otlp *o;
  const Perftools__Profiles__Profile *p;
  int64_t *sx;                        /* pprof string index -> ours */
  int64_t *map_ix, *func_ix, *loc_ix; /* by pprof position; -1 = not yet */
  pp_idmap maps, funcs, locs;
  int64_t *kbuf;
  size_t kcap;
} conv;

static int kbuf_need(conv *c, size_t n) {
  return grow(&c->kbuf, &c->kcap, n, sizeof *c->kbuf);
}

static int64_t pstr_ix(conv *c, int64_t i) {
  if (i < 0 || (size_t)i >= c->p->n_string_table)
    return 0;
  if (c->sx[i] < 0)
    c->sx[i] = stab_intern(&c->o->strings, c->p->string_table[i]);
  return c->sx[i];
}

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

static int64_t conv_mapping(conv *c, uint64_t id) {
  if (id == 0)
    return 0;
  int64_t pos = pp_idmap_find(&c->maps, id);
  if (pos < 0)
    return 0; /* validation rules this out */
  if (c->map_ix[pos] >= 0)
    return c->map_ix[pos];
  const Perftools__Profiles__Mapping *m = c->p->mapping[pos];
  int64_t bid_attr = 0;
  const char *bid = pstr(c->p, m->build_id);
  if (*bid) {
    int64_t k[4] = {stab_intern(&c->o->strings, PP_OTLP_ATTR_BUILD_ID), ATTR_STR,
                    pstr_ix(c, m->build_id), 0};
    if (k[0] < 0 || k[2] < 0 || (bid_attr = ktab_intern(&c->o->t[T_ATTR], k, 4)) < 0)
      return -1;
  }
  int64_t file = pstr_ix(c, m->filename);
  if (file < 0)
    return -1;
  int64_t k[5] = {(int64_t)m->memory_start, (int64_t)m->memory_limit, (int64_t)m->file_offset, file,
                  bid_attr};
  return c->map_ix[pos] = ktab_intern(&c->o->t[T_MAP], k, 5);
}

static int64_t conv_function(conv *c, uint64_t id) {
  int64_t pos = pp_idmap_find(&c->funcs, id);
  if (pos < 0)
    return 0;
  if (c->func_ix[pos] >= 0)
    return c->func_ix[pos];
  const Perftools__Profiles__Function *f = c->p->function[pos];
  int64_t k[4] = {pstr_ix(c, f->name), pstr_ix(c, f->system_name), pstr_ix(c, f->filename),
                  f->start_line};
  if (k[0] < 0 || k[1] < 0 || k[2] < 0)
    return -1;
  return c->func_ix[pos] = ktab_intern(&c->o->t[T_FUNC], k, 4);
}

static int64_t conv_location(conv *c, uint64_t id) {
  int64_t pos = pp_idmap_find(&c->locs, id);
  if (pos < 0)
    return 0;
  if (c->loc_ix[pos] >= 0)
    return c->loc_ix[pos];
  const Perftools__Profiles__Location *l = c->p->location[pos];
  int64_t mi = conv_mapping(c, l->mapping_id);
  if (mi < 0)
    return -1;
  /* Its own key buffer: sample_key holds the stack being built in kbuf. */
  size_t len = 2 + 2 * l->n_line;
  int64_t *k = malloc(len * sizeof *k);
  if (!k)
    return -1;
  k[0] = mi;
  k[1] = (int64_t)l->address;
  for (size_t j = 0; j < l->n_line; j++) {
    if ((k[2 + 2 * j] = conv_function(c, l->line[j]->function_id)) < 0) {
      free(k);
      return -1;
    }
    k[3 + 2 * j] = l->line[j]->line;
  }
  c->loc_ix[pos] = ktab_intern(&c->o->t[T_LOC], k, len);
  free(k);
  return c->loc_ix[pos];
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The sample's key: stack, link, sorted attributes (first of each key). */
static int sample_key(conv *c, const Perftools__Profiles__Sample *s, size_t *klen) {
  pp_otlp *o = c->o;
  const Perftools__Profiles__Profile *p = c->p;
  if (kbuf_need(c, s->n_location_id + 2 + s->n_label) != 0)
    return -1;
  /* The stack (leaf first, as in pprof), built in kbuf then interned. */
  for (size_t j = 0; j < s->n_location_id; j++)
    if ((c->kbuf[j] = conv_location(c, s->location_id[j])) < 0)
      return -1;
  int64_t stack = ktab_intern(&o->t[T_STACK], c->kbuf, s->n_location_id);
  if (stack < 0)
    return -1;
  int64_t *attrs = c->kbuf + 2;
  size_t na = 0;
  const char *trace = NULL, *span = NULL;
  for (size_t j = 0; j < s->n_label; j++) {
    const Perftools__Profiles__Label *l = s->label[j];
    const char *key = pstr(p, l->key);
    bool dup = !*key;
    for (size_t q = 0; q < j && !dup; q++)
      dup = strcmp(pstr(p, s->label[q]->key), key) == 0;
    if (dup) {
      o->st.dropped_labels++;
      continue;
    }
    int64_t k[4] = {pstr_ix(c, l->key), l->str ? ATTR_STR : ATTR_INT,
                    l->str ? pstr_ix(c, l->str) : l->num, l->str ? 0 : pstr_ix(c, l->num_unit)};
    if (k[0] < 0 || (l->str && k[2] < 0) || k[3] < 0)
      return -1;
    if ((attrs[na] = ktab_intern(&o->t[T_ATTR], k, 4)) < 0)
      return -1;
    na++;
    if (l->str && strcmp(key, "trace_id") == 0)
      trace = pstr(p, l->str);
    else if (l->str && strcmp(key, "span_id") == 0)
      span = pstr(p, l->str);
  }
  qsort(attrs, na, sizeof *attrs, cmp_i64);
  int64_t link = 0;
  uint8_t tid[16], sid[8];
  if (trace && span && pp_otlp_hex_id(trace, tid, 16) && pp_otlp_hex_id(span, sid, 8)) {
    int64_t k[3];
    uint64_t hi = 0, lo = 0, sp = 0;
    for (int i = 0; i < 8; i++) {
      hi = hi << 8 | tid[i];
      lo = lo << 8 | tid[8 + i];
      sp = sp << 8 | sid[i];
    }
    k[0] = (int64_t)hi;
    k[1] = (int64_t)lo;
    k[2] = (int64_t)sp;
    if ((link = ktab_intern(&o->t[T_LINK], k, 3)) < 0)
      return -1;
  }
  c->kbuf[0] = stack;
  c->kbuf[1] = link;
  *klen = 2 + na;
  return 0;
}

static int add_resource(pp_otlp *o, const pp_otlp_attr *res, size_t nres, const char *scope_name,
                        const char *scope_version) {
  if (grow(&o->res, &o->capres, o->nres + 1, sizeof *o->res) != 0)
    return -1;
  resource *r = &o->res[o->nres];
  memset(r, 0, sizeof *r);
  o->nres++; /* freed by pp_otlp_free whatever follows */
  r->first_profile = o->nprof;
  if (nres && !(r->attrs = calloc(nres, sizeof *r->attrs)))
    return -1;
  for (size_t i = 0; i < nres; i++) {
    r->nattrs = i + 1;
    r->attrs[i].is_int = res[i].is_int;
    r->attrs[i].num = res[i].num;
    if (!(r->attrs[i].key = strdup(res[i].key ? res[i].key : "")) ||
        (!res[i].is_int && !(r->attrs[i].str = strdup(res[i].str ? res[i].str : ""))))
      return -1;
  }
  if (!(r->scope_name = strdup(scope_name ? scope_name : "")) ||
      !(r->scope_version = strdup(scope_version ? scope_version : "")))
    return -1;
  return 0;
}

static int conv_samples(conv *c, ktab *samples, int64_t **values, size_t stride) {
  const Perftools__Profiles__Profile *p = c->p;
  size_t cap = 0;
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    size_t klen;
    if (sample_key(c, s, &klen) != 0)
      return -1;
    int64_t ix = ktab_intern(samples, c->kbuf, klen);
    if (ix < 0)
      return -1;
    size_t old = cap;
    if (grow(values, &cap, (size_t)ix + 1, stride * sizeof **values) != 0)
      return -1;
    if (cap > old)
      memset(*values + old * stride, 0, (cap - old) * stride * sizeof **values);
    for (size_t t = 0; t < stride && t < s->n_value; t++)
      (*values)[(size_t)ix * stride + t] += s->value[t];
    if (c->kbuf[1] != 0)
      c->o->st.links++;
  }
  return 0;
}

int pp_otlp_add(pp_otlp *o, const Perftools__Profiles__Profile *p, const pp_otlp_attr *res,
                size_t nres, const char *scope_name, const char *scope_version, char *why,
                size_t whylen) {
  conv c = {.o = o, .p = p};
  ktab *samples = NULL;
  int64_t *values = NULL;
  int rc = -1;
  if (add_resource(o, res, nres, scope_name, scope_version) != 0)
    goto oom;
  c.sx = malloc((p->n_string_table + 1) * sizeof *c.sx);
  c.map_ix = malloc((p->n_mapping + 1) * sizeof *c.map_ix);
  c.func_ix = malloc((p->n_function + 1) * sizeof *c.func_ix);
  c.loc_ix = malloc((p->n_location + 1) * sizeof *c.loc_ix);
  if (!c.sx || !c.map_ix || !c.func_ix || !c.loc_ix)
    goto oom;
  memset(c.sx, 0xff, (p->n_string_table + 1) * sizeof *c.sx);
  memset(c.map_ix, 0xff, (p->n_mapping + 1) * sizeof *c.map_ix);
  memset(c.func_ix, 0xff, (p->n_function + 1) * sizeof *c.func_ix);
  memset(c.loc_ix, 0xff, (p->n_location + 1) * sizeof *c.loc_ix);
  if (pp_idmap_init(&c.maps, p->n_mapping) != 0 || pp_idmap_init(&c.funcs, p->n_function) != 0 ||
      pp_idmap_init(&c.locs, p->n_location) != 0)
    goto oom;
  for (size_t i = 0; i < p->n_mapping; i++)
    c.maps.keys[i] = p->mapping[i]->id;
  for (size_t i = 0; i < p->n_function; i++)
    c.funcs.keys[i] = p->function[i]->id;
  for (size_t i = 0; i < p->n_location; i++)
    c.locs.keys[i] = p->location[i]->id;
  uint64_t bad;
  if (pp_idmap_index(&c.maps, &bad) != 0 || pp_idmap_index(&c.funcs, &bad) != 0 ||
      pp_idmap_index(&c.locs, &bad) != 0) {
    pp_say(why, whylen, "profile ids are not unique (validate it first)");
    goto out;
  }
  size_t stride = p->n_sample_type, dropped0 = o->st.dropped_labels;
  if (!(samples = malloc(sizeof *samples)) || ktab_init(samples) != 0) {
    free(samples);
    samples = NULL;
    goto oom;
  }
  if (conv_samples(&c, samples, &values, stride ? stride : 1) != 0)
    goto oom;
  int64_t ix[4] = {0, 0, 0, 0};
  if (p->period_type) {
    ix[2] = pstr_ix(&c, p->period_type->type);
    ix[3] = pstr_ix(&c, p->period_type->unit);
    if (ix[2] < 0 || ix[3] < 0)
      goto oom;
  }
  if (grow(&o->prof, &o->capprof, o->nprof + stride, sizeof *o->prof) != 0)
    goto oom;
  size_t dropped = o->st.dropped_labels - dropped0;
  for (size_t t = 0; t < stride; t++) {
    ix[0] = pstr_ix(&c, p->sample_type[t]->type);
    ix[1] = pstr_ix(&c, p->sample_type[t]->unit);
    if (ix[0] < 0 || ix[1] < 0)
      goto oom;
  }
  for (size_t t = 0; t < stride; t++) {
    profile *pr = &o->prof[o->nprof++];
    memset(pr, 0, sizeof *pr);
    pr->type = pstr_ix(&c, p->sample_type[t]->type); /* interned above: cannot fail */
    pr->unit = pstr_ix(&c, p->sample_type[t]->unit);
    if (p->period_type) {
      pr->has_period_type = true;
      pr->period_type = ix[2];
      pr->period_unit = ix[3];
    }
    pr->period = p->period;
    pr->time_ns = p->time_nanos;
    pr->duration_ns = p->duration_nanos;
    pr->samples = samples; /* owned by the first (col 0) */
    pr->values = values;
    pr->stride = stride;
    pr->col = t;
    pr->dropped = (uint32_t)(dropped > UINT32_MAX ? UINT32_MAX : dropped);
    o->st.profiles++;
    o->st.samples += samples->n;
  }
  if (stride == 0) {
    ktab_free(samples);
    free(samples);
    free(values);
  }
  samples = NULL;
  values = NULL;
  o->res[o->nres - 1].nprofiles = stride;
  o->st.resources++;
  rc = 0;
  goto out;
oom:
  pp_say(why, whylen, "out of memory converting the profile to OTLP");
out:
  if (samples) {
    ktab_free(samples);
    free(samples);
  }
  free(values);
  free(c.sx);
  free(c.map_ix);
  free(c.func_ix);
  free(c.loc_ix);
  pp_idmap_free(&c.maps);
  pp_idmap_free(&c.funcs);
  pp_idmap_free(&c.locs);
  free(c.kbuf);
  return rc;
}

/* ---- packing ---- */

/* Every allocation of one pack, freed together. */
typedef struct arena {
  void **v;
  size_t n, cap;
  bool oom;
} arena;

static void *arena_alloc(arena *a, size_t n, size_t size) {
  if (a->oom)
    return NULL;
  if (grow(&a->v, &a->cap, a->n + 1, sizeof *a->v) != 0) {
    a->oom = true;
    return NULL;
  }
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    a->oom = true;
    return NULL;
  }
  a->v[a->n++] = p;
  return p;
}

static void arena_free(arena *a) {
  for (size_t i = 0; i < a->n; i++)
    free(a->v[i]);
  free(a->v);
}

/* n messages of size sz and an array of pointers to them. */
static void **msg_array(arena *a, size_t n, size_t sz, void **items) {
  void **ptrs = arena_alloc(a, n, sizeof *ptrs);
  char *it = arena_alloc(a, n, sz);
  *items = it;
  if (!ptrs || !it)
    return NULL;
  for (size_t i = 0; i < n; i++)
    ptrs[i] = it + i * sz;
  return ptrs;
}

static int32_t *i32_array(arena *a, const int64_t *src, size_t n, size_t step) {
  int32_t *v = arena_alloc(a, n, sizeof *v);
  for (size_t i = 0; v && i < n; i++)
    v[i] = (int32_t)src[i * step];
  return v;
}

static void put_be64(uint8_t *out, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8)
    out[i] = (uint8_t)v;
}

static void fill_value(Pushprof__Otlp__AnyValue *v, bool is_int, int64_t num, char *str) {
  pushprof__otlp__any_value__init(v);
  if (is_int) {
    v->value_case = PUSHPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE;
    v->int_value = num;
  } else {
    v->value_case = PUSHPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
    v->string_value = str;
  }
}

static void pack_dictionary(pp_otlp *o, arena *a, Pushprof__Otlp__ProfilesDictionary *d) {
  size_t len;
  const int64_t *k;
  pushprof__otlp__profiles_dictionary__init(d);
  d->string_table = o->strings.s;
  d->n_string_table = o->strings.n;

  ktab *t = &o->t[T_ATTR];
  Pushprof__Otlp__KeyValueAndUnit *attrs;
  Pushprof__Otlp__AnyValue *vals = arena_alloc(a, t->n, sizeof *vals);
  d->attribute_table = (void *)msg_array(a, t->n, sizeof *attrs, (void **)&attrs);
  d->n_attribute_table = t->n;
  for (size_t i = 0; d->attribute_table && vals && i < t->n; i++) {
    pushprof__otlp__key_value_and_unit__init(&attrs[i]);
    if (i == 0)
      continue; /* the zero value: no key, no value */
    k = ktab_get(t, i, &len);
    attrs[i].key_strindex = (int32_t)k[0];
    fill_value(&vals[i], k[1] == ATTR_INT, k[2], k[1] == ATTR_INT ? NULL : o->strings.s[k[2]]);
    attrs[i].value = &vals[i];
    attrs[i].unit_strindex = (int32_t)k[3];
  }

  t = &o->t[T_MAP];
  Pushprof__Otlp__Mapping *maps;
  d->mapping_table = (void *)msg_array(a, t->n, sizeof *maps, (void **)&maps);
  d->n_mapping_table = t->n;
  for (size_t i = 0; d->mapping_table && i < t->n; i++) {
    pushprof__otlp__mapping__init(&maps[i]);
    k = ktab_get(t, i, &len);
    maps[i].memory_start = (uint64_t)k[0];
    maps[i].memory_limit = (uint64_t)k[1];
    maps[i].file_offset = (uint64_t)k[2];
    maps[i].filename_strindex = (int32_t)k[3];
    if (k[4]) {
      maps[i].attribute_indices = i32_array(a, &k[4], 1, 1);
      maps[i].n_attribute_indices = 1;
    }
  }

  t = &o->t[T_FUNC];
  Pushprof__Otlp__Function *funcs;
  d->function_table = (void *)msg_array(a, t->n, sizeof *funcs, (void **)&funcs);
  d->n_function_table = t->n;
  for (size_t i = 0; d->function_table && i < t->n; i++) {
    pushprof__otlp__function__init(&funcs[i]);
    k = ktab_get(t, i, &len);
    funcs[i].name_strindex = (int32_t)k[0];
    funcs[i].system_name_strindex = (int32_t)k[1];
    funcs[i].filename_strindex = (int32_t)k[2];
    funcs[i].start_line = k[3];
  }

  t = &o->t[T_LOC];
  Pushprof__Otlp__Location *locs;
  d->location_table = (void *)msg_array(a, t->n, sizeof *locs, (void **)&locs);
  d->n_location_table = t->n;
  for (size_t i = 0; d->location_table && i < t->n; i++) {
    pushprof__otlp__location__init(&locs[i]);
    k = ktab_get(t, i, &len);
    locs[i].mapping_index = (int32_t)k[0];
    locs[i].address = (uint64_t)k[1];
    size_t nl = (len - 2) / 2;
    if (!nl)
      continue;
    Pushprof__Otlp__Line *lines;
    locs[i].lines = (void *)msg_array(a, nl, sizeof *lines, (void **)&lines);
    locs[i].n_lines = locs[i].lines ? nl : 0;
    for (size_t j = 0; locs[i].lines && j < nl; j++) {
      pushprof__otlp__line__init(&lines[j]);
      lines[j].function_index = (int32_t)k[2 + 2 * j];
      lines[j].line = k[3 + 2 * j];
    }
  }

  t = &o->t[T_STACK];
  Pushprof__Otlp__Stack *stacks;
  d->stack_table = (void *)msg_array(a, t->n, sizeof *stacks, (void **)&stacks);
  d->n_stack_table = t->n;
  for (size_t i = 0; d->stack_table && i < t->n; i++) {
    pushprof__otlp__stack__init(&stacks[i]);
    k = ktab_get(t, i, &len);
    stacks[i].location_indices = len ? i32_array(a, k, len, 1) : NULL;
    stacks[i].n_location_indices = len;
  }

  t = &o->t[T_LINK];
  Pushprof__Otlp__Link *links;
  uint8_t *ids = arena_alloc(a, t->n, 24);
  d->link_table = (void *)msg_array(a, t->n, sizeof *links, (void **)&links);
  d->n_link_table = t->n;
  for (size_t i = 0; d->link_table && ids && i < t->n; i++) {
    pushprof__otlp__link__init(&links[i]);
    k = ktab_get(t, i, &len);
    uint8_t *id = ids + 24 * i; /* link 0 stays 16 + 8 zero bytes, as the spec asks */
    put_be64(id, (uint64_t)k[0]);
    put_be64(id + 8, (uint64_t)k[1]);
    put_be64(id + 16, (uint64_t)k[2]);
    links[i].trace_id = (ProtobufCBinaryData){16, id};
    links[i].span_id = (ProtobufCBinaryData){8, id + 16};
  }
}

static void pack_profile(const profile *pr, arena *a, Pushprof__Otlp__Profile *out) {
  pushprof__otlp__profile__init(out);
  Pushprof__Otlp__ValueType *vt = arena_alloc(a, 2, sizeof *vt);
  if (!vt)
    return;
  pushprof__otlp__value_type__init(&vt[0]);
  vt[0].type_strindex = (int32_t)pr->type;
  vt[0].unit_strindex = (int32_t)pr->unit;
  out->sample_type = &vt[0];
  if (pr->has_period_type) {
    pushprof__otlp__value_type__init(&vt[1]);
    vt[1].type_strindex = (int32_t)pr->period_type;
    vt[1].unit_strindex = (int32_t)pr->period_unit;
    out->period_type = &vt[1];
  }
  out->period = pr->period;
  out->time_unix_nano = pr->time_ns > 0 ? (uint64_t)pr->time_ns : 0;
  out->duration_nano = pr->duration_ns > 0 ? (uint64_t)pr->duration_ns : 0;
  out->dropped_attributes_count = pr->dropped;
  const ktab *t = pr->samples;
  Pushprof__Otlp__Sample *smp;
  int64_t *vals = arena_alloc(a, t->n, sizeof *vals);
  out->samples = (void *)msg_array(a, t->n, sizeof *smp, (void **)&smp);
  if (!out->samples || !vals)
    return;
  out->n_samples = t->n;
  /* A content hash of the samples: the same batch gets the same id on a retry. */
  uint64_t h = pp_hash_bytes(t->pool, t->plen * sizeof *t->pool, (uint64_t)pr->col + 1);
  for (size_t i = 0; i < t->n; i++) {
    size_t len;
    const int64_t *k = ktab_get(t, i, &len);
    pushprof__otlp__sample__init(&smp[i]);
    smp[i].stack_index = (int32_t)k[0];
    smp[i].link_index = (int32_t)k[1];
    if (len > 2) {
      smp[i].attribute_indices = i32_array(a, k + 2, len - 2, 1);
      smp[i].n_attribute_indices = len - 2;
    }
    vals[i] = pr->values[i * pr->stride + pr->col];
    smp[i].values = &vals[i];
    smp[i].n_values = 1;
    h = pp_hash_mix(h ^ (uint64_t)vals[i]) + 0x9e3779b97f4a7c15ULL;
  }
  uint8_t *id = arena_alloc(a, 16, 1);
  if (id) {
    put_be64(id, h | 1); /* never all zero */
    put_be64(id + 8, pp_hash_mix(h ^ (uint64_t)pr->time_ns));
    out->profile_id = (ProtobufCBinaryData){16, id};
  }
}

int pp_otlp_pack(pp_otlp *o, uint8_t **out, size_t *outlen) {
  arena a = {0};
  int rc = -1;
  Pushprof__Otlp__ExportProfilesServiceRequest req =
      PUSHPROF__OTLP__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
  Pushprof__Otlp__ProfilesDictionary dict;
  *out = NULL;
  *outlen = 0;
  pack_dictionary(o, &a, &dict);
  req.dictionary = &dict;
  Pushprof__Otlp__ResourceProfiles *rp;
  req.resource_profiles = (void *)msg_array(&a, o->nres, sizeof *rp, (void **)&rp);
  req.n_resource_profiles = o->nres;
  for (size_t i = 0; req.resource_profiles && i < o->nres; i++) {
    const resource *r = &o->res[i];
    pushprof__otlp__resource_profiles__init(&rp[i]);
    Pushprof__Otlp__Resource *res = arena_alloc(&a, 1, sizeof *res);
    Pushprof__Otlp__ScopeProfiles *sp = arena_alloc(&a, 1, sizeof *sp);
    Pushprof__Otlp__ScopeProfiles **spp = arena_alloc(&a, 1, sizeof *spp);
    Pushprof__Otlp__InstrumentationScope *scope = arena_alloc(&a, 1, sizeof *scope);
    Pushprof__Otlp__KeyValue *kv;
    Pushprof__Otlp__AnyValue *vals = arena_alloc(&a, r->nattrs, sizeof *vals);
    void **kvp = msg_array(&a, r->nattrs, sizeof *kv, (void **)&kv);
    Pushprof__Otlp__Profile *pr;
    void **prp = msg_array(&a, r->nprofiles, sizeof *pr, (void **)&pr);
    if (!res || !sp || !spp || !scope || !vals || !kvp || !prp)
      goto out;
    pushprof__otlp__resource__init(res);
    for (size_t j = 0; j < r->nattrs; j++) {
      pushprof__otlp__key_value__init(&kv[j]);
      kv[j].key = r->attrs[j].key;
      fill_value(&vals[j], r->attrs[j].is_int, r->attrs[j].num, r->attrs[j].str);
      kv[j].value = &vals[j];
    }
    res->attributes = (Pushprof__Otlp__KeyValue **)kvp;
    res->n_attributes = r->nattrs;
    pushprof__otlp__instrumentation_scope__init(scope);
    scope->name = r->scope_name;
    scope->version = r->scope_version;
    pushprof__otlp__scope_profiles__init(sp);
    sp->scope = scope;
    for (size_t j = 0; j < r->nprofiles; j++)
      pack_profile(&o->prof[r->first_profile + j], &a, &pr[j]);
    sp->profiles = (Pushprof__Otlp__Profile **)prp;
    sp->n_profiles = r->nprofiles;
    spp[0] = sp;
    rp[i].resource = res;
    rp[i].scope_profiles = spp;
    rp[i].n_scope_profiles = 1;
  }
  if (a.oom || (o->nres && !req.resource_profiles))
    goto out;
  size_t n = pushprof__otlp__export_profiles_service_request__get_packed_size(&req);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf)
    goto out;
  pushprof__otlp__export_profiles_service_request__pack(&req, buf);
  *out = buf;
  *outlen = n;
  rc = 0;
out:
  arena_free(&a);
  return rc;
}
