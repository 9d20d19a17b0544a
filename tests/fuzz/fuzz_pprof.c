/* pprof parse/validate/merge: any bytes go through pp_ref_parse
 * (protobuf-c's unpack) and the arena-backed pp_pprof_parse (the
 * sidecar's path, the hand-written decoder of pp_decode.c), which must agree
 * on what they accept and on what it holds, field by field. Before
 * validation, the two decoders must also agree on the raw bytes (gunzipped
 * if they are gzip): accept/reject, and the whole tree. The accepted profile is merged
 * twice into a builder (once as each parser decoded it), packed, parsed again
 * and must validate, keep its sample types and period, and hold exactly
 * twice the value sums of the input (merging neither loses nor
 * double-counts samples). The pack's bytes must be the ones protobuf-c makes
 * of the same builder (pp_pack_ref.c). */
#include <inttypes.h>
#include <string.h>

#include "fuzz_target.h"
#include "pp_decode_ref.h"
#include "pp_pack_ref.h"
#include "pp_builder.h"
#include "pp_validate.h"
#include "pp_parse.h"
#include "pp_merge.h"
#include "pp_gzip.h"
#include "pp_parse_ref.h"

#define MAX_UNPACKED (1u << 20) /* gunzip limit: keeps gzip bombs cheap */

/* Per sample type, the sum of every sample's value, wrapping like the builder. */
static uint64_t *value_sums(const Perftools__Profiles__Profile *p) {
  uint64_t *s = calloc(p->n_sample_type + 1, sizeof *s);
  FUZZ_CHECK(s != NULL, "out of memory");
  for (size_t i = 0; i < p->n_sample; i++)
    for (size_t j = 0; j < p->sample[i]->n_value && j < p->n_sample_type; j++)
      s[j] += (uint64_t)p->sample[i]->value[j];
  return s;
}

static const char *str_at(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table ? p->string_table[ix] : "<out of range>";
}

/* The hand decoder against protobuf-c on bytes that are not validated. */
static void check_decoders_agree(const uint8_t *data, size_t size) {
  char why[256] = "";
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b &&
      pp_gunzip(data, size, MAX_UNPACKED, &raw, &rawlen) == 0) {
    data = raw;
    size = rawlen;
  }
  int rc = pp_decode_ref_check(data, size, why, sizeof why);
  FUZZ_CHECK(rc != -1, "the decoders disagree: %s", why);
  free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char why[256] = "", pwhy[256] = "";
  check_decoders_agree(data, size);
  Perftools__Profiles__Profile *p = pp_ref_parse(data, size, MAX_UNPACKED, why, sizeof why);
  pp_pprof *pooled = pp_pprof_parse(data, size, MAX_UNPACKED, pwhy, sizeof pwhy);
  FUZZ_CHECK((p != NULL) == (pooled != NULL), "the parsers disagree: \"%s\" vs \"%s\"", why, pwhy);
  if (!p) {
    FUZZ_CHECK(why[0] != '\0' && pwhy[0] != '\0', "a rejected profile must say why");
    return 0;
  }
  FUZZ_CHECK(pp_pprof_validate(p, why, sizeof why) == 0, "parse accepted what validate refuses: %s",
             why);
  const Perftools__Profiles__Profile *pp = pp_pprof_profile(pooled);
  FUZZ_CHECK(pp_decode_ref_compare(p, pp, why, sizeof why) == 0, "the pooled decode differs: %s",
             why);

  pp_builder *b = pp_builder_new();
  FUZZ_CHECK(b != NULL, "out of memory");
  int rc = pp_merge_add(b, p, why, sizeof why);
  FUZZ_CHECK(rc == 0, "a validated profile must merge: %s", why);
  rc = pp_merge_add(b, pp, why, sizeof why);
  FUZZ_CHECK(rc == 0, "a profile must merge with itself: %s", why);
  pp_pprof_free(pooled);

  uint8_t *out = NULL;
  size_t outlen = 0;
  FUZZ_CHECK(pp_builder_pack(b, &out, &outlen) == 0, "pack failed");
  uint8_t *ref = NULL;
  size_t reflen = 0;
  FUZZ_CHECK(pp_builder_pack_pbc(b, &ref, &reflen) == 0, "protobuf-c pack failed");
  FUZZ_CHECK(reflen == outlen && memcmp(ref, out, outlen) == 0,
             "pack wrote %zu bytes other than protobuf-c's %zu", outlen, reflen);
  free(ref);
  pp_builder_free(b);

  /* The merge output may be larger than the input; allow for it. */
  Perftools__Profiles__Profile *q = pp_ref_parse(out, outlen, outlen + 1, why, sizeof why);
  FUZZ_CHECK(q != NULL, "merge output (%zu bytes) does not validate: %s", outlen, why);
  FUZZ_CHECK(q->n_sample_type == p->n_sample_type, "%zu sample types became %zu", p->n_sample_type,
             q->n_sample_type);
  for (size_t i = 0; i < p->n_sample_type; i++) {
    const char *pt = str_at(p, p->sample_type[i]->type), *qt = str_at(q, q->sample_type[i]->type);
    const char *pu = str_at(p, p->sample_type[i]->unit), *qu = str_at(q, q->sample_type[i]->unit);
    FUZZ_CHECK(strcmp(pt, qt) == 0 && strcmp(pu, qu) == 0, "sample type %zu: %s/%s became %s/%s", i,
               pt, pu, qt, qu);
  }
  FUZZ_CHECK(q->n_sample <= p->n_sample, "%zu samples merged into %zu", p->n_sample, q->n_sample);
  FUZZ_CHECK(q->period == p->period, "period %" PRId64 " became %" PRId64, p->period, q->period);
  uint64_t *ps = value_sums(p), *qs = value_sums(q);
  for (size_t i = 0; i < p->n_sample_type; i++)
    FUZZ_CHECK(qs[i] == 2 * ps[i], "sample type %zu: sum %" PRIu64 " merged twice gave %" PRIu64, i,
               ps[i], qs[i]);
  free(ps);
  free(qs);

  perftools__profiles__profile__free_unpacked(q, NULL);
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(out);
  return 0;
}
