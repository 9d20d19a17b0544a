/* Splitting a pprof by sample into pieces within a size and a sample count
 * limit (Grafana Pyroscope's per-profile limits); see pyroscope_split.h. Each
 * piece is built by pp_merge_add_samples, the merge's own remapping, so a
 * piece keeps everything a merge keeps (sample types, period, time,
 * comments, drop/keep_frames, default_sample_type, doc_url, mapping flags)
 * and only the mappings, functions, locations and strings its samples use. */
#include "pyroscope_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_builder.h"
#include "pp_parse.h"
#include "pp_merge.h"
#include "pp_vec.h"

#define PP_SPLIT_PARSE_MAX ((size_t)1 << 30)

typedef struct split_ctx {
  const Perftools__Profiles__Profile *p;
  size_t max_bytes, max_samples;
  pp_piece *out;
  size_t nout, capout;
  char *why;
  size_t whylen;
} split_ctx;

/* Builds the profile of samples [lo, hi) into *out. 0 or -1 (ENOMEM; the
 * profile was validated, so nothing dangles). */
static int build_piece(split_ctx *c, size_t lo, size_t hi, uint8_t **out, size_t *outlen) {
  char why[256];
  pp_builder *b = pp_builder_new();
  int rc = b && pp_merge_add_samples(b, c->p, lo, hi, why, sizeof why) == 0
               ? pp_builder_pack(b, out, outlen)
               : -1;
  pp_builder_free(b);
  return rc;
}

static int emit(split_ctx *c, uint8_t *data, size_t len) {
  if (pp_vec_grow(&c->out, &c->capout, c->nout + 1, sizeof *c->out, 4) != 0)
    return -1;
  c->out[c->nout++] = (pp_piece){data, len};
  return 0;
}

/* Emits samples [lo, hi) as one piece if it fits, else as halves. The
 * depth is log2 of the sample count, so the recursion stays shallow. */
static int split_range(split_ctx *c, size_t lo, size_t hi) {
  uint8_t *data = NULL;
  size_t len = 0;
  if (c->max_samples && hi - lo > c->max_samples) {
    size_t half = lo + (hi - lo) / 2;
    return split_range(c, lo, half) != 0 ? -1 : split_range(c, half, hi);
  }
  if (build_piece(c, lo, hi, &data, &len) != 0) {
    snprintf(c->why, c->whylen, "out of memory splitting a profile of %zu samples", c->p->n_sample);
    return -1;
  }
  if (len <= c->max_bytes) {
    if (emit(c, data, len) != 0) {
      free(data);
      snprintf(c->why, c->whylen, "out of memory splitting a profile");
      return -1;
    }
    return 0;
  }
  free(data);
  if (hi - lo <= 1) {
    snprintf(c->why, c->whylen,
             "sample %zu alone encodes to %zu bytes, over the %zu byte per-profile limit "
             "(raise the server's validation.max-profile-size-bytes and "
             "--pyroscope-max-profile-bytes)",
             lo, len, c->max_bytes);
    return -1;
  }
  size_t mid = lo + (hi - lo) / 2;
  if (split_range(c, lo, mid) != 0)
    return -1;
  return split_range(c, mid, hi);
}

void pp_pieces_free(pp_piece *pieces, size_t n) {
  for (size_t i = 0; pieces && i < n; i++)
    free(pieces[i].data);
  free(pieces);
}

long pp_count_samples(const uint8_t *pprof, size_t len) {
  size_t i = 0;
  long n = 0;
  while (i < len) {
    uint64_t key = 0, v = 0;
    for (int shift = 0;; shift += 7) {
      if (i >= len || shift > 63)
        return -1;
      key |= (uint64_t)(pprof[i] & 0x7f) << shift;
      if (!(pprof[i++] & 0x80))
        break;
    }
    unsigned wt = (unsigned)(key & 7);
    if (wt == 0 || wt == 2) {
      for (int shift = 0;; shift += 7) {
        if (i >= len || shift > 63)
          return -1;
        v |= (uint64_t)(pprof[i] & 0x7f) << shift;
        if (!(pprof[i++] & 0x80))
          break;
      }
      if (wt == 2) {
        if (v > len - i)
          return -1;
        i += (size_t)v;
      }
    } else if (wt == 1 || wt == 5) {
      size_t w = wt == 1 ? 8 : 4;
      if (w > len - i)
        return -1;
      i += w;
    } else {
      return -1;
    }
    if ((key >> 3) == 2)
      n++;
  }
  return n;
}

int pp_split(const uint8_t *pprof, size_t len, size_t max_bytes, pp_piece **pieces, size_t *npieces,
             char *why, size_t whylen) {
  return pp_split_limits(pprof, len, max_bytes, 0, pieces, npieces, why, whylen);
}

int pp_split_limits(const uint8_t *pprof, size_t len, size_t max_bytes, size_t max_samples,
                    pp_piece **pieces, size_t *npieces, char *why, size_t whylen) {
  *pieces = NULL;
  *npieces = 0;
  long nsamples = max_samples ? pp_count_samples(pprof, len) : 0;
  if (len <= max_bytes && nsamples >= 0 && (size_t)nsamples <= max_samples) {
    uint8_t *copy = malloc(len ? len : 1);
    pp_piece *one = malloc(sizeof *one);
    if (!copy || !one) {
      free(copy);
      free(one);
      snprintf(why, whylen, "out of memory");
      return -1;
    }
    if (len)
      memcpy(copy, pprof, len);
    one[0] = (pp_piece){copy, len};
    *pieces = one;
    *npieces = 1;
    return 0;
  }
  char pwhy[256] = "";
  pp_pprof *parsed = pp_pprof_parse(pprof, len, PP_SPLIT_PARSE_MAX, pwhy, sizeof pwhy);
  if (!parsed) {
    snprintf(why, whylen, "cannot split an invalid profile: %s", pwhy);
    return -1;
  }
  const Perftools__Profiles__Profile *p = pp_pprof_profile(parsed);
  split_ctx c = {
      .p = p, .max_bytes = max_bytes, .max_samples = max_samples, .why = why, .whylen = whylen};
  int rc = -1;
  if (p->n_sample == 0) {
    snprintf(why, whylen,
             "profile of %zu bytes has no samples to split by (its tables alone exceed the "
             "%zu byte limit)",
             len, max_bytes);
    goto out;
  }
  /* Start from about the right number of pieces; halving fixes the rest. */
  size_t k = len / max_bytes + 1;
  if (max_samples && (p->n_sample + max_samples - 1) / max_samples > k)
    k = (p->n_sample + max_samples - 1) / max_samples;
  if (k > p->n_sample)
    k = p->n_sample;
  for (size_t i = 0; i < k; i++) {
    size_t lo = p->n_sample * i / k, hi = p->n_sample * (i + 1) / k;
    if (lo < hi && split_range(&c, lo, hi) != 0)
      goto out;
  }
  *pieces = c.out;
  *npieces = c.nout;
  c.out = NULL;
  rc = 0;
out:
  pp_pieces_free(c.out, c.nout);
  pp_pprof_free(parsed);
  return rc;
}
