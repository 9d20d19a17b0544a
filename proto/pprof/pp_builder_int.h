/* Internal to the pprof codec: the builder's index-level entry points
 * (string-table indices already interned in the same builder), used by
 * pp_merge.c to avoid re-hashing strings. */
#ifndef PP_BUILDER_INT_H
#define PP_BUILDER_INT_H
#include "pp_builder.h"

typedef struct pp_ilabel { /* a label with interned string indices; no padding */
  int64_t key;
  int64_t str;
  int64_t num;
  int64_t num_unit;
} pp_ilabel;

#define PP_MAPPING_HAS_FUNCTIONS 1u
#define PP_MAPPING_HAS_FILENAMES 2u
#define PP_MAPPING_HAS_LINE_NUMBERS 4u
#define PP_MAPPING_HAS_INLINE_FRAMES 8u

/* Dedup key: start, limit, offset, file, build id, has_functions; the other
 * flags are or'ed into an existing entry. */
uint64_t pp_builder_mapping_ix(pp_builder *b, uint64_t start, uint64_t limit, uint64_t offset,
                               int64_t file, int64_t build_id, unsigned flags);
uint64_t pp_builder_function_ix(pp_builder *b, int64_t name, int64_t system_name, int64_t filename,
                                int64_t start_line);
int pp_builder_sample_ix(pp_builder *b, const uint64_t *location_ids, size_t nlocs,
                         const int64_t *values, size_t nvalues, const pp_ilabel *labels,
                         size_t nlabels);
/* pp_builder_string of strs[0..n) (NULL reads as ""), their indices into
 * out[0..n); 0, or -1 when out of memory. The same indices as n calls in
 * order; faster for many new strings: the table slots of the next few are
 * fetched from memory while the current ones are interned. */
int pp_builder_strings(pp_builder *b, const char *const *strs, size_t n, int64_t *out);
/* A sample made ready to add: its key (location ids and labels as the
 * builder stores them) encoded and hashed, its table slot being fetched.
 * pp_builder_sample_commit adds it; a merge readies the next sample before
 * it adds the one before, so the slot's cache miss overlaps the work.
 * values must stay valid until the commit; buf is the prep's own (free it
 * with pp_sample_prep_free). Between a prep and its commit only other
 * samples may be readied or added. */
typedef struct pp_sample_prep {
  uint8_t *buf, *key;
  size_t cap;
  uint32_t locs_len, labs_len;
  uint64_t h;
  const int64_t *values;
  size_t nvalues;
} pp_sample_prep;
/* pp_builder_sample_ix in two steps, with the location ids already encoded
 * as the builder stores them (bsample in pp_builder_tab.h): a packed varint
 * run, pp_put_varint's bytes of each id, of ids this builder returned. Not
 * checked: pp_merge.c makes them in the loop that remaps them, which saves
 * a second pass over every location id of every sample. Each 0, or -1 (bad
 * input or out of memory, as pp_builder_sample_ix). */
int pp_builder_sample_prep(pp_builder *b, pp_sample_prep *p, const uint8_t *locs, size_t locs_len,
                           const int64_t *values, size_t nvalues, const pp_ilabel *labels,
                           size_t nlabels);
int pp_builder_sample_commit(pp_builder *b, const pp_sample_prep *p);
void pp_sample_prep_free(pp_sample_prep *p);
size_t pp_builder_string_count(const pp_builder *b);
const char *pp_builder_string_at(const pp_builder *b, int64_t ix);

/* Profile-level fields, as string indices where pprof has them. */
typedef struct pp_builder_meta {
  size_t nsample_types;
  const int64_t *sample_types; /* type, unit pairs */
  int64_t period_type, period_unit, period;
  bool has_period_type;
  int64_t time_nanos, duration_nanos;
} pp_builder_meta;
void pp_builder_get_meta(const pp_builder *b, pp_builder_meta *m);
int pp_builder_add_sample_type_ix(pp_builder *b, int64_t type, int64_t unit);
void pp_builder_set_period_ix(pp_builder *b, int64_t type, int64_t unit, int64_t period);
/* Adds comment string ix unless already present (bounded count). */
int pp_builder_add_comment_ix(pp_builder *b, int64_t ix);
/* Sets drop_frames/keep_frames/default_sample_type/doc_url where still 0. */
void pp_builder_set_extras_ix(pp_builder *b, int64_t drop_frames, int64_t keep_frames,
                              int64_t default_sample_type, int64_t doc_url);
/* True once pp_merge_add accepted a profile (it then owns the sample types). */
bool pp_builder_merge_started(const pp_builder *b);
void pp_builder_set_merge_started(pp_builder *b);
#endif
