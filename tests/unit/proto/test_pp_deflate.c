/* proto/pprof/pp_deflate.c, igzip's gzip for the sidecar: what it writes
 * passes zlib's bounded gunzip like pp_gzip's output does, compresses a
 * profile-like input nearly as well, and the into variant reuses and
 * aligns its buffer. */
#include "pp_deflate.h"
#include "pp_gzip.h"
#include "pprof_fixture.h"

static void test_gzip_fast_round_trip_and_limit(void) {
  check_gzip_round_trip_and_limit(pp_gzip_fast);
}

static void test_gzip_fast_ratio_and_reused_buffer(void) {
  /* igzip's level 1 still compresses a profile-like input well. */
  size_t n = 100000;
  uint8_t *in = malloc(n), *a = NULL, *b = NULL;
  size_t alen = 0, blen = 0;
  for (size_t i = 0; i < n; i++)
    in[i] = (uint8_t)("main;parse;lex;next_token "[i % 26] + (i / 2600) % 3);
  PP_CHECK_INT(pp_gzip(in, n, &a, &alen), ==, 0);
  PP_CHECK_INT(pp_gzip_fast(in, n, &b, &blen), ==, 0);
  PP_CHECK(blen < n / 20 && blen <= alen + alen / 10);
  /* Into a reused buffer: the same bytes, in the same buffer while it is
   * big enough, grown for a bigger input, and each result reads back. Every
   * buffer is PP_GZIP_ALIGN-aligned (the file exporter's O_DIRECT wants it). */
  PP_CHECK((uintptr_t)b % PP_GZIP_ALIGN == 0);
  uint8_t *r = NULL, *back = NULL;
  size_t rcap = 0, rlen = 0, backlen = 0;
  PP_CHECK_INT(pp_gzip_fast_into(in, n, &r, &rcap, &rlen), ==, 0);
  PP_CHECK(rlen == blen && r && memcmp(r, b, blen) == 0);
  PP_CHECK((uintptr_t)r % PP_GZIP_ALIGN == 0);
  uint8_t *first = r;
  size_t cap1 = rcap;
  PP_CHECK_INT(pp_gzip_fast_into(in, n / 2, &r, &rcap, &rlen), ==, 0);
  PP_CHECK(r == first && rcap == cap1);
  PP_CHECK_INT(pp_gunzip(r, rlen, n, &back, &backlen), ==, 0);
  PP_CHECK(backlen == n / 2 && back && memcmp(back, in, n / 2) == 0);
  free(back);
  uint8_t *big = malloc(2 * n);
  for (size_t i = 0; big && i < 2 * n; i++)
    big[i] = in[i % n];
  PP_CHECK_INT(pp_gzip_fast_into(big, 2 * n, &r, &rcap, &rlen), ==, 0);
  PP_CHECK(rcap > cap1 && (uintptr_t)r % PP_GZIP_ALIGN == 0);
  back = NULL;
  PP_CHECK_INT(pp_gunzip(r, rlen, 2 * n, &back, &backlen), ==, 0);
  PP_CHECK(backlen == 2 * n && back && big && memcmp(back, big, 2 * n) == 0);
  free(back);
  free(big);
  free(r);
  free(a);
  free(b);
  free(in);
}

int main(void) {
  PP_RUN(test_gzip_fast_round_trip_and_limit);
  PP_RUN(test_gzip_fast_ratio_and_reused_buffer);
  PP_DONE();
}
