/* Profile -> call tree of names. Each location contributes its frames
 * (inlined functions first to last caller, as pprof lists them innermost
 * first); a sample's stack is read root to leaf and inserted into a trie
 * keyed by (parent node, name). */
#include "view_model.h"
#include "pp_hash.h"
#include "pp_vec.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *why, size_t whylen, const char *fmt, ...) {
  if (!why || !whylen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

/* ---- names ---- */
#define NAMES_BLOCK (1u << 16)

struct view_names {
  char **strs;
  uint32_t *lens;
  size_t count, cap;
  pp_htab index; /* by content */
  char *block;   /* arena for the copies */
  size_t block_used, block_cap;
  char **blocks;
  size_t nblocks;
};

view_names *view_names_new(void) {
  view_names *n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  if (pp_htab_init(&n->index, 1024) != 0) {
    view_names_free(n);
    return NULL;
  }
  return n;
}

void view_names_free(view_names *n) {
  if (!n)
    return;
  for (size_t i = 0; i < n->nblocks; i++)
    free(n->blocks[i]);
  free(n->blocks);
  free(n->strs);
  free(n->lens);
  pp_htab_free(&n->index);
  free(n);
}

typedef struct name_key {
  const view_names *n;
  const char *s;
  size_t len;
} name_key;

static bool name_eq(const void *ctx, uint32_t id) {
  const name_key *k = ctx;
  return k->n->lens[id] == k->len && memcmp(k->n->strs[id], k->s, k->len) == 0;
}

int64_t view_names_find(const view_names *n, const char *s, size_t len) {
  name_key k = {n, s, len};
  return pp_htab_find(&n->index, pp_hash_bytes(s, len, 0), name_eq, &k);
}

static char *names_copy(view_names *n, const char *s, size_t len) {
  if (len + 1 > n->block_cap - n->block_used) {
    size_t cap = len + 1 > NAMES_BLOCK ? len + 1 : NAMES_BLOCK;
    char **nb = realloc(n->blocks, (n->nblocks + 1) * sizeof *nb);
    if (!nb)
      return NULL;
    n->blocks = nb;
    n->block = malloc(cap);
    if (!n->block)
      return NULL;
    n->blocks[n->nblocks++] = n->block;
    n->block_cap = cap;
    n->block_used = 0;
  }
  char *c = n->block + n->block_used;
  memcpy(c, s, len);
  c[len] = 0;
  n->block_used += len + 1;
  return c;
}

int64_t view_names_intern(view_names *n, const char *s, size_t len) {
  uint64_t h = pp_hash_bytes(s, len, 0);
  name_key k = {n, s, len};
  int64_t found = pp_htab_find(&n->index, h, name_eq, &k);
  if (found >= 0)
    return found;
  if (len > UINT32_MAX || n->count >= UINT32_MAX - 1)
    return -1;
  size_t strs_cap = n->cap; /* n->cap: what both arrays hold */
  if (pp_vec_grow(&n->strs, &strs_cap, n->count + 1, sizeof *n->strs, 1024) != 0 ||
      pp_vec_grow(&n->lens, &n->cap, n->count + 1, sizeof *n->lens, 1024) != 0)
    return -1;
  char *c = names_copy(n, s, len);
  if (!c)
    return -1;
  uint32_t id = (uint32_t)n->count;
  n->strs[id] = c;
  n->lens[id] = (uint32_t)len;
  if (pp_htab_insert(&n->index, h, id) != 0)
    return -1;
  n->count++;
  return id;
}

const char *view_names_at(const view_names *n, uint32_t id) {
  return id < n->count ? n->strs[id] : "?";
}

size_t view_names_count(const view_names *n) {
  return n->count;
}

/* ---- names as they are printed ---- */
/* Length of the valid UTF-8 character at s (1..4), or 0 if invalid
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_char(const unsigned char *s, size_t len) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  size_t n;
  uint32_t cp, min;
  if ((c & 0xe0) == 0xc0)
    n = 2, cp = c & 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0)
    n = 3, cp = c & 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0)
    n = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  if (n > len)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
    return 0;
  return n;
}

size_t view_clean_name(const char *s, size_t len, char *out, size_t max_bytes) {
  static const char repl[] = "\xef\xbf\xbd";
  const unsigned char *u = (const unsigned char *)s;
  size_t o = 0, i = 0;
  while (i < len) {
    size_t n = utf8_char(u + i, len - i);
    const char *piece = s + i;
    size_t plen = n;
    if (n == 0 || (n == 1 && (u[i] < 0x20 || u[i] == 0x7f))) {
      piece = repl, plen = 3, n = 1;
    } else if (n == 1 && u[i] == ';') {
      piece = ":", plen = 1;
    }
    if (o + plen > max_bytes) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(out + o, piece, plen);
    o += plen;
    i += n;
  }
  out[o] = 0;
  return o;
}

/* ---- the tree ---- */
struct view_tree {
  view_names *names;
  view_node *nodes;
  size_t count, cap;
  pp_htab children; /* (parent, name) -> node */
  int64_t total;
  uint32_t max_depth;
  uint32_t *groups; /* colour group -> name id of its label */
  size_t ngroups;
  uint32_t value_type, value_unit; /* name ids */
  /* Collected, not yet in the tree (view_tree_collect .. view_tree_finish):
   * each distinct stack once, its frames root first, and its value. */
  struct frame_ref *sframes;
  size_t nsframes, sframes_cap;
  struct stack_sum *stacks;
  size_t nstacks, stacks_cap;
  bool finished;
  bool indexed;    /* children holds every node (view_tree_index) */
  bool main_named; /* groups[VIEW_GROUP_MAIN] names a profile's binary */
  int64_t grand;   /* sum of the values added, checked against 2^63 */
  /* --label filters of every view_tree_add, checked by view_tree_finish:
   * each must have been seen in some profile added. */
  const char *const *labels;
  size_t nlabels;
  bool *key_seen, *pair_seen;
};

static uint64_t child_hash(uint32_t parent, uint32_t name) {
  return pp_hash_mix(((uint64_t)parent << 32 | name) ^ 0x9e3779b97f4a7c15ULL);
}

static int64_t tree_add_node(view_tree *t, uint32_t parent, uint32_t name, uint32_t group) {
  if (pp_vec_grow(&t->nodes, &t->cap, t->count + 1, sizeof *t->nodes, 4096) != 0)
    return -1;
  if (t->count >= UINT32_MAX)
    return -1;
  uint32_t id = (uint32_t)t->count++;
  view_node *n = &t->nodes[id];
  memset(n, 0, sizeof *n);
  n->name = name;
  n->group = group;
  n->parent = parent;
  n->depth = id ? t->nodes[parent].depth + 1 : 0;
  if (n->depth > t->max_depth)
    t->max_depth = n->depth;
  if (id) {
    n->next_sibling = t->nodes[parent].first_child;
    t->nodes[parent].first_child = id;
  }
  return id;
}

typedef struct child_key {
  const view_tree *t;
  uint32_t parent, name;
} child_key;

static bool child_eq(const void *ctx, uint32_t id) {
  const child_key *k = ctx;
  return k->t->nodes[id].parent == k->parent && k->t->nodes[id].name == k->name;
}

uint32_t view_tree_child(const view_tree *t, uint32_t parent, uint32_t name) {
  if (!t->indexed) {
    for (uint32_t c = t->nodes[parent].first_child; c; c = t->nodes[c].next_sibling)
      if (t->nodes[c].name == name)
        return c;
    return 0;
  }
  child_key k = {t, parent, name};
  int64_t c = pp_htab_find(&t->children, child_hash(parent, name), child_eq, &k);
  return c > 0 ? (uint32_t)c : 0;
}

int view_tree_index(view_tree *t) {
  if (t->indexed)
    return 0;
  if (pp_htab_init(&t->children, t->count) != 0)
    return -1;
  for (size_t i = 1; i < t->count; i++)
    if (pp_htab_insert(&t->children, child_hash(t->nodes[i].parent, t->nodes[i].name),
                       (uint32_t)i) != 0) {
      pp_htab_free(&t->children);
      return -1;
    }
  t->indexed = true;
  return 0;
}

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table && p->string_table[ix] ? p->string_table[ix]
                                                                            : "";
}

