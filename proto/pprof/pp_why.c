#include "pp_why.h"

#include <stdarg.h>
#include <stdio.h>

void pp_say(char *why, size_t whylen, const char *fmt, ...) {
  if (!why || whylen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}
