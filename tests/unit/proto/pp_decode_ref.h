/* Test-only: the hand-written profile decoder (proto/pp_decode.c) against
 * protobuf-c's perftools__profiles__profile__unpack (tests/unit/pp_decode_ref.c),
 * shared by test_pp_decode and the pprof fuzz target. */
#ifndef PP_DECODE_REF_H
#define PP_DECODE_REF_H
#include <stddef.h>
#include <stdint.h>

#include "pp_parse.h"

/* Compares two decoded profiles field by field (every field profile.proto
 * knows; unknown fields are not compared). 0 if equal, else -1 with the
 * first difference in why. */
int pp_decode_ref_compare(const Perftools__Profiles__Profile *a,
                          const Perftools__Profiles__Profile *b, char *why, size_t whylen);

/* Decodes data with both decoders. Returns 1 if both accept it and the
 * trees are equal, 0 if both reject it, -1 if they disagree (why says how),
 * -2 if the hand decoder ran out of memory. */
int pp_decode_ref_check(const uint8_t *data, size_t len, char *why, size_t whylen);
#endif
