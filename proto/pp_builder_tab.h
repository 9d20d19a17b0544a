/* The builder's tables, for the two files that touch them: pp_builder.c
 * fills them, pp_pack.c encodes them (and the tests' reference encoder,
 * tests/unit/pp_pack_ref.c, reads them). Nothing else includes this header: the rest of the library
 * goes through pp_pprof.h and pp_builder_int.h. Ids are dense: mapping, function and location i + 1
 * is v[i]. */
#ifndef PP_BUILDER_TAB_H
#define PP_BUILDER_TAB_H
#include "pp_builder_int.h"
#include "pp_hash.h"

#include <string.h>

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

/* Samples are most of a merged batch's memory and of the bytes a pack
 * writes, so each is stored as pack writes it: its location ids as a packed
 * varint run (the body of Sample.location_id), then its labels, sorted, each
 * a whole Sample.label field (tag, length, body), in sample_bytes. The
 * encoding is one-to-one, so two samples have the same stack and labels
 * exactly when they have the same bytes: the dedup hashes and compares the
 * bytes, and pack copies them. Values stay numbers (duplicates are summed).
 * Offsets and lengths are 32 bits (the builder refuses to grow past them). */
typedef struct bsample {
  uint32_t off;      /* of its bytes in sample_bytes */
  uint32_t locs_len; /* bytes of location ids, */
  uint32_t labs_len; /* then bytes of labels */
  uint32_t val_off;  /* of its values in sample_values */
} bsample;

/* The most bytes one location id (below UINT32_MAX) and one label (string
 * indices below UINT32_MAX, an int64) take in sample_bytes. */
#define BSAMPLE_LOC_MAX 5
#define BSAMPLE_LABEL_MAX (2 + 3 * (1 + 5) + (1 + 10))

/* A growable array: n used, cap allocated, of elements of one size. */
#define VEC(T)                                                                                     \
  struct {                                                                                         \
    T *v;                                                                                          \
    size_t n, cap;                                                                                 \
  }

/* Interned strings live in chunks (no malloc per string, and the strings
 * added together sit together), each after its 4-byte length. */
typedef struct str_chunk {
  struct str_chunk *next;
  size_t used, cap;
  char mem[];
} str_chunk;

/* The length of interned string t (strs.v[i]), stored before it. */
static inline uint32_t bstr_len(const char *t) {
  uint32_t n;
  memcpy(&n, t - sizeof n, sizeof n);
  return n;
}

#define STR_CHUNK_FIRST ((size_t)1 << 10)
#define STR_CHUNK_MAX ((size_t)64 << 10)

struct pp_builder {
  VEC(char *) strs;      /* into str_chunks */
  str_chunk *str_chunks; /* newest first */
  size_t str_next_cap;
  pp_htab str_ix;
  VEC(bmapping) maps;
  pp_htab map_ix;
  VEC(bfunction) funcs;
  pp_htab func_ix;
  VEC(blocation) locs;
  VEC(bline) lines;
  pp_htab loc_ix;
  VEC(bsample) samples;
  VEC(uint8_t) sample_bytes;
  VEC(int64_t) sample_values;
  pp_htab sample_ix;
  VEC(int64_t) sample_types; /* type, unit pairs */
  VEC(int64_t) comments;
  VEC(pp_ilabel) scratch_labels;
  VEC(uint8_t) scratch_bytes; /* a sample's labels, encoded */
  VEC(uint8_t) scratch_locs;  /* a sample's location ids, encoded */
  VEC(bline) scratch_lines;
  int64_t period_type, period_unit, period;
  bool has_period_type;
  int64_t time_nanos, duration_nanos;
  int64_t drop_frames, keep_frames, default_sample_type, doc_url;
  bool merge_started;
  size_t str_bytes; /* the string chunks' bytes */
  size_t str_chars; /* the interned strings' lengths, summed (no NULs) */
};
#endif
