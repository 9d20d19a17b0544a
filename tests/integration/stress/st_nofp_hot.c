/* Built with -fomit-frame-pointer (sdk_stress.cmake): see st_mix.h. */
#include "st_mix.h"
#include "st_nofp.h"

ST_MIX_LEAF(, st_nofp_hot)
ST_MIX_OUTER(st_nofp_outer, st_nofp_hot)
