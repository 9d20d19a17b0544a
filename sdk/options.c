/* pushprof_options across header versions: see options.h. */
#include "options.h"

#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(pushprof_options) >= OPTIONS_V1_SIZE, "fields are only appended");
_Static_assert(offsetof(pushprof_options, hz) == 4 && offsetof(pushprof_options, service) == 8 &&
                   offsetof(pushprof_options, backlog) == 64 &&
                   offsetof(pushprof_options, reserved0) == 68,
               "after the first word, the 0.1 layout's offsets are kept");
_Static_assert(offsetof(pushprof_options, profiles) == 72 &&
                   offsetof(pushprof_options, heap_rate) == 80 &&
                   sizeof(pushprof_options) == OPTIONS_V2_SIZE,
               "0.2 appends profiles and heap_rate");

int options_import(const pushprof_options *in, pushprof_options *out, char *err, size_t errlen) {
  const unsigned char *b = (const unsigned char *)in;
  unsigned int word;
  if (err && errlen)
    err[0] = '\0';
  memset(out, 0, sizeof *out);
  out->struct_size = PUSHPROF_OPTIONS_STRUCT_SIZE;
  if (!in)
    return 0;
  memcpy(&word, b, sizeof word);
  if ((word & PUSHPROF_OPTIONS_TAG_MASK) != PUSHPROF_OPTIONS_TAG) {
    /* pushprof.h 0.1: hz first, then what this header has from offset 8. */
    memcpy(out, b, OPTIONS_V0_SIZE);
    if (word != 0)
      out->hz = (int)word; /* else the copied word at hz's offset (0.1: zero padding) */
    out->struct_size = PUSHPROF_OPTIONS_STRUCT_SIZE;
    out->reserved0 = 0; /* 0.1's tail padding */
    return 0;
  }
  size_t n = word & ~PUSHPROF_OPTIONS_TAG_MASK;
  if (n < OPTIONS_V1_SIZE) {
    if (err && errlen)
      snprintf(err, errlen,
               "pushprof_options.struct_size=0x%x is invalid (accepted: "
               "PUSHPROF_OPTIONS_STRUCT_SIZE, set by PUSHPROF_OPTIONS_INIT)",
               word);
    return PUSHPROF_EINVAL;
  }
  memcpy(out, b, n < sizeof *out ? n : sizeof *out);
  out->struct_size = PUSHPROF_OPTIONS_STRUCT_SIZE;
  size_t unknown = 0;
  for (size_t i = sizeof *out; i < n && !unknown; i++)
    if (b[i])
      unknown = i;
  if (unknown || out->reserved0) {
    if (err && errlen)
      snprintf(err, errlen,
               "pushprof_options sets a field this library (%s, %zu-byte options) does not "
               "know: byte %zu of struct_size %zu is not 0 (built against a newer pushprof.h? "
               "upgrade libpushprof or leave that option unset)",
               PUSHPROF_VERSION_STRING, sizeof *out,
               unknown ? unknown : offsetof(pushprof_options, reserved0), n);
    return PUSHPROF_EINVAL;
  }
  return 0;
}
