/* The Pyroscope exporter's pure parts. First input byte even: the rest is a
 * pprof; what pp_pprof_parse accepts is merged and packed (as the batcher
 * does) and split by pp_split under a small size limit (second byte):
 * every piece must fit, validate, and together the pieces must hold exactly
 * the samples and value sums of the whole. Odd: the rest is a service line
 * and KEY=VALUE lines within the sidecar's push limits, given to
 * pyroscope_series_labels (for a heap batch when the first byte's bit 1 is
 * set): the result must be a valid Pyroscope label set. */
#include <stdbool.h>
#include <string.h>

#include "exporter_pyroscope.h"
#include "fuzz_target.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pp_merge.h"
#include "pp_parse_ref.h"

#define MAX_UNPACKED (1u << 20)

static void sums(const Perftools__Profiles__Profile *p, uint64_t *s, size_t n) {
  for (size_t i = 0; i < p->n_sample; i++)
    for (size_t j = 0; j < p->sample[i]->n_value && j < n; j++)
      s[j] += (uint64_t)p->sample[i]->value[j];
}

static void check_split(const uint8_t *data, size_t size) {
  if (size < 1)
    return;
  size_t max_bytes = 64 + (size_t)data[0] * 16;
  char why[256] = "";
  Perftools__Profiles__Profile *p = pp_ref_parse(data + 1, size - 1, MAX_UNPACKED, why, sizeof why);
  if (!p)
    return;
  pp_builder *b = pp_builder_new();
  FUZZ_CHECK(b != NULL, "out of memory");
  uint8_t *whole = NULL;
  size_t wlen = 0;
  int merged = pp_merge_add(b, p, why, sizeof why) == 0 && pp_builder_pack(b, &whole, &wlen) == 0;
  pp_builder_free(b);
  perftools__profiles__profile__free_unpacked(p, NULL);
  if (!merged) /* fuzz_pprof reports merge failures */
    return;
  Perftools__Profiles__Profile *w = pp_ref_parse(whole, wlen, wlen + 1, why, sizeof why);
  if (!w) { /* fuzz_pprof reports merge output that does not validate */
    free(whole);
    return;
  }

  pp_piece *pieces = NULL;
  size_t n = 0;
  why[0] = '\0';
  if (pp_split(whole, wlen, max_bytes, &pieces, &n, why, sizeof why) != 0) {
    FUZZ_CHECK(why[0] != '\0', "a refused split must say why");
    FUZZ_CHECK(pieces == NULL && n == 0, "a refused split returned pieces");
  } else {
    FUZZ_CHECK(n >= 1, "no pieces");
    size_t nt = w->n_sample_type, samples = 0;
    uint64_t *want = calloc(nt + 1, sizeof *want), *got = calloc(nt + 1, sizeof *got);
    FUZZ_CHECK(want && got, "out of memory");
    sums(w, want, nt);
    for (size_t i = 0; i < n; i++) {
      FUZZ_CHECK(pieces[i].len <= max_bytes, "piece %zu of %zu: %zu bytes over %zu", i, n,
                 pieces[i].len, max_bytes);
      Perftools__Profiles__Profile *q =
          pp_ref_parse(pieces[i].data, pieces[i].len, pieces[i].len + 1, why, sizeof why);
      FUZZ_CHECK(q != NULL, "piece %zu of %zu does not validate: %s", i, n, why);
      FUZZ_CHECK(q->n_sample_type == nt, "piece %zu has %zu sample types, want %zu", i,
                 q->n_sample_type, nt);
      FUZZ_CHECK(q->period == w->period, "piece %zu changed the period", i);
      samples += q->n_sample;
      sums(q, got, nt);
      perftools__profiles__profile__free_unpacked(q, NULL);
    }
    FUZZ_CHECK(samples == w->n_sample, "%zu samples split into %zu", w->n_sample, samples);
    for (size_t j = 0; j < nt; j++)
      FUZZ_CHECK(got[j] == want[j], "sample type %zu: sum %llu split into %llu", j,
                 (unsigned long long)want[j], (unsigned long long)got[j]);
    free(want);
    free(got);
    pp_pieces_free(pieces, n);
  }
  perftools__profiles__profile__free_unpacked(w, NULL);
  free(whole);
}

