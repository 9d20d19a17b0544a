/* One-line reasons: every check of the proto library that refuses input
 * writes why into a caller's buffer, which may be NULL. */
#ifndef PP_WHY_H
#define PP_WHY_H
#include <stddef.h>

/* vsnprintf into why (whylen bytes); nothing if why is NULL or whylen 0. */
void pp_say(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
