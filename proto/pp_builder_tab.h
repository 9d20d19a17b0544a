/* The builder's tables, for the two files that touch them: pp_builder.c
 * fills them, pp_pack.c encodes them (and the tests' reference encoder,
 * tests/unit/pp_pack_ref.c, reads them). Nothing else includes this header: the rest of the library
 * goes through pp_pprof.h and pp_builder_int.h. Ids are dense: mapping, function and location i + 1
 * is v[i]. */
#ifndef PP_BUILDER_TAB_H
#define PP_BUILDER_TAB_H
#include "pp_builder_int.h"
#include "pp_hash.h"

typedef struct bmapping {
  uint64_t start, limit, offset;
  int64_t file, build_id;
  unsigned flags;
} bmapping;

typedef struct bfunction {
  int64_t name, system_name, filename, start_line;
} bfunction;

typedef struct bline {
  uint64_t function_id;
  int64_t line;
} bline;

typedef struct blocation {
  uint64_t mapping_id, address;
  size_t line_off;
  size_t nlines;
} blocation;

typedef struct bsample {
  size_t loc_off, lab_off, val_off;
  size_t nlocs, nlabels;
} bsample;

/* A growable array: n used, cap allocated, of elements of one size. */
#define VEC(T)                                                                                     \
  struct {                                                                                         \
    T *v;                                                                                          \
    size_t n, cap;                                                                                 \
  }

struct pp_builder {
  VEC(char *) strs;
  pp_htab str_ix;
  VEC(bmapping) maps;
  pp_htab map_ix;
  VEC(bfunction) funcs;
  pp_htab func_ix;
  VEC(blocation) locs;
  VEC(bline) lines;
  pp_htab loc_ix;
  VEC(bsample) samples;
  VEC(uint64_t) sample_locs;
  VEC(pp_ilabel) sample_labels;
  VEC(int64_t) sample_values;
  pp_htab sample_ix;
  VEC(int64_t) sample_types; /* type, unit pairs */
  VEC(int64_t) comments;
  VEC(pp_ilabel) scratch_labels;
  VEC(bline) scratch_lines;
  int64_t period_type, period_unit, period;
  bool has_period_type;
  int64_t time_nanos, duration_nanos;
  int64_t drop_frames, keep_frames, default_sample_type, doc_url;
  bool merge_started;
  size_t str_bytes; /* interned strings' bytes, with malloc's overhead */
  size_t str_chars; /* the interned strings' lengths, summed (no NULs) */
};
#endif
