/* Test-only: proto/pp_decode.c compiled again without its SSE2 path, under
 * other names (pp_decode_ref.h), so that the portable code that non-x86
 * builds run is compared with protobuf-c on x86 too. */
#define PP_DECODE_NO_SIMD 1
#define pp_pprof_decode pp_pprof_decode_scalar
#define pp_wire_next pp_wire_next_scalar
#include "pp_decode.c"
