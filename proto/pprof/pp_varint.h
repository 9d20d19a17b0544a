/* Internal to the proto library: protobuf varint writing, for the two
 * places that write profile.proto bytes (pp_builder_pack.c, and pp_builder.c,
 * which stores each sample's location ids and labels as pack writes them). */
#ifndef PP_VARINT_H
#define PP_VARINT_H
#include <stddef.h>
#include <stdint.h>

/* The most bytes a varint of a value below 2^32 takes (ids, string indices). */
#define PP_VARINT32_MAX 5

/* Bytes of v as a varint: 1 to 10 (an int64 below 0 takes 10). */
static inline size_t pp_varint_size(uint64_t v) {
  unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1); /* no branch: ids mix widths */
  return (bits * 9 + 64) / 64;                            /* ceil(bits / 7) for bits 1..64 */
}

/* Writes v at p (room for pp_varint_size(v) bytes); returns the end. */
static inline uint8_t *pp_put_varint(uint8_t *p, uint64_t v) {
  if (v < 0x4000) { /* ids and string indices: one or two bytes */
    size_t two = v >= 0x80;
    p[0] = (uint8_t)(v | two << 7);
    p[two] = (uint8_t)(v >> (7 * two));
    return p + 1 + two;
  }
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* A varint field (tag of field number <= 15, then v), left out when v is 0
 * as proto3 leaves out a zero scalar. */
static inline uint8_t *pp_put_field(uint8_t *p, unsigned field, uint64_t v) {
  if (!v)
    return p;
  *p++ = (uint8_t)(field << 3);
  return pp_put_varint(p, v);
}
#endif
