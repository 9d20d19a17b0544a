/* gzip compression with ISA-L's igzip (pp_deflate.h). */
#include "pp_deflate.h"

#include <isa-l/igzip_lib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* igzip's level 1: several times as fast as libdeflate's and zlib's fastest
 * levels for output a little larger (docs/performance.md). The stream and
 * its level buffer (~360 KiB) are allocated per call: no state outlives it
 * (batcher and exporter threads gzip concurrently), and their pages cost
 * little next to compressing a batch. */
#define IGZIP_LEVEL 1
#define IGZIP_LEVEL_BUF ISAL_DEF_LVL1_DEFAULT

int pp_gzip_fast(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen) {
  uint8_t *buf = NULL;
  size_t cap = 0;
  if (pp_gzip_fast_into(in, len, &buf, &cap, outlen) != 0) {
    free(buf);
    return -1;
  }
  *out = buf;
  return 0;
}

int pp_gzip_fast_into(const uint8_t *in, size_t len, uint8_t **bufp, size_t *capp, size_t *outlen) {
  int rc = -1;
  struct isal_zstream *s = malloc(sizeof *s);
  uint8_t *lbuf = malloc(IGZIP_LEVEL_BUF);
  /* Stored blocks at worst: 5 bytes per 64 KiB block, plus the header. */
  size_t want = len + len / 8192 + 1024;
  uint8_t *buf = *bufp;
  size_t cap = *capp;
  if (!s || !lbuf || want <= len)
    goto out;
  if (!buf || cap < want) {
    /* A new buffer, not realloc (nothing in it is kept), aligned to 4 KiB:
     * the file exporter writes it past the page cache (O_DIRECT). */
    void *nb = NULL;
    if (posix_memalign(&nb, PP_GZIP_ALIGN, want) != 0)
      goto out;
    free(buf);
    *bufp = buf = nb;
    *capp = cap = want;
  }
  isal_deflate_init(s);
  s->level = IGZIP_LEVEL;
  s->level_buf = lbuf;
  s->level_buf_size = IGZIP_LEVEL_BUF;
  s->gzip_flag = IGZIP_GZIP;
  s->flush = NO_FLUSH;
  /* avail_in/avail_out are 32-bit: feed and drain in slices. */
  const uint8_t *ip = in;
  size_t left = len, done = 0;
  bool stalled = false;
  for (;;) {
    uint32_t in_slice = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
    s->next_in = (uint8_t *)ip;
    s->avail_in = in_slice;
    s->end_of_stream = left == in_slice;
    if (cap - done < 64 || stalled) { /* never trust the bound: grow */
      size_t ncap = cap + cap / 2 + 1024;
      uint8_t *nb = ncap > cap ? realloc(buf, ncap) : NULL;
      if (!nb)
        goto out;
      *bufp = buf = nb;
      *capp = cap = ncap;
    }
    size_t room = cap - done;
    s->next_out = buf + done;
    s->avail_out = room > UINT32_MAX ? UINT32_MAX : (uint32_t)room;
    uint32_t out_before = s->avail_out;
    if (isal_deflate(s) != COMP_OK)
      goto out;
    size_t made = out_before - s->avail_out, used = in_slice - s->avail_in;
    done += made;
    ip += used;
    left -= used;
    if (s->internal_state.state == ZSTATE_END)
      break;
    stalled = made == 0 && used == 0; /* it wants more room than is left */
  }
  *outlen = done;
  rc = 0;
out:
  free(lbuf);
  free(s);
  return rc;
}
