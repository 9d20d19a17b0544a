/* Test-only: a pprof read with protobuf-c's generic unpack (after a gunzip
 * and before pp_pprof_validate), an independent reader for checking what
 * the code under test wrote. */
#ifndef PP_PARSE_REF_H
#define PP_PARSE_REF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

/* NULL with why set if data is not a valid pprof (gzipped or not, up to
 * max_size bytes unpacked). Free with
 * perftools__profiles__profile__free_unpacked(p, NULL). */
Perftools__Profiles__Profile *pp_ref_parse(const uint8_t *data, size_t len, size_t max_size,
                                           char *why, size_t whylen);
/* Whether p's mappings, functions and locations have the ids 1..N in
 * order, as pprof writers that number densely give them. */
bool pp_ref_ids_dense(const Perftools__Profiles__Profile *p);
#endif
