/* The pprof builder: interns strings and dedups mappings, functions,
 * locations and samples, emitting dense ids 1..N, and packs the profile
 * (pp_builder.c, pp_builder_pack.c). The SDK builds its profiles with it; the
 * sidecar merges into it (pp_merge.h). Not async-signal-safe (it allocates).
 * A builder is used by one thread at a time. */
#ifndef PP_BUILDER_H
#define PP_BUILDER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pp_builder pp_builder;

typedef struct pp_label {
  const char *key;
  const char *str; /* string label; NULL for a numeric one */
  int64_t num;
  const char *num_unit; /* may be NULL */
} pp_label;

pp_builder *pp_builder_new(void); /* NULL on ENOMEM */
void pp_builder_free(pp_builder *b);
/* Interns s (NULL means ""); returns its string-table index, or -1 on ENOMEM. */
int64_t pp_builder_string(pp_builder *b, const char *s);
int pp_builder_add_sample_type(pp_builder *b, const char *type, const char *unit);
int pp_builder_set_period(pp_builder *b, const char *type, const char *unit, int64_t period);
void pp_builder_set_time(pp_builder *b, int64_t time_nanos, int64_t duration_nanos);
int pp_builder_add_comment(pp_builder *b, const char *comment);
/* The sample type readers show when not told (Go's heap: "inuse_space"). */
int pp_builder_set_default_sample_type(pp_builder *b, const char *type);
/* Each returns an id >= 1 (identical arguments return the same id), 0 on ENOMEM. */
uint64_t pp_builder_mapping(pp_builder *b, uint64_t start, uint64_t limit, uint64_t offset,
                            const char *file, const char *build_id, bool has_functions);
uint64_t pp_builder_function(pp_builder *b, const char *name, const char *system_name,
                             const char *filename, int64_t start_line);
/* mapping_id may be 0 (none). function_ids/lines: nlines entries, innermost first. */
uint64_t pp_builder_location(pp_builder *b, uint64_t mapping_id, uint64_t address,
                             const uint64_t *function_ids, const int64_t *lines, size_t nlines);
/* Adds values to the sample with the same locations and labels (label order
 * does not matter), creating it if new. nvalues must equal the sample types
 * count. Returns 0 or -1 (ENOMEM / bad nvalues). */
int pp_builder_sample(pp_builder *b, const uint64_t *location_ids, size_t nlocs,
                      const int64_t *values, size_t nvalues, const pp_label *labels,
                      size_t nlabels);
size_t pp_builder_sample_count(const pp_builder *b);
/* Bytes the builder holds on the heap (tables, indexes, strings; an
 * estimate within malloc's per-block overhead). O(1). */
size_t pp_builder_mem(const pp_builder *b);
/* What pp_builder_mem would say for a new builder holding the same
 * content: equal for a builder never reset; for a reset one (which keeps
 * its capacity) what its content alone costs. O(1). */
size_t pp_builder_mem_content(const pp_builder *b);
/* Empties b as pp_builder_new would make it, keeping its arrays' and hash
 * tables' memory (their pages stay mapped; the tables are cleared) and its
 * full-size string and sample chunks as spares: a caller merging batch
 * after batch reuses one builder. 0, or -1 (out of memory: b can then only
 * be freed). */
int pp_builder_reset(pp_builder *b);
/* Frees the spare chunks a reset kept (pp_builder_mem counts them). */
void pp_builder_drop_spares(pp_builder *b);
/* Serializes (uncompressed). *out is malloc'ed, caller frees. 0 or -1. */
int pp_builder_pack(pp_builder *b, uint8_t **out, size_t *len);
/* The same into *buf (*cap bytes; NULL/0 at first), which is replaced by a
 * larger malloc'ed one when too small: a caller packing batch after batch
 * keeps one buffer whose pages stay mapped. *buf stays the caller's. */
int pp_builder_pack_reuse(pp_builder *b, uint8_t **buf, size_t *cap, size_t *len);
#endif