int view_pick_value(const Perftools__Profiles__Profile *p, const char *type_name, bool prefer_count,
                    char *why, size_t whylen) {
  if (p->n_sample_type == 0) {
    say(why, whylen, "the profile has no sample types");
    return -1;
  }
  if (type_name) {
    for (size_t i = 0; i < p->n_sample_type; i++)
      if (strcmp(pstr(p, p->sample_type[i]->type), type_name) == 0)
        return (int)i;
    char have[512] = "";
    size_t off = 0;
    for (size_t i = 0; i < p->n_sample_type && off < sizeof have; i++)
      off += (size_t)snprintf(have + off, sizeof have - off, "%s%s", i ? ", " : "",
                              pstr(p, p->sample_type[i]->type));
    say(why, whylen, "no sample type \"%.100s\" (the profile has: %s)", type_name, have);
    return -1;
  }
  /* The producer's choice first, as pprof does: a heap profile's
   * inuse_space, not its first count type (alloc_objects). */
  if (p->default_sample_type) {
    const char *d = pstr(p, p->default_sample_type);
    for (size_t i = 0; i < p->n_sample_type; i++)
      if (strcmp(pstr(p, p->sample_type[i]->type), d) == 0)
        return (int)i;
  }
  if (prefer_count)
    for (size_t i = 0; i < p->n_sample_type; i++)
      if (strcmp(pstr(p, p->sample_type[i]->unit), "count") == 0)
        return (int)i;
  return (int)p->n_sample_type - 1;
}

