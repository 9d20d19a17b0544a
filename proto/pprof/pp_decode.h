/* The hand-written profile.proto decoder (pp_decode.c) that
 * pp_pprof_parse uses instead of protobuf-c's generic unpack
 * (exposed for the tests that compare the two), and its field reader,
 * which pp_push.c and the listener's peeks at a payload use too. */
#ifndef PP_DECODE_H
#define PP_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pp_arena.h"
#include "profile.pb-c.h"

/* Decodes data[0..len) (an uncompressed, unvalidated pprof) into arena a,
 * accepting exactly what perftools__profiles__profile__unpack (protobuf-c
 * 1.4) accepts and yielding the same field values; unknown fields are
 * skipped, not kept. The profile lives in a (freed with it). NULL if the
 * bytes are not a Profile, or on ENOMEM (then pp_pprof_arena_oom(a)).
 * Thread-safe for distinct arenas. */
Perftools__Profiles__Profile *pp_pprof_decode(pp_pprof *a, const uint8_t *data, size_t len);

/* The most fields (known or not) protobuf-c 1.4 unpacks in one message. */
#define PP_WIRE_MAX_FIELDS (((size_t)1 << 27) - 16)

/* One field of any message, framed as protobuf-c 1.4's unpack frames it
 * before it decodes anything: tag, wire type, length. */
typedef struct pp_wire_field {
  uint32_t num;
  unsigned wire_type;  /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
  uint64_t v;          /* varint: the value */
  const uint8_t *data; /* length-delimited: the payload, len bytes */
  size_t len;
} pp_wire_field;
/* Reads the field at *p (< end) into f and moves *p past it; false where
 * protobuf-c's unpack would refuse the message for its framing. */
bool pp_wire_next(const uint8_t **p, const uint8_t *end, pp_wire_field *f);
#endif
