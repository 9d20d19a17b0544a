/* The encoder pushprof used before pp_builder_pack.c (protobuf-c structs, then
 * get_packed_size and pack), kept for the tests only: it is the reference
 * the direct encoder's bytes are compared with. */
#include "pp_pack_ref.h"

#include <stdlib.h>
#include <string.h>

#include "pp_builder_tab.h"

int pp_builder_pack_pbc(const pp_builder *b, uint8_t **out, size_t *len) {
  int rc = -1;
  size_t nst = b->sample_types.n / 2;
  Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
  Perftools__Profiles__ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
  Perftools__Profiles__ValueType *st = calloc(nst + 1, sizeof *st);
  Perftools__Profiles__ValueType **stp = calloc(nst + 1, sizeof *stp);
  Perftools__Profiles__Mapping *m = calloc(b->maps.n + 1, sizeof *m);
  Perftools__Profiles__Mapping **mp = calloc(b->maps.n + 1, sizeof *mp);
  Perftools__Profiles__Function *f = calloc(b->funcs.n + 1, sizeof *f);
  Perftools__Profiles__Function **fp = calloc(b->funcs.n + 1, sizeof *fp);
  Perftools__Profiles__Location *l = calloc(b->locs.n + 1, sizeof *l);
  Perftools__Profiles__Location **lp = calloc(b->locs.n + 1, sizeof *lp);
  Perftools__Profiles__Line *ln = calloc(b->lines.n + 1, sizeof *ln);
  Perftools__Profiles__Line **lnp = calloc(b->lines.n + 1, sizeof *lnp);
  Perftools__Profiles__Sample *s = calloc(b->samples.n + 1, sizeof *s);
  Perftools__Profiles__Sample **sp = calloc(b->samples.n + 1, sizeof *sp);
  /* The builder keeps each sample's location ids and labels encoded (see
   * bsample): protobuf-c decodes them, from a Sample message made of them. */
  Perftools__Profiles__Sample **us = calloc(b->samples.n + 1, sizeof *us);
  size_t maxbytes = 0;
  for (size_t i = 0; i < b->samples.n; i++)
    if (b->samples.v[i].locs_len + b->samples.v[i].labs_len > maxbytes)
      maxbytes = b->samples.v[i].locs_len + b->samples.v[i].labs_len;
  uint8_t *sbuf = malloc(maxbytes + 6);
  uint8_t *buf = NULL;
  if (!st || !stp || !m || !mp || !f || !fp || !l || !lp || !ln || !lnp || !s || !sp || !us ||
      !sbuf)
    goto fail;

  for (size_t i = 0; i < nst; i++) {
    perftools__profiles__value_type__init(&st[i]);
    st[i].type = b->sample_types.v[2 * i];
    st[i].unit = b->sample_types.v[2 * i + 1];
    stp[i] = &st[i];
  }
  for (size_t i = 0; i < b->maps.n; i++) {
    const bmapping *bm = &b->maps.v[i];
    perftools__profiles__mapping__init(&m[i]);
    m[i].id = i + 1;
    m[i].memory_start = bm->start;
    m[i].memory_limit = bm->limit;
    m[i].file_offset = bm->offset;
    m[i].filename = bm->file;
    m[i].build_id = bm->build_id;
    m[i].has_functions = (bm->flags & PP_MAPPING_HAS_FUNCTIONS) != 0;
    m[i].has_filenames = (bm->flags & PP_MAPPING_HAS_FILENAMES) != 0;
    m[i].has_line_numbers = (bm->flags & PP_MAPPING_HAS_LINE_NUMBERS) != 0;
    m[i].has_inline_frames = (bm->flags & PP_MAPPING_HAS_INLINE_FRAMES) != 0;
    mp[i] = &m[i];
  }
  for (size_t i = 0; i < b->funcs.n; i++) {
    const bfunction *bf = &b->funcs.v[i];
    perftools__profiles__function__init(&f[i]);
    f[i].id = i + 1;
    f[i].name = bf->name;
    f[i].system_name = bf->system_name;
    f[i].filename = bf->filename;
    f[i].start_line = bf->start_line;
    fp[i] = &f[i];
  }
  for (size_t i = 0; i < b->lines.n; i++) {
    perftools__profiles__line__init(&ln[i]);
    ln[i].function_id = b->lines.v[i].function_id;
    ln[i].line = b->lines.v[i].line;
    lnp[i] = &ln[i];
  }
  for (size_t i = 0; i < b->locs.n; i++) {
    const blocation *bl = &b->locs.v[i];
    perftools__profiles__location__init(&l[i]);
    l[i].id = i + 1;
    l[i].mapping_id = bl->mapping_id;
    l[i].address = bl->address;
    l[i].n_line = bl->nlines;
    l[i].line = bl->nlines ? &lnp[bl->line_off] : NULL;
    lp[i] = &l[i];
  }
  for (size_t i = 0; i < b->samples.n; i++) {
    const bsample *bs = &b->samples.v[i];
    size_t n = 0;
    uint32_t v = bs->locs_len;
    sbuf[n++] = 1 << 3 | 2; /* location_id, packed */
    for (; v >= 0x80; v >>= 7)
      sbuf[n++] = (uint8_t)(v | 0x80);
    sbuf[n++] = (uint8_t)v;
    if (bs->locs_len + bs->labs_len)
      memcpy(sbuf + n, bsample_bytes(bs, nst), bs->locs_len + bs->labs_len);
    n += bs->locs_len + bs->labs_len;
    if (!(us[i] = perftools__profiles__sample__unpack(NULL, n, sbuf)))
      goto fail;
    perftools__profiles__sample__init(&s[i]);
    s[i].n_location_id = us[i]->n_location_id;
    s[i].location_id = us[i]->location_id;
    s[i].n_value = nst;
    s[i].value = nst ? bs->rec : NULL;
    s[i].n_label = us[i]->n_label;
    s[i].label = us[i]->label;
    sp[i] = &s[i];
  }

  p.n_sample_type = nst;
  p.sample_type = stp;
  p.n_sample = b->samples.n;
  p.sample = sp;
  p.n_mapping = b->maps.n;
  p.mapping = mp;
  p.n_location = b->locs.n;
  p.location = lp;
  p.n_function = b->funcs.n;
  p.function = fp;
  p.n_string_table = b->strs.n;
  p.string_table = b->strs.v;
  p.drop_frames = b->drop_frames;
  p.keep_frames = b->keep_frames;
  p.time_nanos = b->time_nanos;
  p.duration_nanos = b->duration_nanos;
  if (b->has_period_type) {
    period_type.type = b->period_type;
    period_type.unit = b->period_unit;
    p.period_type = &period_type;
  }
  p.period = b->period;
  p.n_comment = b->comments.n;
  p.comment = b->comments.v;
  p.default_sample_type = b->default_sample_type;
  p.doc_url = b->doc_url;

  size_t size = perftools__profiles__profile__get_packed_size(&p);
  buf = malloc(size ? size : 1);
  if (!buf)
    goto fail;
  if (perftools__profiles__profile__pack(&p, buf) != size)
    goto fail;
  *out = buf;
  *len = size;
  buf = NULL;
  rc = 0;
fail:
  free(buf);
  for (size_t i = 0; us && i < b->samples.n; i++)
    if (us[i])
      perftools__profiles__sample__free_unpacked(us[i], NULL);
  free(us);
  free(sbuf);
  free(st);
  free(stp);
  free(m);
  free(mp);
  free(f);
  free(fp);
  free(l);
  free(lp);
  free(ln);
  free(lnp);
  free(s);
  free(sp);
  return rc;
}
