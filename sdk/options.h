/* Reads a caller's pushprof_options, whatever pushprof.h it was compiled
 * with, into the library's own layout (the rule is in pushprof.h, above
 * pushprof_options). Pure function; thread-safe; not async-signal-safe. */
#ifndef PUSHPROF_OPTIONS_H
#define PUSHPROF_OPTIONS_H
#include <stddef.h>

#include "pushprof.h"

/* sizeof(pushprof_options) in pushprof.h 0.1 (no struct_size, hz first),
 * and in the first header that tagged struct_size. */
#define OPTIONS_V0_SIZE 72
#define OPTIONS_V1_SIZE 72
#define OPTIONS_V2_SIZE 88 /* 0.2: profiles, heap_rate */

/* Fills *out from in (NULL: all unset). Returns 0, or PUSHPROF_EINVAL with
 * one line in err (no "pushprof:" prefix, no newline) for a struct_size this
 * library cannot read or a set field it does not know. */
int options_import(const pushprof_options *in, pushprof_options *out, char *err, size_t errlen);
#endif