/* One label filter, split once. */
typedef struct label_want {
  const char *key;
  size_t keylen;
  const char *value;
  bool key_seen, pair_seen;
} label_want;

static bool label_matches(const Perftools__Profiles__Profile *p,
                          const Perftools__Profiles__Sample *s, label_want *w) {
  bool hit = false;
  for (size_t i = 0; i < s->n_label && !hit; i++) {
    const Perftools__Profiles__Label *l = s->label[i];
    const char *k = pstr(p, l->key);
    if (strlen(k) != w->keylen || memcmp(k, w->key, w->keylen) != 0)
      continue;
    w->key_seen = true;
    if (l->str) {
      hit = strcmp(pstr(p, l->str), w->value) == 0;
    } else {
      char num[32];
      snprintf(num, sizeof num, "%" PRId64, l->num);
      hit = strcmp(num, w->value) == 0;
    }
  }
  if (hit)
    w->pair_seen = true;
  return hit;
}

/* Per location: its frames root-most first, as (name, group) pairs. */
typedef struct loc_frames {
  uint32_t off, n;
} loc_frames;

typedef struct frame_ref {
  uint32_t name, group;
} frame_ref;

typedef struct stack_sum {
  size_t off; /* into sframes */
  uint32_t n;
  int64_t value;
  int64_t off_cpu; /* the part of value from off-CPU profiles */
} stack_sum;

static int64_t group_for(view_tree *t, const char *label) {
  int64_t id = view_names_intern(t->names, label, strlen(label));
  if (id < 0)
    return -1;
  for (size_t g = 0; g < t->ngroups; g++)
    if (t->groups[g] == (uint32_t)id)
      return (int64_t)g;
  uint32_t *ng = realloc(t->groups, (t->ngroups + 1) * sizeof *ng);
  if (!ng)
    return -1;
  t->groups = ng;
  t->groups[t->ngroups] = (uint32_t)id;
  return (int64_t)t->ngroups++;
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b && b[1] ? b + 1 : path;
}

/* Frames of every location; *frames and *locs malloc'ed. 0 or -1. */
static int index_locations(view_tree *t, const Perftools__Profiles__Profile *p,
                           const pp_idmap *fun_pos, const pp_idmap *map_pos, loc_frames **locs_out,
                           frame_ref **frames_out, char *why, size_t whylen) {
  size_t nframes = 0;
  for (size_t i = 0; i < p->n_location; i++)
    nframes += p->location[i]->n_line ? p->location[i]->n_line : 1;
  loc_frames *locs = malloc((p->n_location + 1) * sizeof *locs);
  frame_ref *frames = malloc((nframes + 1) * sizeof *frames);
  int64_t *map_group = malloc((p->n_mapping + 1) * sizeof *map_group);
  if (!locs || !frames || !map_group)
    goto oom;
  for (size_t i = 0; i < p->n_mapping; i++) {
    const char *file = pstr(p, p->mapping[i]->filename);
    int64_t g = i == 0 ? VIEW_GROUP_MAIN : group_for(t, *file ? base_name(file) : "[anonymous]");
    if (g < 0)
      goto oom;
    map_group[i] = g;
  }
  size_t off = 0;
  char addr[256];
  for (size_t i = 0; i < p->n_location; i++) {
    const Perftools__Profiles__Location *l = p->location[i];
    uint32_t group = VIEW_GROUP_MAIN;
    int64_t mfile = -1;
    if (l->mapping_id) {
      int64_t mp = pp_idmap_find(map_pos, l->mapping_id);
      mfile = mp;
      if (mp < 0) {
        say(why, whylen, "location %" PRIu64 " refers to missing mapping %" PRIu64, l->id,
            l->mapping_id);
        goto fail;
      }
      group = (uint32_t)map_group[mp];
    }
    locs[i].off = (uint32_t)off;
    if (l->n_line == 0) {
      /* as pprof names it: the mapping's file, else the address */
      const char *file = mfile >= 0 ? pstr(p, p->mapping[mfile]->filename) : "";
      int n = *file ? snprintf(addr, sizeof addr, "[%.*s]", (int)sizeof addr - 3, base_name(file))
                    : snprintf(addr, sizeof addr, "0x%" PRIx64, l->address);
      if (n >= (int)sizeof addr)
        n = (int)sizeof addr - 1;
      int64_t id = view_names_intern(t->names, addr, (size_t)n);
      if (id < 0)
        goto oom;
      frames[off++] = (frame_ref){(uint32_t)id, VIEW_GROUP_UNNAMED};
    }
    for (size_t j = l->n_line; j-- > 0;) {
      int64_t fp = pp_idmap_find(fun_pos, l->line[j]->function_id);
      if (fp < 0) {
        say(why, whylen, "location %" PRIu64 " refers to missing function %" PRIu64, l->id,
            l->line[j]->function_id);
        goto fail;
      }
      const Perftools__Profiles__Function *f = p->function[fp];
      const char *nm = pstr(p, f->name);
      if (!*nm)
        nm = pstr(p, f->system_name);
      bool unnamed = !*nm;
      if (unnamed) {
        snprintf(addr, sizeof addr, "0x%" PRIx64, l->address);
        nm = addr;
      }
      int64_t id = view_names_intern(t->names, nm, strlen(nm));
      if (id < 0)
        goto oom;
      frames[off++] = (frame_ref){(uint32_t)id, unnamed ? VIEW_GROUP_UNNAMED : group};
    }
    locs[i].n = (uint32_t)(off - locs[i].off);
  }
  free(map_group);
  *locs_out = locs;
  *frames_out = frames;
  return 0;
oom:
  say(why, whylen, "out of memory reading the profile");
fail:
  free(locs);
  free(frames);
  free(map_group);
  return -1;
}

