/* pprof helpers shared by the SDK and the sidecar: a builder that interns
 * strings and dedups mappings/functions/locations/samples and emits dense ids
 * 1..N; validation with the rules `go tool pprof` applies; merge (a real
 * remapping merge built on the builder); gzip. Not async-signal-safe (they
 * allocate). A builder is used by one thread at a time. */
#ifndef PP_PPROF_H
#define PP_PPROF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

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

/* Validation: 0 if p is a profile go tool pprof accepts, else -1 with a
 * one-line reason written to why. */
int pp_pprof_validate(const Perftools__Profiles__Profile *p, char *why, size_t whylen);

/* Unpacks (gunzipping first if the data starts with the gzip magic, up to
 * max_size bytes uncompressed) and validates. NULL with why set on failure.
 * Free with perftools__profiles__profile__free_unpacked(p, NULL). */
Perftools__Profiles__Profile *pp_pprof_parse(const uint8_t *data, size_t len, size_t max_size,
                                             char *why, size_t whylen);

/* The same as pp_pprof_parse, but the decoded profile lives in one arena
 * (a few large blocks instead of many small mallocs), and it is decoded by
 * a hand-written profile.proto decoder (pp_decode.c) that accepts what
 * protobuf-c accepts and yields the same structs, several times faster.
 * NULL with why set on failure. Free with pp_pprof_free (NULL is fine). */
typedef struct pp_pprof pp_pprof;
pp_pprof *pp_pprof_parse_pooled(const uint8_t *data, size_t len, size_t max_size, char *why,
                                size_t whylen);
const Perftools__Profiles__Profile *pp_pprof_profile(const pp_pprof *p);
size_t pp_pprof_mem(const pp_pprof *p); /* bytes of the arena in use */
/* An empty arena of the same cached chunks (the first of at least
 * first_cap bytes), for pp_pprof_arena_alloc; NULL on ENOMEM. Its
 * allocations fail (NULL) past ENOMEM; pp_pprof_arena_oom says whether one
 * did. Free with pp_pprof_free. */
pp_pprof *pp_pprof_arena_new(size_t first_cap);
bool pp_pprof_arena_oom(const pp_pprof *a);
/* size bytes (16-byte aligned, uninitialized) from arena a, freed with it;
 * NULL (and the oom flag set) on ENOMEM. */
void *pp_pprof_arena_alloc(pp_pprof *a, size_t size);
/* Thread-safe: a few freed arenas are kept for reuse (their pages are
 * already faulted in); pp_pprof_cache_trim returns them to the system. */
void pp_pprof_free(pp_pprof *p);
void pp_pprof_cache_trim(void);

/* Merges a validated src into b: strings, mappings, functions, locations
 * remapped, identical samples summed, labels kept. On the first add b takes
 * src's sample types and period; later adds must match them (else -1 with
 * why). time = earliest start, duration covers every input. */
int pp_merge_add(pp_builder *b, const Perftools__Profiles__Profile *src, char *why, size_t whylen);
/* The same for samples [lo, hi) of src only, taking only the strings,
 * mappings, functions and locations they use (pp_merge_add keeps every one
 * of src's): a piece of a profile that is split (Pyroscope's size limits),
 * with src's sample types, period, time, comments, drop/keep_frames,
 * default_sample_type, doc_url and mapping flags. */
int pp_merge_add_samples(pp_builder *b, const Perftools__Profiles__Profile *src, size_t lo,
                         size_t hi, char *why, size_t whylen);

/* gzip (RFC 1952) via zlib. *out malloc'ed. 0 or -1. */
int pp_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen);
/* Fails (-1) if the output would exceed max_out. */
int pp_gunzip(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *outlen);
#endif