/* Strict UTF-8 as Go's utf8.ValidString: no overlongs, surrogates or > U+10FFFF. */
static int utf8_valid(const unsigned char *s) {
  while (*s) {
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80) {
      s++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return 0;
    }
    for (size_t i = 1; i <= n; i++) {
      if ((s[i] & 0xc0) != 0x80)
        return 0;
      cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    s += n + 1;
  }
  return 1;
}

static void check_labels(const uint8_t *data, size_t size, bool heap) {
  Pushprof__V1__Label lab[PP_LABELS_MAX], *labp[PP_LABELS_MAX];
  char *owned[2 * PP_LABELS_MAX + 1];
  size_t nowned = 0, nl = 0;
  char *service = NULL;
  const uint8_t *p = data, *end = data + size;
  while (p < end && nl < PP_LABELS_MAX) {
    const uint8_t *nl_at = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *lend = nl_at ? nl_at : end;
    if (!service) {
      /* What pp_push_decode lets through: 1..128 bytes (NUL ends a string). */
      size_t l = (size_t)(lend - p) > PP_SERVICE_MAX ? PP_SERVICE_MAX : (size_t)(lend - p);
      service = owned[nowned++] = strndup((const char *)p, l ? l : 1);
      FUZZ_CHECK(service != NULL, "out of memory");
    } else {
      const uint8_t *eq = memchr(p, '=', (size_t)(lend - p));
      if (eq) {
        size_t kl = (size_t)(eq - p), vl = (size_t)(lend - eq - 1);
        kl = kl > PP_LABEL_KEY_MAX ? PP_LABEL_KEY_MAX : kl;
        vl = vl > PP_LABEL_VALUE_MAX ? PP_LABEL_VALUE_MAX : vl;
        lab[nl] = (Pushprof__V1__Label)PUSHPROF__V1__LABEL__INIT;
        lab[nl].key = owned[nowned++] = strndup((const char *)p, kl);
        lab[nl].value = owned[nowned++] = strndup((const char *)eq + 1, vl);
        FUZZ_CHECK(lab[nl].key && lab[nl].value, "out of memory");
        labp[nl] = &lab[nl];
        nl++;
      }
    }
    p = nl_at ? nl_at + 1 : end;
  }
  pyroscope_label *out = NULL;
  size_t nout = 0;
  char notes[1024];
  int rc = pyroscope_series_labels(service, heap ? "heap" : "", labp, nl, &out, &nout, notes,
                                   sizeof notes);
  FUZZ_CHECK(rc == 0, "pyroscope_series_labels failed");
  FUZZ_CHECK(nout >= 2 && nout <= PYROSCOPE_MAX_LABELS, "%zu labels", nout);
  int have_name = 0, have_service = 0;
  for (size_t i = 0; i < nout; i++) {
    const char *k = out[i].name, *v = out[i].value;
    FUZZ_CHECK(k && v, "label %zu is NULL", i);
    FUZZ_CHECK(pyroscope_label_name_valid(k), "invalid label name \"%s\"", k);
    FUZZ_CHECK(strlen(k) <= PYROSCOPE_MAX_LABEL_NAME, "label name of %zu bytes", strlen(k));
    FUZZ_CHECK(strlen(v) <= PYROSCOPE_MAX_LABEL_VALUE, "label value of %zu bytes", strlen(v));
    FUZZ_CHECK(v[0] != '\0', "label %s has an empty value", k);
    FUZZ_CHECK(utf8_valid((const unsigned char *)v), "label %s: value is not valid UTF-8", k);
    if (i > 0)
      FUZZ_CHECK(strcmp(out[i - 1].name, k) < 0, "labels not sorted or repeated: %s, %s",
                 out[i - 1].name, k);
    have_name |= strcmp(k, "__name__") == 0 && strcmp(v, heap ? "memory" : "process_cpu") == 0;
    have_service |= strcmp(k, "service_name") == 0;
  }
  FUZZ_CHECK(have_name && have_service, "__name__ or service_name missing");
  pyroscope_labels_free(out, nout);
  for (size_t i = 0; i < nowned; i++)
    free(owned[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (data[0] & 1)
    check_labels(data + 1, size - 1, (data[0] & 2) != 0);
  else
    check_split(data + 1, size - 1);
  return 0;
}
