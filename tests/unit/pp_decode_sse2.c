/* Test-only: proto/pp_decode.c compiled again with its SSE2 path but
 * without the AVX-512 one, under other names (pp_decode_ref.h), so that
 * the SSE2 code that CPUs without VBMI2 run is compared with protobuf-c on
 * CPUs that have it too. */
#define PP_DECODE_NO_AVX512 1
#define pp_pprof_decode pp_pprof_decode_sse2
#define pp_wire_next pp_wire_next_sse2
#include "pp_decode.c"