/* id -> position for a repeated message; the profile is validated, so a
 * zero or repeated id is not expected (and refused). 0 or -1. */
static int index_ids(pp_idmap *m, size_t n,
                     uint64_t (*id)(const Perftools__Profiles__Profile *, size_t),
                     const Perftools__Profiles__Profile *p) {
  if (pp_idmap_init(m, n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    m->keys[i] = id(p, i);
  uint64_t bad;
  return pp_idmap_index(m, &bad) == 0 ? 0 : -1;
}
static uint64_t fun_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->function[i]->id;
}
static uint64_t map_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->mapping[i]->id;
}
static uint64_t loc_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->location[i]->id;
}

static bool name_matches(const regex_t *re, const char *name) {
  return regexec(re, name, 0, NULL, 0) == 0;
}

/* Per name: bit 1 = focus matches, bit 2 = ignore matches, bit 4 = computed. */
static uint8_t name_flags(view_tree *t, uint8_t **flags, size_t *nflags, uint32_t name,
                          const view_filter *f) {
  if (name >= *nflags) {
    size_t n = view_names_count(t->names) + 1024;
    uint8_t *nf = realloc(*flags, n);
    if (!nf)
      return 0xff;
    memset(nf + *nflags, 0, n - *nflags);
    *flags = nf;
    *nflags = n;
  }
  uint8_t v = (*flags)[name];
  if (!(v & 4)) {
    const char *s = view_names_at(t->names, name);
    v = 4 | (f->focus && name_matches(f->focus, s) ? 1 : 0) |
        (f->ignore && name_matches(f->ignore, s) ? 2 : 0);
    (*flags)[name] = v;
  }
  return v;
}

#define FILTERED_OUT UINT32_MAX

/* A distinct location sequence and the collected stack it became. */
typedef struct stack_memo {
  const uint64_t *ids;
  size_t n;
  uint32_t stack; /* FILTERED_OUT: --focus/--ignore drop it */
} stack_memo;

typedef struct memo_key {
  const stack_memo *memo;
  const uint64_t *ids;
  size_t n;
} memo_key;

static bool memo_eq(const void *ctx, uint32_t idx) {
  const memo_key *k = ctx;
  return k->memo[idx].n == k->n &&
         (k->n == 0 || memcmp(k->memo[idx].ids, k->ids, k->n * sizeof *k->ids) == 0);
}

/* Collects s's stack (root first) as a new distinct stack: its index,
 * FILTERED_OUT, -1 on ENOMEM, -2 with why on a bad reference. */
