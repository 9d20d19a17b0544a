/* One hex digit's value, for the few hand-written decoders on both sides
 * (percent-escapes, /proc/self/maps addresses, manifest hashes). */
#ifndef PP_HEX_H
#define PP_HEX_H

/* 0..15, or -1 if c is not a hex digit (either case). */
static inline int pp_hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}
#endif
