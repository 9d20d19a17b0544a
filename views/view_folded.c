/* FlameGraph's folded stacks, and difffolded.pl's two-column form. */
#include "view_folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NO_NODE UINT32_MAX

/* Counterpart in other of every node of t (by path), NO_NODE if none. */
static uint32_t *counterparts(const view_tree *t, const view_tree *other) {
  size_t count = 0;
  const view_node *nodes = view_tree_nodes(t, &count);
  uint32_t *m = malloc((count + 1) * sizeof *m);
  if (!m)
    return NULL;
  m[0] = 0;
  for (size_t i = 1; i < count; i++) {
    uint32_t p = m[nodes[i].parent];
    m[i] = p == NO_NODE ? NO_NODE : view_tree_child(other, p, nodes[i].name);
    if (m[i] == 0)
      m[i] = NO_NODE;
  }
  return m;
}

/* Calls emit for every node of t with self > 0 (skip(i) false), with its
 * stack "root;...;leaf" (cleaned names, the synthetic root left out), in
 * depth-first name order. */
typedef int (*emit_fn)(FILE *f, const char *stack, size_t len, uint32_t node, void *ctx);

static int walk(FILE *f, const view_tree *t, emit_fn emit, void *ctx) {
  size_t count = 0;
  const view_node *nodes = view_tree_nodes(t, &count);
  const view_names *names = view_tree_names(t);
  uint32_t depth = view_tree_max_depth(t);
  size_t *lens = malloc((depth + 2) * sizeof *lens);
  uint32_t *stack = malloc((depth + 2) * sizeof *stack);
  size_t cap = 4096, cleancap = 0;
  char *path = malloc(cap), *clean = NULL;
  int rc = -1;
  if (!lens || !stack || !path)
    goto out;
  size_t sp = 0;
  uint32_t n = nodes[0].first_child;
  lens[0] = 0;
  while (n) {
    const view_node *v = &nodes[n];
    const char *raw = view_names_at(names, v->name);
    size_t rl = strlen(raw);
    if (rl * 3 + 8 > cleancap) {
      cleancap = rl * 3 + 8;
      char *nc = realloc(clean, cleancap);
      if (!nc)
        goto out;
      clean = nc;
    }
    size_t cl = view_clean_name(raw, rl, clean, rl * 3);
    size_t base = lens[sp];
    if (base + cl + 2 > cap) {
      while (base + cl + 2 > cap)
        cap *= 2;
      char *np = realloc(path, cap);
      if (!np)
        goto out;
      path = np;
    }
    if (sp)
      path[base++] = ';';
    memcpy(path + base, clean, cl);
    base += cl;
    path[base] = 0;
    stack[sp++] = n;
    lens[sp] = base;
    if (v->self > 0 && emit(f, path, base, n, ctx) != 0)
      goto out;
    if (v->first_child) {
      n = v->first_child;
      continue;
    }
    n = 0;
    while (sp) {
      uint32_t done = stack[--sp];
      if (nodes[done].next_sibling) {
        n = nodes[done].next_sibling;
        break;
      }
    }
  }
  rc = ferror(f) ? -1 : 0;
out:
  free(lens);
  free(stack);
  free(path);
  free(clean);
  return rc;
}

typedef struct fold_ctx {
  const view_node *nodes;
  const view_node *other_nodes;
  const uint32_t *other_of;
  bool base_pass; /* walking BASE: print only stacks NEW lacks */
} fold_ctx;

static int emit_plain(FILE *f, const char *stack, size_t len, uint32_t node, void *ctx) {
  const fold_ctx *c = ctx;
  if (fwrite(stack, 1, len, f) != len || fprintf(f, " %" PRId64 "\n", c->nodes[node].self) < 0)
    return -1;
  return 0;
}

static int emit_diff(FILE *f, const char *stack, size_t len, uint32_t node, void *ctx) {
  const fold_ctx *c = ctx;
  uint32_t o = c->other_of[node];
  int64_t other = o == NO_NODE ? 0 : c->other_nodes[o].self;
  int64_t self = c->nodes[node].self;
  if (c->base_pass && other > 0)
    return 0; /* printed by the NEW pass */
  if (fwrite(stack, 1, len, f) != len)
    return -1;
  if (fprintf(f, " %" PRId64 " %" PRId64 "\n", c->base_pass ? self : other,
              c->base_pass ? other : self) < 0)
    return -1;
  return 0;
}

int view_folded_write(FILE *f, const view_tree *t) {
  size_t count;
  fold_ctx c = {view_tree_nodes(t, &count), NULL, NULL, false};
  return walk(f, t, emit_plain, &c);
}

int view_folded_diff_write(FILE *f, const view_tree *base, const view_tree *t) {
  size_t count;
  uint32_t *new_to_base = counterparts(t, base), *base_to_new = counterparts(base, t);
  int rc = -1;
  if (!new_to_base || !base_to_new)
    goto out;
  fold_ctx c = {view_tree_nodes(t, &count), view_tree_nodes(base, &count), new_to_base, false};
  if (walk(f, t, emit_diff, &c) != 0)
    goto out;
  fold_ctx cb = {view_tree_nodes(base, &count), view_tree_nodes(t, &count), base_to_new, true};
  rc = walk(f, base, emit_diff, &cb);
out:
  free(new_to_base);
  free(base_to_new);
  return rc;
}