static int64_t collect_stack(view_tree *t, const Perftools__Profiles__Sample *s,
                             const pp_idmap *loc_pos, const loc_frames *locs,
                             const frame_ref *frames, const view_filter *f, uint8_t **flags,
                             size_t *nflags, char *why, size_t whylen) {
  size_t depth = 0;
  for (size_t j = 0; j < s->n_location_id; j++) {
    int64_t lp = pp_idmap_find(loc_pos, s->location_id[j]);
    if (lp < 0) {
      say(why, whylen, "a sample refers to missing location %" PRIu64, s->location_id[j]);
      return -2;
    }
    depth += locs[lp].n;
  }
  if (depth > UINT32_MAX)
    return -1;
  if (depth == 0)
    return FILTERED_OUT; /* a sample without frames has no place in a flame graph */
  if (t->nsframes + depth > t->sframes_cap) {
    size_t cap = t->sframes_cap ? t->sframes_cap : 4096;
    while (cap < t->nsframes + depth)
      cap = cap / 2 * 3;
    frame_ref *ns = realloc(t->sframes, cap * sizeof *ns);
    if (!ns)
      return -1;
    t->sframes = ns;
    t->sframes_cap = cap;
  }
  if (pp_vec_grow(&t->stacks, &t->stacks_cap, t->nstacks + 1, sizeof *t->stacks, 1024) != 0)
    return -1;
  frame_ref *out = t->sframes + t->nsframes;
  size_t d = 0;
  bool focused = f->focus == NULL, ignored = false;
  for (size_t j = s->n_location_id; j-- > 0;) {
    const loc_frames *lf = &locs[pp_idmap_find(loc_pos, s->location_id[j])];
    for (uint32_t k = 0; k < lf->n; k++) {
      frame_ref fr = frames[lf->off + k];
      out[d++] = fr;
      if (f->focus || f->ignore) {
        uint8_t fl = name_flags(t, flags, nflags, fr.name, f);
        if (fl == 0xff)
          return -1;
        focused |= (fl & 1) != 0;
        ignored |= (fl & 2) != 0;
      }
    }
  }
  if (!focused || ignored)
    return FILTERED_OUT;
  t->stacks[t->nstacks] = (stack_sum){t->nsframes, (uint32_t)d, 0, 0};
  t->nsframes += d;
  return (int64_t)t->nstacks++;
}

static int cmp_child_names(const void *a, const void *b, void *ctx);

view_tree *view_tree_new(view_names *names, const char *type, const char *unit) {
  view_tree *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->names = names;
  int64_t vti = view_names_intern(names, type, strlen(type));
  int64_t vui = view_names_intern(names, unit, strlen(unit));
  int64_t root = view_names_intern(names, "all", 3);
  if (vti < 0 || vui < 0 || root < 0 || group_for(t, "main binary") != VIEW_GROUP_MAIN ||
      group_for(t, "no symbol") != VIEW_GROUP_UNNAMED ||
      tree_add_node(t, 0, (uint32_t)root, VIEW_GROUP_MAIN) != 0) {
    view_tree_free(t);
    return NULL;
  }
  t->value_type = (uint32_t)vti;
  t->value_unit = (uint32_t)vui;
  return t;
}

view_tree *view_tree_collect(const Perftools__Profiles__Profile *p, size_t vix,
                             const view_filter *f, view_names *names, char *why, size_t whylen) {
  if (vix >= p->n_sample_type) {
    say(why, whylen, "no sample type %zu", vix);
    return NULL;
  }
  view_tree *t =
      view_tree_new(names, pstr(p, p->sample_type[vix]->type), pstr(p, p->sample_type[vix]->unit));
  if (!t) {
    say(why, whylen, "out of memory reading the profile");
    return NULL;
  }
  if (view_tree_add(t, p, vix, f, false, why, whylen) != 0) {
    view_tree_free(t);
    return NULL;
  }
  return t;
}

/* Remembers f's labels for view_tree_finish; the same filter on every add. */
static int want_labels(view_tree *t, const view_filter *f, char *why, size_t whylen) {
  if (t->key_seen || !f->nlabels)
    return 0;
  t->key_seen = calloc(f->nlabels, sizeof *t->key_seen);
  t->pair_seen = calloc(f->nlabels, sizeof *t->pair_seen);
  if (!t->key_seen || !t->pair_seen) {
    say(why, whylen, "out of memory reading the profile");
    return -1;
  }
  t->labels = f->labels;
  t->nlabels = f->nlabels;
  return 0;
}

