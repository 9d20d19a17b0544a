/* Reading a pprof: gunzip when it starts with the gzip magic, decode with
 * the hand-written decoder (pp_decode.c) into an arena, validate. */
#include "pp_parse.h"

#include <stdint.h>
#include <stdlib.h>

#include "pp_decode.h"
#include "pp_gzip.h"
#include "pp_validate.h"
#include "pp_why.h"

#define GZIP_MAGIC0 0x1f
#define GZIP_MAGIC1 0x8b
/* Decoded structs take 5-15x the encoded size. The first chunk is sized for
 * the worst of that: pages never touched cost no memory, and one chunk is
 * usually enough. */
#define ARENA_EXPANSION 16

pp_pprof *pp_pprof_parse(const uint8_t *data, size_t len, size_t max_size, char *why,
                         size_t whylen) {
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  pp_pprof *a = NULL;
  if (len >= 2 && data[0] == GZIP_MAGIC0 && data[1] == GZIP_MAGIC1) {
    if (pp_gunzip_why(data, len, max_size, &raw, &rawlen, why, whylen) != 0)
      return NULL;
    data = raw;
    len = rawlen;
  } else if (len > max_size) {
    pp_say(why, whylen, "profile is %zu bytes, over the %zu byte limit", len, max_size);
    return NULL;
  }
  a = pp_pprof_arena_new(len < SIZE_MAX / ARENA_EXPANSION ? len * ARENA_EXPANSION : SIZE_MAX);
  if (!a) {
    pp_say(why, whylen, "out of memory parsing a profile");
    goto fail;
  }
  Perftools__Profiles__Profile *p = pp_pprof_decode(a, data, len);
  free(raw);
  raw = NULL;
  if (!p) {
    if (pp_pprof_arena_oom(a))
      pp_say(why, whylen, "out of memory decoding a pprof profile of %zu bytes", len);
    else
      pp_say(why, whylen, "not a pprof profile: protobuf decoding of %zu bytes failed", len);
    goto fail;
  }
  if (pp_pprof_validate(p, why, whylen) != 0)
    goto fail;
  pp_pprof_set_profile(a, p);
  return a;
fail:
  free(raw);
  pp_pprof_free(a);
  return NULL;
}
