/* The reading side of `pushprof top/folded/flame/diff`: a profile (already
 * merged, see view_input.h) becomes a call tree of frame names with one
 * value per node, after the sample filters (--label, --focus, --ignore).
 * Names live in a view_names interner that several trees may share, so a
 * differential graph can look a path of one tree up in another.
 * Not thread-safe; one owner at a time. Nothing here is async-signal-safe. */
#ifndef VIEW_MODEL_H
#define VIEW_MODEL_H
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

/* Interned strings: ids 0..count-1, each NUL-terminated, owned by the table. */
typedef struct view_names view_names;
view_names *view_names_new(void); /* NULL on ENOMEM */
void view_names_free(view_names *n);
/* Returns the id of s (len bytes, copied on first sight), or -1 on ENOMEM. */
int64_t view_names_intern(view_names *n, const char *s, size_t len);
/* The id of s, or -1 if it was never interned. */
int64_t view_names_find(const view_names *n, const char *s, size_t len);
const char *view_names_at(const view_names *n, uint32_t id);
size_t view_names_count(const view_names *n);

/* Colour groups: the main binary (the profile's first mapping), each other
 * mapping by file name, and frames without a function name. */
#define VIEW_GROUP_MAIN 0u
#define VIEW_GROUP_UNNAMED 1u

/* A sample filter. Labels: every KEY=VALUE must be on the sample (string
 * labels, or numeric ones written in decimal). focus: keep samples with a
 * frame matching; ignore: drop samples with a frame matching. */
typedef struct view_filter {
  const char *const *labels; /* "KEY=VALUE" strings */
  size_t nlabels;
  const regex_t *focus; /* may be NULL */
  const regex_t *ignore;
} view_filter;

typedef struct view_node {
  uint32_t name;         /* view_names id */
  uint32_t group;        /* colour group id (view_tree_group_name) */
  uint32_t parent;       /* root's parent is itself (0) */
  uint32_t depth;        /* root is 0 */
  uint32_t first_child;  /* 0 = none (the root is never a child) */
  uint32_t next_sibling; /* 0 = none; siblings sorted by name after view_tree_finish */
  int64_t total;         /* value of every sample through this node */
  int64_t self;          /* value of the samples ending here */
  /* The parts of total and self added as off-CPU time (view_tree_add with
   * off_cpu): a wall-time tree's waits; 0 in any other tree. */
  int64_t off_cpu, off_cpu_self;
} view_node;

typedef struct view_tree view_tree;

/* One row of the flat/cumulative table. */
typedef struct view_top_row {
  uint32_t name;
  int64_t flat, cum;
  int64_t flat_off, cum_off; /* their off-CPU parts (view_node.off_cpu) */
} view_top_row;

/* Picks a sample type: type_name matches a sample type's name ("samples",
 * "cpu", "inuse_space"); NULL picks the profile's default_sample_type (a
 * Go heap profile's inuse_space), else with prefer_count the first "count"
 * type, else the last type (pprof's rule). Returns the index, or -1 with
 * why (naming the types there are). */
int view_pick_value(const Perftools__Profiles__Profile *p, const char *type_name, bool prefer_count,
                    char *why, size_t whylen);

/* Builds the tree of p's samples (value index vix) that pass f. names may be
 * shared with other trees. NULL with why on a bad filter (a label no sample
 * carries), an unusable profile, or ENOMEM. p is not kept. */
view_tree *view_tree_build(const Perftools__Profiles__Profile *p, size_t vix, const view_filter *f,
                           view_names *names, char *why, size_t whylen);
/* The same in two steps, so the caller can free p in between (a decoded
 * profile is several times its file; its distinct stacks are much less):
 * collect keeps each distinct stack that passes f once, with its value;
 * finish builds the tree from them. Nothing but view_tree_add and
 * view_tree_free may be called between the two. finish: 0, or -1 with why
 * (ENOMEM, a --label no sample carries). */
view_tree *view_tree_collect(const Perftools__Profiles__Profile *p, size_t vix,
                             const view_filter *f, view_names *names, char *why, size_t whylen);
/* Several profiles in one tree (wall time: CPU and off-CPU profiles of the
 * same processes): new makes an empty tree whose values are of type/unit
 * (copied); each add collects p's samples of value vix that pass f, with
 * off_cpu counting them also in the nodes' off_cpu parts. Stacks are
 * joined by frame names, so the profiles need not share ids. Every add
 * takes the same filter, whose label strings must outlive view_tree_finish
 * (a label fails there if no profile added has it). new: NULL on ENOMEM;
 * add: 0, or -1 with why (and t may only be freed). */
view_tree *view_tree_new(view_names *names, const char *type, const char *unit);
int view_tree_add(view_tree *t, const Perftools__Profiles__Profile *p, size_t vix,
                  const view_filter *f, bool off_cpu, char *why, size_t whylen);
int view_tree_finish(view_tree *t, char *why, size_t whylen);
void view_tree_free(view_tree *t);
/* Node 0 is the root ("all"). */
const view_node *view_tree_nodes(const view_tree *t, size_t *count);
int64_t view_tree_total(const view_tree *t);
uint32_t view_tree_max_depth(const view_tree *t);
const view_names *view_tree_names(const view_tree *t);
/* Colour groups: the label of a group ("demo_work", "libc.so.6"). */
size_t view_tree_group_count(const view_tree *t);
const char *view_tree_group_name(const view_tree *t, uint32_t group);
/* Sample type of the values: "samples"/"count", "cpu"/"nanoseconds". */
const char *view_tree_value_type(const view_tree *t);
const char *view_tree_value_unit(const view_tree *t);
/* The child of node parent named name, or 0 if none: a hash lookup once
 * view_tree_index has run (what a diff does for every node), else a walk
 * along the children. */
uint32_t view_tree_child(const view_tree *t, uint32_t parent, uint32_t name);
int view_tree_index(view_tree *t); /* 0 or -1 (ENOMEM) */

/* Value of the samples whose leaf frame has no symbol (named after its
 * object, "[libz.so.1]", or its address): what debug symbols would name. */
int64_t view_tree_unnamed_self(const view_tree *t);

/* Flat and cumulative value per function name (a name counted once per
 * sample in cum, however often it recurs), sorted by flat (or cum) then
 * name. *rows malloc'ed, caller frees. 0 or -1 (ENOMEM). */
int view_tree_top(const view_tree *t, bool by_cum, view_top_row **rows, size_t *nrows);

/* Frame name for folded output and SVG: a copy of s with every byte that
 * would break a format replaced (';' -> ':', control bytes and invalid
 * UTF-8 -> U+FFFD), at most max_bytes long (cut at a character, "..."
 * appended). Returns the bytes written to out (NUL-terminated), out must
 * hold max_bytes + 8. */
size_t view_clean_name(const char *s, size_t len, char *out, size_t max_bytes);
#endif