int view_tree_add(view_tree *t, const Perftools__Profiles__Profile *p, size_t vix,
                  const view_filter *f, bool off_cpu, char *why, size_t whylen) {
  view_filter nofilter = {0};
  if (!f)
    f = &nofilter;
  pp_idmap fun_pos = {0}, map_pos = {0}, loc_pos = {0};
  loc_frames *locs = NULL;
  frame_ref *frames = NULL;
  uint8_t *flags = NULL;
  size_t nflags = 0;
  label_want *wants = NULL;
  stack_memo *memo = NULL;
  size_t nmemo = 0, memo_cap = 0;
  pp_htab memo_ix = {0};
  int rc = -1;
  if (t->finished) {
    say(why, whylen, "the call tree is already built");
    return -1;
  }
  if (vix >= p->n_sample_type) {
    say(why, whylen, "no sample type %zu", vix);
    return -1;
  }
  if (pp_htab_init(&memo_ix, p->n_sample / 2 + 16) != 0)
    goto oom;
  if (!t->main_named && p->n_mapping) {
    const char *main_file = pstr(p, p->mapping[0]->filename);
    const char *label = *main_file ? base_name(main_file) : "main binary";
    int64_t id = view_names_intern(t->names, label, strlen(label));
    if (id < 0)
      goto oom;
    t->groups[VIEW_GROUP_MAIN] = (uint32_t)id;
    t->main_named = true;
  }
  if (index_ids(&fun_pos, p->n_function, fun_id, p) != 0 ||
      index_ids(&map_pos, p->n_mapping, map_id, p) != 0 ||
      index_ids(&loc_pos, p->n_location, loc_id, p) != 0)
    goto oom;
  if (index_locations(t, p, &fun_pos, &map_pos, &locs, &frames, why, whylen) != 0)
    goto out;
  if (f->nlabels) {
    if (want_labels(t, f, why, whylen) != 0)
      goto out;
    wants = calloc(f->nlabels, sizeof *wants);
    if (!wants)
      goto oom;
    for (size_t i = 0; i < f->nlabels; i++) {
      const char *eq = strchr(f->labels[i], '=');
      if (!eq || eq == f->labels[i]) {
        say(why, whylen, "--label \"%.200s\": expected KEY=VALUE", f->labels[i]);
        goto out;
      }
      wants[i] = (label_want){f->labels[i], (size_t)(eq - f->labels[i]), eq + 1, false, false};
    }
  }

  for (size_t si = 0; si < p->n_sample; si++) {
    const Perftools__Profiles__Sample *s = p->sample[si];
    if (vix >= s->n_value)
      continue;
    int64_t v = s->value[vix];
    bool keep = true;
    for (size_t i = 0; i < f->nlabels; i++)
      if (!label_matches(p, s, &wants[i]))
        keep = false;
    if (!keep || v <= 0)
      continue;
    /* Samples differing only in labels share a stack: each distinct
     * location sequence is walked (and filtered) once. */
    uint64_t h =
        pp_hash_bytes(s->location_id, s->n_location_id * sizeof *s->location_id, s->n_location_id);
    memo_key mk = {memo, s->location_id, s->n_location_id};
    int64_t seen = pp_htab_find(&memo_ix, h, memo_eq, &mk);
    uint32_t stack;
    if (seen >= 0) {
      stack = memo[seen].stack;
    } else {
      int64_t l = collect_stack(t, s, &loc_pos, locs, frames, f, &flags, &nflags, why, whylen);
      if (l == -2)
        goto out;
      if (l < 0)
        goto oom;
      stack = (uint32_t)l;
      if (pp_vec_grow(&memo, &memo_cap, nmemo + 1, sizeof *memo, 4096) != 0)
        goto oom;
      memo[nmemo] = (stack_memo){s->location_id, s->n_location_id, stack};
      if (pp_htab_insert(&memo_ix, h, (uint32_t)nmemo) != 0)
        goto oom;
      nmemo++;
    }
    if (stack != FILTERED_OUT) {
      /* all values are > 0 here: if the grand sum fits, every subtotal does */
      if (__builtin_add_overflow(t->grand, v, &t->grand)) {
        say(why, whylen, "the sample values add up past 2^63");
        goto out;
      }
      t->stacks[stack].value += v;
      if (off_cpu)
        t->stacks[stack].off_cpu += v;
    }
  }
  for (size_t i = 0; i < f->nlabels && i < t->nlabels; i++) {
    t->key_seen[i] |= wants[i].key_seen;
    t->pair_seen[i] |= wants[i].pair_seen;
  }
  rc = 0;
  goto out;
oom:
  say(why, whylen, "out of memory reading the profile");
out:
  pp_idmap_free(&fun_pos);
  pp_idmap_free(&map_pos);
  pp_idmap_free(&loc_pos);
  free(locs);
  free(frames);
  free(flags);
  free(wants);
  free(memo);
  pp_htab_free(&memo_ix);
  return rc;
}

/* Orders distinct stacks by their name ids, frame by frame (a prefix first). */
static int cmp_stacks(const void *a, const void *b, void *ctx) {
  const view_tree *t = ctx;
  const stack_sum *x = &t->stacks[*(const uint32_t *)a], *y = &t->stacks[*(const uint32_t *)b];
  uint32_t n = x->n < y->n ? x->n : y->n;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t p = t->sframes[x->off + k].name, q = t->sframes[y->off + k].name;
    if (p != q)
      return p < q ? -1 : 1;
  }
  return x->n < y->n ? -1 : x->n > y->n;
}

