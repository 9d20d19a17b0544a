/* The builder's tables, for the two files that touch them: pp_builder.c
 * fills them, pp_builder_pack.c encodes them (and the tests' reference
 * encoder, tests/unit/proto/pp_pack_ref.c, reads them). Nothing else
 * includes this header: the rest of the library goes through pp_builder.h
 * and pp_builder_int.h. Ids are dense: mapping, function and location
 * i + 1 is v[i]. */
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
 * a whole Sample.label field (tag, length, body). The encoding is
 * one-to-one, so two samples have the same stack and labels exactly when
 * they have the same bytes: the dedup hashes and compares the bytes, and
 * pack copies them. Values stay numbers (duplicates are summed). A sample's
 * values and bytes are one record in sample_mem, whose chunks never move:
 * pools that doubled by realloc copied the whole batch's samples again at
 * each doubling. Lengths are 32 bits (the builder refuses to grow past
 * them). */
typedef struct bsample {
  int64_t *rec;      /* its values (one per sample type), then its bytes: */
  uint32_t locs_len; /* location ids, */
  uint32_t labs_len; /* then labels */
} bsample;

/* The bytes of a sample's record in a builder with nvalues sample types. */
static inline uint8_t *bsample_bytes(const bsample *s, size_t nvalues) {
  return (uint8_t *)(s->rec + nvalues);
}

/* The most bytes one location id (below UINT32_MAX) and one label (string
 * indices below UINT32_MAX, an int64) take in a sample's bytes. */
#define BSAMPLE_LOC_MAX 5
#define BSAMPLE_LABEL_MAX (2 + 3 * (1 + 5) + (1 + 10))

/* A growable array: n used, cap allocated, of elements of one size. */
#define VEC(T)                                                                                     \
  struct {                                                                                         \
    T *v;                                                                                          \
    size_t n, cap;                                                                                 \
  }

/* Records that never move, carved from chunks (no malloc per record, no
 * copy as the builder grows, and what is added together sits together):
 * interned strings, each after its 4-byte length, and samples' records. A
 * list's chunks double from CHUNK_FIRST to CHUNK_MAX bytes; a record larger
 * than the next chunk gets a chunk of its own. */
typedef struct mem_chunk {
  struct mem_chunk *next;
  size_t used, cap;
  _Alignas(8) unsigned char mem[];
} mem_chunk;

typedef struct chunk_list {
  mem_chunk *head;  /* newest first */
  mem_chunk *spare; /* emptied by pp_builder_reset, taken before a malloc */
  size_t next_cap;
  size_t bytes;       /* the chunks' bytes in use, headers included */
  size_t spare_bytes; /* and the spare ones' */
} chunk_list;

#define CHUNK_FIRST ((size_t)1 << 10)
#define CHUNK_MAX ((size_t)64 << 10)

/* The length of interned string t (strs.v[i]), stored before it. */
static inline uint32_t bstr_len(const char *t) {
  uint32_t n;
  memcpy(&n, t - sizeof n, sizeof n);
  return n;
}

struct pp_builder {
  VEC(char *) strs; /* into str_mem */
  chunk_list str_mem;
  pp_htab str_ix;
  VEC(bmapping) maps;
  pp_htab map_ix;
  VEC(bfunction) funcs;
  pp_htab func_ix;
  VEC(blocation) locs;
  VEC(bline) lines;
  pp_htab loc_ix;
  VEC(bsample) samples;
  chunk_list sample_mem;
  size_t sample_bytes; /* the samples' bytes, summed (values not counted) */
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
  size_t str_chars; /* the interned strings' lengths, summed (no NULs) */
};
#endif
