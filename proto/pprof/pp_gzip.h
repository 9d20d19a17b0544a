/* gzip (RFC 1952) with zlib: compression for the SDK (which adds no other
 * library to its hosts) and bounded decompression for every reader. The
 * sidecar's own compression is igzip's (pp_deflate.h). Thread-safe. */
#ifndef PP_GZIP_H
#define PP_GZIP_H
#include <stddef.h>
#include <stdint.h>

/* gzip (RFC 1952) via zlib. *out malloc'ed. 0 or -1. */
int pp_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen);
/* Fails (-1) if the output would exceed max_out. */
int pp_gunzip(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *outlen);
/* pp_gunzip that writes a one-line reason into why on failure. */
int pp_gunzip_why(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *outlen,
                  char *why, size_t whylen);
#endif