int view_tree_finish(view_tree *t, char *why, size_t whylen) {
  if (t->finished)
    return 0;
  for (size_t i = 0; i < t->nlabels; i++) {
    const char *eq = strchr(t->labels[i], '=');
    size_t keylen = (size_t)(eq - t->labels[i]);
    if (!t->key_seen[i]) {
      say(why, whylen, "no sample has a label \"%.*s\"", (int)(keylen > 200 ? 200 : keylen),
          t->labels[i]);
      return -1;
    }
    if (!t->pair_seen[i]) {
      say(why, whylen, "no sample has the label %.300s", t->labels[i]);
      return -1;
    }
  }
  /* The distinct stacks in name order: each shares its prefix with the one
   * before it, so the tree grows along one path, with no lookups. */
  uint32_t *order = malloc((t->nstacks + 1) * sizeof *order);
  size_t maxn = 1;
  for (size_t i = 0; i < t->nstacks; i++)
    if (t->stacks[i].n > maxn)
      maxn = t->stacks[i].n;
  uint32_t *path = malloc(maxn * sizeof *path);
  if (!order || !path) {
    free(order);
    free(path);
    goto oom;
  }
  for (size_t i = 0; i < t->nstacks; i++)
    order[i] = (uint32_t)i;
  qsort_r(order, t->nstacks, sizeof *order, cmp_stacks, t);
  /* At most one node per collected frame: reserved at once (pages are
   * touched only as nodes are made), so the array is never copied. */
  if (t->nsframes + 1 > t->cap) {
    view_node *nn = realloc(t->nodes, (t->nsframes + 1) * sizeof *nn);
    if (!nn) {
      free(order);
      free(path);
      goto oom;
    }
    t->nodes = nn;
    t->cap = t->nsframes + 1;
  }
  const stack_sum *prev = NULL;
  for (size_t i = 0; i < t->nstacks; i++) {
    const stack_sum *st = &t->stacks[order[i]];
    if (st->value <= 0)
      continue;
    uint32_t common = 0;
    while (prev && common < prev->n && common < st->n &&
           t->sframes[prev->off + common].name == t->sframes[st->off + common].name)
      common++;
    uint32_t node = common ? path[common - 1] : 0;
    for (uint32_t k = common; k < st->n; k++) {
      frame_ref fr = t->sframes[st->off + k];
      int64_t nc = tree_add_node(t, node, fr.name, fr.group);
      if (nc < 0) {
        free(order);
        free(path);
        goto oom;
      }
      node = path[k] = (uint32_t)nc;
    }
    t->nodes[node].self += st->value;
    t->nodes[node].off_cpu_self += st->off_cpu;
    prev = st;
  }
  free(order);
  free(path);
  free(t->sframes);
  free(t->stacks);
  t->sframes = NULL;
  t->stacks = NULL;
  t->nsframes = t->sframes_cap = t->nstacks = t->stacks_cap = 0;
  t->finished = true;
  /* totals bottom-up: a child's id is always above its parent's */
  for (size_t i = t->count; i-- > 0;) {
    t->nodes[i].total += t->nodes[i].self;
    t->nodes[i].off_cpu += t->nodes[i].off_cpu_self;
    if (i) {
      t->nodes[t->nodes[i].parent].total += t->nodes[i].total;
      t->nodes[t->nodes[i].parent].off_cpu += t->nodes[i].off_cpu;
    }
  }
  t->total = t->nodes[0].total;
  view_node *fit = realloc(t->nodes, t->count * sizeof *fit);
  if (fit) { /* else keep the larger block */
    t->nodes = fit;
    t->cap = t->count;
  }
  /* Siblings in name order: stable pictures and sorted folded output. */
  uint32_t *kids = NULL;
  size_t kcap = 0;
  for (size_t i = 0; i < t->count; i++) {
    size_t n = 0;
    for (uint32_t c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
      n++;
    if (n < 2)
      continue;
    if (n > kcap) {
      uint32_t *nk = realloc(kids, n * sizeof *nk);
      if (!nk) {
        free(kids);
        goto oom;
      }
      kids = nk;
      kcap = n;
    }
    n = 0;
    for (uint32_t c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
      kids[n++] = c;
    qsort_r(kids, n, sizeof *kids, cmp_child_names, t);
    t->nodes[i].first_child = kids[0];
    for (size_t k = 0; k + 1 < n; k++)
      t->nodes[kids[k]].next_sibling = kids[k + 1];
    t->nodes[kids[n - 1]].next_sibling = 0;
  }
  free(kids);
  return 0;
oom:
  say(why, whylen, "out of memory building the call tree");
  return -1;
}

view_tree *view_tree_build(const Perftools__Profiles__Profile *p, size_t vix, const view_filter *f,
                           view_names *names, char *why, size_t whylen) {
  view_tree *t = view_tree_collect(p, vix, f, names, why, whylen);
  if (t && view_tree_finish(t, why, whylen) != 0) {
    view_tree_free(t);
    return NULL;
  }
  return t;
}

static int cmp_child_names(const void *a, const void *b, void *ctx) {
  const view_tree *t = ctx;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return strcmp(view_names_at(t->names, t->nodes[x].name),
                view_names_at(t->names, t->nodes[y].name));
}

void view_tree_free(view_tree *t) {
  if (!t)
    return;
  free(t->nodes);
  free(t->groups);
  free(t->sframes);
  free(t->stacks);
  free(t->key_seen);
  free(t->pair_seen);
  pp_htab_free(&t->children);
  free(t);
}

const view_node *view_tree_nodes(const view_tree *t, size_t *count) {
  *count = t->count;
  return t->nodes;
}
int64_t view_tree_total(const view_tree *t) {
  return t->total;
}
int64_t view_tree_unnamed_self(const view_tree *t) {
  int64_t sum = 0;
  for (size_t i = 1; i < t->count; i++)
    if (t->nodes[i].group == VIEW_GROUP_UNNAMED)
      sum += t->nodes[i].self;
  return sum;
}
uint32_t view_tree_max_depth(const view_tree *t) {
  return t->max_depth;
}
const view_names *view_tree_names(const view_tree *t) {
  return t->names;
}
size_t view_tree_group_count(const view_tree *t) {
  return t->ngroups;
}
const char *view_tree_group_name(const view_tree *t, uint32_t group) {
  return group < t->ngroups ? view_names_at(t->names, t->groups[group]) : "?";
}
const char *view_tree_value_type(const view_tree *t) {
  return view_names_at(t->names, t->value_type);
}
const char *view_tree_value_unit(const view_tree *t) {
  return view_names_at(t->names, t->value_unit);
}

typedef struct top_ctx {
  const view_tree *t;
  bool by_cum;
} top_ctx;

static int cmp_top(const void *a, const void *b, void *ctx) {
  const top_ctx *c = ctx;
  const view_top_row *x = a, *y = b;
  int64_t xa = c->by_cum ? x->cum : x->flat, ya = c->by_cum ? y->cum : y->flat;
  int64_t xb = c->by_cum ? x->flat : x->cum, yb = c->by_cum ? y->flat : y->cum;
  if (xa != ya)
    return xa > ya ? -1 : 1;
  if (xb != yb)
    return xb > yb ? -1 : 1;
  return strcmp(view_names_at(c->t->names, x->name), view_names_at(c->t->names, y->name));
}

int view_tree_top(const view_tree *t, bool by_cum, view_top_row **rows_out, size_t *nrows_out) {
  size_t nn = view_names_count(t->names);
  int64_t *flat = calloc(nn + 1, sizeof *flat), *cum = calloc(nn + 1, sizeof *cum);
  int64_t *flat_off = calloc(nn + 1, sizeof *flat_off), *cum_off = calloc(nn + 1, sizeof *cum_off);
  uint32_t *active = calloc(nn + 1, sizeof *active); /* ancestors on the path with this name */
  uint32_t *stack = malloc((t->max_depth + 2) * sizeof *stack);
  view_top_row *rows = NULL;
  int rc = -1;
  if (!flat || !cum || !flat_off || !cum_off || !active || !stack)
    goto out;
  /* Iterative DFS below the root; a node counts in cum only if no ancestor
   * has its name (recursion counts once per sample, as in pprof). */
  size_t sp = 0;
  uint32_t n = t->nodes[0].first_child;
  while (n) {
    const view_node *v = &t->nodes[n];
    flat[v->name] += v->self;
    flat_off[v->name] += v->off_cpu_self;
    if (active[v->name] == 0) {
      cum[v->name] += v->total;
      cum_off[v->name] += v->off_cpu;
    }
    active[v->name]++;
    stack[sp++] = n;
    if (v->first_child) {
      n = v->first_child;
      continue;
    }
    while (sp) {
      uint32_t done = stack[--sp];
      active[t->nodes[done].name]--;
      if (t->nodes[done].next_sibling) {
        n = t->nodes[done].next_sibling;
        break;
      }
      n = 0;
    }
  }
  size_t nrows = 0;
  for (size_t i = 0; i < nn; i++)
    if (cum[i] || flat[i])
      nrows++;
  rows = malloc((nrows + 1) * sizeof *rows);
  if (!rows)
    goto out;
  nrows = 0;
  for (size_t i = 0; i < nn; i++)
    if (cum[i] || flat[i])
      rows[nrows++] = (view_top_row){(uint32_t)i, flat[i], cum[i], flat_off[i], cum_off[i]};
  top_ctx c = {t, by_cum};
  qsort_r(rows, nrows, sizeof *rows, cmp_top, &c);
  *rows_out = rows;
  *nrows_out = nrows;
  rows = NULL;
  rc = 0;
out:
  free(flat);
  free(cum);
  free(flat_off);
  free(cum_off);
  free(active);
  free(stack);
  free(rows);
  return rc;
}
