/* gzip compression with ISA-L's igzip, for the reader side (the sidecar
 * and tools; pushprof_proto_read). The sidecar gzips every byte it ingests,
 * once per batch, and igzip's fastest level is several times as fast as
 * libdeflate's and zlib's for output a little larger. The SDK keeps zlib's
 * pp_gzip (pp_gzip.h) so it needs no new library inside its hosts. */
#ifndef PP_DEFLATE_H
#define PP_DEFLATE_H
#include <stddef.h>
#include <stdint.h>

/* The output buffers of pp_gzip_fast and pp_gzip_fast_into are aligned
 * to this many bytes (a write past the page cache wants it). */
#define PP_GZIP_ALIGN 4096
/* One gzip (RFC 1952) member of in; *out allocated (free() it). 0, or -1
 * (out of memory). pp_gunzip reads it. */
int pp_gzip_fast(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen);
/* pp_gzip_fast into *buf of *cap bytes (NULL and 0: none yet), replaced by
 * a bigger one (its contents not kept) when short, so a caller that
 * compresses batch after batch reuses one buffer and its pages. 0, or -1
 * (out of memory; *buf and *cap stay valid). */
int pp_gzip_fast_into(const uint8_t *in, size_t len, uint8_t **buf, size_t *cap, size_t *outlen);
#endif
