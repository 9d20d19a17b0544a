/* proto/pprof/pp_gzip.c, zlib's gzip for the SDK and the bounded gunzip
 * for every reader: round trip, the output limit, truncated and corrupt
 * input, a decompression bomb, incompressible and empty input. */
#include "pp_gzip.h"
#include "pprof_fixture.h"

static void test_gzip_round_trip_and_limit(void) {
  check_gzip_round_trip_and_limit(pp_gzip);
}

int main(void) {
  PP_RUN(test_gzip_round_trip_and_limit);
  PP_DONE();
}
