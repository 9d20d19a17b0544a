/* proto/pprof/pp_parse.c: plain and gzipped profiles read, the size limit
 * applies to the inflated bytes, garbage is refused with a reason, and
 * whatever survives corruption merges into a valid profile. Every input is
 * also read by the reference reader (protobuf-c, pp_parse_ref.c), which must
 * make the same decision for the same reason and read the same tree. */
#include "pp_builder.h"
#include "pp_decode_ref.h"
#include "pp_gzip.h"
#include "pp_merge.h"
#include "pp_parse.h"
#include "pprof_fixture.h"

/* pp_pprof_parse beside the reference reader; returns the reference's
 * profile (free it with free_unpacked), why set as both set it. */
static Perftools__Profiles__Profile *parse(const uint8_t *data, size_t len, size_t max_size,
                                           char *why, size_t whylen) {
  char pwhy[256] = "";
  pp_pprof *q = pp_pprof_parse(data, len, max_size, pwhy, sizeof pwhy);
  Perftools__Profiles__Profile *p = pp_ref_parse(data, len, max_size, why, whylen);
  PP_CHECK((p != NULL) == (q != NULL));
  if (p && q) {
    char cwhy[256] = "";
    int rc = pp_decode_ref_compare(p, pp_pprof_profile(q), cwhy, sizeof cwhy);
    PP_CHECK_INT(rc, ==, 0);
    if (rc != 0)
      fprintf(stderr, "  pp_pprof_parse and the reference differ: %s\n", cwhy);
  }
  if (!p && !q)
    PP_CHECK_STR(pwhy, why);
  pp_pprof_free(q);
  return p;
}

static void test_parse_plain_gzip_and_garbage(void) {
  pp_builder *b = typed_builder();
  uint64_t f = pp_builder_function(b, "f", "", "", 0);
  uint64_t l = pp_builder_location(b, 0, 0x10, &f, NULL, 1);
  PP_CHECK_INT(pp_builder_sample(b, &l, 1, (int64_t[]){1, 2}, 2, NULL, 0), ==, 0);
  uint8_t *raw = NULL, *gz = NULL;
  size_t rawlen = 0, gzlen = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, &rawlen), ==, 0);
  PP_CHECK_INT(pp_gzip(raw, rawlen, &gz, &gzlen), ==, 0);
  char why[256] = "";
  Perftools__Profiles__Profile *p = parse(raw, rawlen, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_INT(p->n_sample, ==, 1);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  p = parse(gz, gzlen, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p)
    perftools__profiles__profile__free_unpacked(p, NULL);
  p = parse(gz, gzlen, rawlen - 1, why, sizeof why); /* limit applies to the inflated size */
  PP_CHECK(p == NULL);
  PP_CHECK(strstr(why, "limit") != NULL);
  p = parse(raw, rawlen, rawlen - 1, why, sizeof why);
  PP_CHECK(p == NULL);
  const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
  p = parse(junk, sizeof junk, 1 << 20, why, sizeof why);
  PP_CHECK(p == NULL);
  PP_CHECK(strstr(why, "decod") != NULL);
  const uint8_t empty_gz[] = {0x1f, 0x8b};
  p = parse(empty_gz, sizeof empty_gz, 1 << 20, why, sizeof why);
  PP_CHECK(p == NULL);
  /* An empty message decodes but has no string_table[0]. */
  p = parse((const uint8_t *)"", 0, 1 << 20, why, sizeof why);
  PP_CHECK(p == NULL);
  PP_CHECK(strstr(why, "string_table[0]") != NULL);
  free(raw);
  free(gz);
  pp_builder_free(b);
}

static void test_parse_survives_corruption_and_merge_accepts_what_it_accepts(void) {
  /* Random byte flips, truncations and inserts of a valid profile: parse never
   * crashes (ASan build), and whatever it accepts merges and re-packs into a
   * profile that validates. */
  Perftools__Profiles__Profile *b0 = profile_b();
  pp_builder *b = pp_builder_new();
  char why[256];
  PP_CHECK_INT(pp_merge_add(b, b0, why, sizeof why), ==, 0);
  uint8_t *raw = NULL;
  size_t rawlen = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, &rawlen), ==, 0);
  pp_builder_free(b);
  perftools__profiles__profile__free_unpacked(b0, NULL);
  uint8_t *buf = malloc(rawlen + 8);
  unsigned seed = 12345;
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, raw, rawlen);
    size_t len = rawlen;
    int flips = 1 + rand_r(&seed) % 4;
    for (int k = 0; k < flips; k++)
      buf[rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
    if (rand_r(&seed) % 4 == 0)
      len = (size_t)rand_r(&seed) % len;
    Perftools__Profiles__Profile *p = parse(buf, len, 1 << 20, why, sizeof why);
    if (!p) {
      PP_CHECK(why[0] != '\0');
      rejected++;
      continue;
    }
    accepted++;
    pp_builder *m = pp_builder_new();
    int rc = pp_merge_add(m, p, why, sizeof why);
    PP_CHECK_INT(rc, ==, 0);
    if (rc != 0)
      fprintf(stderr, "  merge refused a validated profile: %s\n", why);
    uint8_t *out = NULL;
    size_t outlen = 0;
    PP_CHECK_INT(pp_builder_pack(m, &out, &outlen), ==, 0);
    Perftools__Profiles__Profile *q = parse(out, outlen, 1 << 20, why, sizeof why);
    PP_CHECK(q != NULL);
    if (!q)
      fprintf(stderr, "  merged profile invalid: %s\n", why);
    else
      perftools__profiles__profile__free_unpacked(q, NULL);
    free(out);
    pp_builder_free(m);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  fprintf(stderr, "  %d corrupted profiles accepted, %d rejected\n", accepted, rejected);
  PP_CHECK(accepted > 0 && rejected > 0);
  free(buf);
  free(raw);
}

int main(void) {
  PP_RUN(test_parse_plain_gzip_and_garbage);
  PP_RUN(test_parse_survives_corruption_and_merge_accepts_what_it_accepts);
  pp_pprof_cache_trim();
  PP_DONE();
}
