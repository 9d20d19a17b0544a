/* pprof validation with the rules `go tool pprof` applies when it reads a
 * profile. Thread-safe. */
#ifndef PP_VALIDATE_H
#define PP_VALIDATE_H
#include <stddef.h>

#include "profile.pb-c.h"

/* Validation: 0 if p is a profile go tool pprof accepts, else -1 with a
 * one-line reason written to why. */
int pp_pprof_validate(const Perftools__Profiles__Profile *p, char *why, size_t whylen);
#endif
