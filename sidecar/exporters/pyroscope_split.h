/* Splitting a pprof by sample into complete profiles within a byte and a
 * sample-count limit (what Grafana Pyroscope's per-profile limits need),
 * beside the exporter that needs it (pushprof_convert; built on the merge).
 * Not thread-safe per call; each call owns its outputs. */
#ifndef SIDECAR_PYROSCOPE_SPLIT_H
#define SIDECAR_PYROSCOPE_SPLIT_H
#include <stddef.h>
#include <stdint.h>

typedef struct pp_piece {
  uint8_t *data; /* uncompressed pprof, malloc'ed */
  size_t len;
} pp_piece;

/* Splits the uncompressed pprof (pprof, len) by sample into profiles of at
 * most max_bytes and at most max_samples samples (0: no count limit) each:
 * every sample lands in exactly one piece with its values, stack and labels
 * unchanged (so totals are preserved), and each piece carries what a merge
 * carries (sample types, period, time, comments, drop/keep_frames,
 * default_sample_type, doc_url, mapping flags) and only the mappings,
 * functions, locations and strings its samples use. A profile already
 * within both limits comes back as one piece (a copy). Returns 0 with
 * *pieces (malloc'ed array of *npieces) or -1 with why set, e.g. when one
 * sample alone exceeds max_bytes. Free with pp_pieces_free. */
int pp_split_limits(const uint8_t *pprof, size_t len, size_t max_bytes, size_t max_samples,
                    pp_piece **pieces, size_t *npieces, char *why, size_t whylen);
/* The same with the size limit only (max_samples 0). */
int pp_split(const uint8_t *pprof, size_t len, size_t max_bytes, pp_piece **pieces, size_t *npieces,
             char *why, size_t whylen);
/* The number of samples (top-level field 2) of an uncompressed pprof, by a
 * scan of the wire format; -1 if it is not well-formed protobuf. */
long pp_count_samples(const uint8_t *pprof, size_t len);
void pp_pieces_free(pp_piece *pieces, size_t n);
#endif
