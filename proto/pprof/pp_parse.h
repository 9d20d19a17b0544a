/* Reading a pprof from bytes: the one path every reader takes (the
 * sidecar's push decoding, its exporters, the pushprof command). */
#ifndef PP_PARSE_H
#define PP_PARSE_H
#include <stddef.h>
#include <stdint.h>

#include "pp_arena.h"

/* Gunzips data if it starts with the gzip magic (up to max_size bytes
 * uncompressed; raw data over max_size is refused too), decodes it with
 * the hand-written decoder (pp_decode.h: what protobuf-c 1.4 accepts, the
 * same structs) into an arena and validates it (pp_validate.h). NULL with
 * a one-line reason in why on failure. The profile is
 * pp_pprof_profile(result); free with pp_pprof_free. Thread-safe. */
pp_pprof *pp_pprof_parse(const uint8_t *data, size_t len, size_t max_size, char *why,
                         size_t whylen);
#endif
