/* gzip (RFC 1952) compression and bounded decompression with zlib. */
#include "pp_gzip.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "pp_why.h"

#define GZIP_WINDOW_BITS (15 + 16)   /* 32 KiB window, gzip wrapper */
#define CHUNK_MAX ((size_t)UINT_MAX) /* zlib counts in uInt */
/* zlib's fastest level: whoever gzips with it (the SDK, once per profile)
 * pays for every byte, and higher levels cost twice the CPU or more for
 * output only a little smaller. */
#define GZIP_LEVEL Z_BEST_SPEED

int pp_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen) {
  z_stream z = {0};
  uint8_t *buf = NULL;
  if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return -1;
  size_t cap = deflateBound(&z, (uLong)len);
  if (len > CHUNK_MAX || cap < len || !(buf = malloc(cap)))
    goto fail;
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)len;
  z.next_out = buf;
  z.avail_out = cap > CHUNK_MAX ? (uInt)CHUNK_MAX : (uInt)cap;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    goto fail;
  *outlen = cap - z.avail_out;
  *out = buf;
  deflateEnd(&z);
  return 0;
fail:
  free(buf);
  deflateEnd(&z);
  return -1;
}

int pp_gunzip_why(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *outlen,
                  char *why, size_t whylen) {
  z_stream z = {0};
  uint8_t *buf = NULL;
  size_t cap = 0, used = 0;
  if (max_out > SIZE_MAX / 2)
    max_out = SIZE_MAX / 2;
  if (len > CHUNK_MAX) {
    pp_say(why, whylen, "gzip input of %zu bytes is too large", len);
    return -1;
  }
  if (inflateInit2(&z, GZIP_WINDOW_BITS) != Z_OK) {
    pp_say(why, whylen, "cannot start gzip decompression (out of memory?)");
    return -1;
  }
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)len;
  for (;;) {
    if (used == cap) {
      if (cap >= max_out + 1) {
        pp_say(why, whylen, "gzip data expands to more than the %zu byte limit", max_out);
        goto fail;
      }
      /* One byte beyond the limit tells "exactly max_out" from "more". */
      size_t ncap = cap ? cap * 2 : (len * 4 > 4096 ? len * 4 : 4096);
      if (ncap > max_out + 1 || ncap < cap)
        ncap = max_out + 1;
      uint8_t *nb = realloc(buf, ncap ? ncap : 1);
      if (!nb) {
        pp_say(why, whylen, "out of memory decompressing gzip data");
        goto fail;
      }
      buf = nb;
      cap = ncap;
    }
    size_t room = cap - used;
    z.next_out = buf + used;
    z.avail_out = room > CHUNK_MAX ? (uInt)CHUNK_MAX : (uInt)room;
    uInt before = z.avail_out;
    int zr = inflate(&z, Z_NO_FLUSH);
    used += before - z.avail_out;
    if (zr == Z_STREAM_END) {
      if (z.avail_in == 0)
        break;
      /* Another gzip member follows (concatenated members are one stream). */
      if (inflateReset(&z) != Z_OK) {
        pp_say(why, whylen, "corrupt gzip data after member end");
        goto fail;
      }
      continue;
    }
    if (zr == Z_BUF_ERROR && z.avail_in == 0) {
      pp_say(why, whylen, "truncated gzip data");
      goto fail;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      pp_say(why, whylen, "corrupt gzip data: %s", z.msg ? z.msg : "inflate failed");
      goto fail;
    }
  }
  if (used > max_out) {
    pp_say(why, whylen, "gzip data expands to more than the %zu byte limit", max_out);
    goto fail;
  }
  inflateEnd(&z);
  *out = buf;
  *outlen = used;
  return 0;
fail:
  inflateEnd(&z);
  free(buf);
  return -1;
}

int pp_gunzip(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *outlen) {
  return pp_gunzip_why(in, len, max_out, out, outlen, NULL, 0);
}
