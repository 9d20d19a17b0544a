/* Test-only reference encoder (tests/unit/pp_pack_ref.c). */
#ifndef PP_PACK_REF_H
#define PP_PACK_REF_H
#include "pp_builder.h"
#include "profile.pb-c.h"

/* Serializes b through protobuf-c as pp_builder_pack did before it wrote
 * the wire format itself. *out is malloc'ed, caller frees. 0 or -1. */
int pp_builder_pack_pbc(const pp_builder *b, uint8_t **out, size_t *len);
#endif
