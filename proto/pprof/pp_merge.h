/* Merging profiles into a builder: the sidecar's batches and the views'
 * sums. A builder is used by one thread at a time. */
#ifndef PP_MERGE_H
#define PP_MERGE_H
#include <stdbool.h>
#include <stddef.h>

#include "pp_builder.h"
#include "profile.pb-c.h"

/* Merges a validated src into b: strings, mappings, functions, locations
 * remapped, identical samples summed, labels kept. On the first add b takes
 * src's sample types and period; later adds must match them (else -1 with
 * why). time = earliest start, duration covers every input. */
int pp_merge_add(pp_builder *b, const Perftools__Profiles__Profile *src, char *why, size_t whylen);
/* pp_merge_add taking only the columns keep[i] (one per sample type of
 * src) says to keep: the others add zero, and a sample whose kept values
 * are all zero is left out (its stack's strings, mappings, functions and
 * locations are kept all the same). Two merges of one profile with
 * complementary keeps add up to one pp_merge_add but for samples whose
 * values are all zero: the sidecar adds a profile's counters at once and
 * its gauges once per batch. */
int pp_merge_add_columns(pp_builder *b, const Perftools__Profiles__Profile *src, const bool *keep,
                         char *why, size_t whylen);
/* The same for samples [lo, hi) of src only, taking only the strings,
 * mappings, functions and locations they use (pp_merge_add keeps every one
 * of src's): a piece of a profile that is split (Pyroscope's size limits),
 * with src's sample types, period, time, comments, drop/keep_frames,
 * default_sample_type, doc_url and mapping flags. */
int pp_merge_add_samples(pp_builder *b, const Perftools__Profiles__Profile *src, size_t lo,
                         size_t hi, char *why, size_t whylen);
#endif
