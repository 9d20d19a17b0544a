#include "pp_parse_ref.h"

#include <stdio.h>
#include <stdlib.h>

#include "pp_gzip.h"
#include "pp_validate.h"

Perftools__Profiles__Profile *pp_ref_parse(const uint8_t *data, size_t len, size_t max_size,
                                           char *why, size_t whylen) {
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    if (pp_gunzip_why(data, len, max_size, &raw, &rawlen, why, whylen) != 0)
      return NULL;
    data = raw;
    len = rawlen;
  } else if (len > max_size) {
    snprintf(why, whylen, "profile is %zu bytes, over the %zu byte limit", len, max_size);
    return NULL;
  }
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, data);
  free(raw);
  if (!p) {
    snprintf(why, whylen, "not a pprof profile: protobuf decoding of %zu bytes failed", len);
    return NULL;
  }
  if (pp_pprof_validate(p, why, whylen) != 0) {
    perftools__profiles__profile__free_unpacked(p, NULL);
    return NULL;
  }
  return p;
}

bool pp_ref_ids_dense(const Perftools__Profiles__Profile *p) {
  for (size_t i = 0; i < p->n_mapping; i++)
    if (p->mapping[i]->id != i + 1)
      return false;
  for (size_t i = 0; i < p->n_function; i++)
    if (p->function[i]->id != i + 1)
      return false;
  for (size_t i = 0; i < p->n_location; i++)
    if (p->location[i]->id != i + 1)
      return false;
  return true;
}
