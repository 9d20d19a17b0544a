/* pp_builder_pack: the pprof wire format (profile.proto) written straight
 * from the builder's tables, without protobuf-c's structs, in one pass into
 * one malloc. The buffer's size is an upper bound computed from the tables'
 * counts alone (pack_bound: every varint at its widest, ids and string
 * indices at the width of the largest one), so it costs no pass over the
 * data; the buffer is shrunk to the bytes written at the end. Each nested
 * message is sized (exactly) just before it is written, for its length
 * prefix and to check that it fits, so a bound that was wrong would fail
 * the pack, never overrun the buffer.
 *
 * Samples' location ids and labels are copied as the builder stored them,
 * already encoded (see bsample in pp_builder_tab.h).
 *
 * The bytes are the ones protobuf-c's pack makes of the same profile (the
 * unit test compares them with that reference): fields in field-number
 * order, proto3 scalars left out when zero, repeated scalars packed (and
 * left out when empty), every string-table entry written (even ""), and
 * period_type written whenever the builder has one. Every field number
 * here is at most 15, so each tag is one byte. */
#include "pp_builder_tab.h"
#include "pp_varint.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* A length-delimited field's tag: field number << 3 | 2 (pp_put_field
 * writes varint fields' tags). */
#define TAG_LEN(f) ((uint8_t)((f) << 3 | 2))

/* Profile fields. */
enum {
  PROFILE_SAMPLE_TYPE = 1,
  PROFILE_SAMPLE = 2,
  PROFILE_MAPPING = 3,
  PROFILE_LOCATION = 4,
  PROFILE_FUNCTION = 5,
  PROFILE_STRING_TABLE = 6,
  PROFILE_DROP_FRAMES = 7,
  PROFILE_KEEP_FRAMES = 8,
  PROFILE_TIME_NANOS = 9,
  PROFILE_DURATION_NANOS = 10,
  PROFILE_PERIOD_TYPE = 11,
  PROFILE_PERIOD = 12,
  PROFILE_COMMENT = 13,
  PROFILE_DEFAULT_SAMPLE_TYPE = 14,
  PROFILE_DOC_URL = 15,
};
/* ValueType: type 1, unit 2. Sample: location_id 1, value 2, label 3.
 * Label: key 1, str 2, num 3, num_unit 4. Mapping: id 1, memory_start 2,
 * memory_limit 3, file_offset 4, filename 5, build_id 6, has_functions 7,
 * has_filenames 8, has_line_numbers 9, has_inline_frames 10. Location: id 1,
 * mapping_id 2, address 3, line 4. Line: function_id 1, line 2. Function:
 * id 1, name 2, system_name 3, filename 4, start_line 5. */

/* A scalar field's bytes, 0 when it is left out (zero). */
static inline size_t field_size(uint64_t v) {
  return v ? 1 + pp_varint_size(v) : 0;
}

/* A length-delimited field's bytes around a body of len bytes. */
static inline size_t len_field_size(size_t len) {
  return 1 + pp_varint_size(len) + len;
}

static inline uint8_t *put_len(uint8_t *p, unsigned field, size_t len) {
  *p++ = TAG_LEN(field);
  return pp_put_varint(p, len);
}

/* ---- message sizes (bodies, without their own tag and length) ----
 * A pool (sample_locs, lines, ...) is NULL until something is added to it,
 * so an offset into one is taken only for a count above 0. */

static size_t value_type_size(int64_t type, int64_t unit) {
  return field_size((uint64_t)type) + field_size((uint64_t)unit);
}

static size_t packed_i64_size(const int64_t *v, size_t n) {
  size_t s = 0;
  for (size_t i = 0; i < n; i++)
    s += pp_varint_size((uint64_t)v[i]);
  return s;
}

/* A sample's body; *vals_len gets its packed values' body. Its location ids
 * and labels are stored encoded (see bsample). */
static size_t sample_size(const bsample *s, size_t nvalues, size_t *vals_len) {
  size_t n = s->labs_len;
  *vals_len = packed_i64_size(s->rec, nvalues);
  if (s->locs_len)
    n += len_field_size(s->locs_len);
  if (nvalues)
    n += len_field_size(*vals_len);
  return n;
}

static size_t mapping_size(const bmapping *m, uint64_t id) {
  return field_size(id) + field_size(m->start) + field_size(m->limit) + field_size(m->offset) +
         field_size((uint64_t)m->file) + field_size((uint64_t)m->build_id) +
         2 * (size_t)__builtin_popcount(m->flags & 15u);
}

static size_t line_size(const bline *l) {
  return field_size(l->function_id) + field_size((uint64_t)l->line);
}

static size_t location_size(const pp_builder *b, const blocation *l, uint64_t id) {
  size_t n = field_size(id) + field_size(l->mapping_id) + field_size(l->address);
  const bline *ln = l->nlines ? &b->lines.v[l->line_off] : NULL;
  for (size_t i = 0; i < l->nlines; i++)
    n += len_field_size(line_size(&ln[i]));
  return n;
}

static size_t function_size(const bfunction *f, uint64_t id) {
  return field_size(id) + field_size((uint64_t)f->name) + field_size((uint64_t)f->system_name) +
         field_size((uint64_t)f->filename) + field_size((uint64_t)f->start_line);
}

/* n += count * per, saturating at SIZE_MAX (then the malloc fails). */
static void bound_add(size_t *n, size_t count, size_t per) {
  size_t x;
  if (__builtin_mul_overflow(count, per, &x) || __builtin_add_overflow(*n, x, n))
    *n = SIZE_MAX;
}

/* At least the bytes pp_builder_pack writes. A nested message's or packed
 * field's tag and length take at most 1 + 10 bytes (f), so does a scalar
 * field, a packed element at most 10; a sample's location ids and labels
 * are written as stored (sample_bytes), and a string index (a mapping's, a
 * function's) is below strs.n, as the builder checks when they are added
 * (ix: tag and index). */
static size_t pack_bound(const pp_builder *b) {
  const size_t f = 11, ix = 1 + pp_varint_size(b->strs.n), nst = b->sample_types.n / 2;
  size_t n = 0;
  bound_add(&n, nst, f + 2 * f);                        /* sample_type */
  bound_add(&n, b->samples.n, 3 * f + nst * 10);        /* sample, location_id, value */
  bound_add(&n, 1, b->sample_bytes);                    /* location ids and labels, as written */
  bound_add(&n, b->maps.n, f + 4 * f + 2 * ix + 4 * 2); /* 4 numbers, 2 strings, flags */
  bound_add(&n, b->locs.n, f + 3 * f);                  /* id, mapping_id, address */
  bound_add(&n, b->lines.n, f + 2 * f);                 /* function_id, line */
  bound_add(&n, b->funcs.n, f + 2 * f + 3 * ix);        /* id, 3 strings, start_line */
  bound_add(&n, b->strs.n, f);                          /* string_table, */
  bound_add(&n, 1, b->str_chars);                       /* with its bytes */
  bound_add(&n, 1, 7 * f + f + 2 * f + f);              /* scalars, period_type */
  bound_add(&n, b->comments.n, 10);
  return n;
}

/* ---- writing ---- */

static uint8_t *put_value_type(uint8_t *p, unsigned field, int64_t type, int64_t unit) {
  p = put_len(p, field, value_type_size(type, unit));
  p = pp_put_field(p, 1, (uint64_t)type);
  return pp_put_field(p, 2, (uint64_t)unit);
}

static uint8_t *put_sample(uint8_t *p, const bsample *s, size_t nvalues, size_t body,
                           size_t vals_len) {
  const uint8_t *bytes = bsample_bytes(s, nvalues);
  p = put_len(p, PROFILE_SAMPLE, body);
  if (s->locs_len) {
    p = put_len(p, 1, s->locs_len);
    memcpy(p, bytes, s->locs_len);
    p += s->locs_len;
  }
  if (nvalues) {
    const int64_t *v = s->rec;
    p = put_len(p, 2, vals_len);
    for (size_t i = 0; i < nvalues; i++)
      p = pp_put_varint(p, (uint64_t)v[i]);
  }
  if (s->labs_len) {
    memcpy(p, bytes + s->locs_len, s->labs_len);
    p += s->labs_len;
  }
  return p;
}

static uint8_t *put_mapping(uint8_t *p, const bmapping *m, uint64_t id, size_t body) {
  p = put_len(p, PROFILE_MAPPING, body);
  p = pp_put_field(p, 1, id);
  p = pp_put_field(p, 2, m->start);
  p = pp_put_field(p, 3, m->limit);
  p = pp_put_field(p, 4, m->offset);
  p = pp_put_field(p, 5, (uint64_t)m->file);
  p = pp_put_field(p, 6, (uint64_t)m->build_id);
  p = pp_put_field(p, 7, (m->flags & PP_MAPPING_HAS_FUNCTIONS) != 0);
  p = pp_put_field(p, 8, (m->flags & PP_MAPPING_HAS_FILENAMES) != 0);
  p = pp_put_field(p, 9, (m->flags & PP_MAPPING_HAS_LINE_NUMBERS) != 0);
  return pp_put_field(p, 10, (m->flags & PP_MAPPING_HAS_INLINE_FRAMES) != 0);
}

static uint8_t *put_location(uint8_t *p, const pp_builder *b, const blocation *l, uint64_t id,
                             size_t body) {
  p = put_len(p, PROFILE_LOCATION, body);
  p = pp_put_field(p, 1, id);
  p = pp_put_field(p, 2, l->mapping_id);
  p = pp_put_field(p, 3, l->address);
  const bline *ln = l->nlines ? &b->lines.v[l->line_off] : NULL;
  for (size_t i = 0; i < l->nlines; i++) {
    p = put_len(p, 4, line_size(&ln[i]));
    p = pp_put_field(p, 1, ln[i].function_id);
    p = pp_put_field(p, 2, (uint64_t)ln[i].line);
  }
  return p;
}

static uint8_t *put_function(uint8_t *p, const bfunction *f, uint64_t id, size_t body) {
  p = put_len(p, PROFILE_FUNCTION, body);
  p = pp_put_field(p, 1, id);
  p = pp_put_field(p, 2, (uint64_t)f->name);
  p = pp_put_field(p, 3, (uint64_t)f->system_name);
  p = pp_put_field(p, 4, (uint64_t)f->filename);
  return pp_put_field(p, 5, (uint64_t)f->start_line);
}

/* Bytes of the fields after the string table. */
static size_t tail_size(const pp_builder *b) {
  size_t n = field_size((uint64_t)b->drop_frames) + field_size((uint64_t)b->keep_frames) +
             field_size((uint64_t)b->time_nanos) + field_size((uint64_t)b->duration_nanos) +
             field_size((uint64_t)b->period) + field_size((uint64_t)b->default_sample_type) +
             field_size((uint64_t)b->doc_url);
  if (b->has_period_type)
    n += len_field_size(value_type_size(b->period_type, b->period_unit));
  if (b->comments.n)
    n += len_field_size(packed_i64_size(b->comments.v, b->comments.n));
  return n;
}

/* Room at p (before end) for a field of body bytes with its tag and length. */
#define ROOM(body) (len_field_size(body) <= (size_t)(end - p))

/* Encodes b into buf, of at least pack_bound(b) bytes; the length, or
 * SIZE_MAX if the bound was wrong (a bug). */
static size_t pack_into(const pp_builder *b, uint8_t *buf, size_t bound) {
  size_t nst = b->sample_types.n / 2, body, vals_len;
  uint8_t *p = buf, *end = buf + bound;
  for (size_t i = 0; i < nst; i++) {
    int64_t type = b->sample_types.v[2 * i], unit = b->sample_types.v[2 * i + 1];
    if (!ROOM(value_type_size(type, unit)))
      goto overrun;
    p = put_value_type(p, PROFILE_SAMPLE_TYPE, type, unit);
  }
  for (size_t i = 0; i < b->samples.n; i++) {
    const bsample *s = &b->samples.v[i];
    if (!ROOM(body = sample_size(s, nst, &vals_len)))
      goto overrun;
    p = put_sample(p, s, nst, body, vals_len);
  }
  for (size_t i = 0; i < b->maps.n; i++) {
    if (!ROOM(body = mapping_size(&b->maps.v[i], i + 1)))
      goto overrun;
    p = put_mapping(p, &b->maps.v[i], i + 1, body);
  }
  for (size_t i = 0; i < b->locs.n; i++) {
    if (!ROOM(body = location_size(b, &b->locs.v[i], i + 1)))
      goto overrun;
    p = put_location(p, b, &b->locs.v[i], i + 1, body);
  }
  for (size_t i = 0; i < b->funcs.n; i++) {
    if (!ROOM(body = function_size(&b->funcs.v[i], i + 1)))
      goto overrun;
    p = put_function(p, &b->funcs.v[i], i + 1, body);
  }
  for (size_t i = 0; i < b->strs.n; i++) {
    if (!ROOM(body = bstr_len(b->strs.v[i])))
      goto overrun;
    p = put_len(p, PROFILE_STRING_TABLE, body);
    memcpy(p, b->strs.v[i], body);
    p += body;
  }
  if (tail_size(b) > (size_t)(end - p))
    goto overrun;
  p = pp_put_field(p, PROFILE_DROP_FRAMES, (uint64_t)b->drop_frames);
  p = pp_put_field(p, PROFILE_KEEP_FRAMES, (uint64_t)b->keep_frames);
  p = pp_put_field(p, PROFILE_TIME_NANOS, (uint64_t)b->time_nanos);
  p = pp_put_field(p, PROFILE_DURATION_NANOS, (uint64_t)b->duration_nanos);
  if (b->has_period_type)
    p = put_value_type(p, PROFILE_PERIOD_TYPE, b->period_type, b->period_unit);
  p = pp_put_field(p, PROFILE_PERIOD, (uint64_t)b->period);
  if (b->comments.n) {
    p = put_len(p, PROFILE_COMMENT, packed_i64_size(b->comments.v, b->comments.n));
    for (size_t i = 0; i < b->comments.n; i++)
      p = pp_put_varint(p, (uint64_t)b->comments.v[i]);
  }
  p = pp_put_field(p, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)b->default_sample_type);
  p = pp_put_field(p, PROFILE_DOC_URL, (uint64_t)b->doc_url);
  return (size_t)(p - buf);
overrun: /* pack_bound is wrong: a bug */
  assert(!"pp_pack: pack_bound too small");
  return SIZE_MAX;
}

int pp_builder_pack(pp_builder *b, uint8_t **out, size_t *len) {
  size_t bound = pack_bound(b), used;
  uint8_t *buf = bound < SIZE_MAX ? malloc(bound) : NULL;
  if (!buf)
    return -1;
  if ((used = pack_into(b, buf, bound)) == SIZE_MAX) {
    free(buf);
    return -1;
  }
  uint8_t *fit = realloc(buf, used); /* glibc shrinks in place */
  *out = fit ? fit : buf;
  *len = used;
  return 0;
}

int pp_builder_pack_reuse(pp_builder *b, uint8_t **buf, size_t *cap, size_t *len) {
  size_t bound = pack_bound(b);
  if (bound == SIZE_MAX)
    return -1;
  if (!*buf || *cap < bound) {
    free(*buf);
    *cap = 0;
    if (!(*buf = malloc(bound)))
      return -1;
    *cap = bound;
  }
  size_t used = pack_into(b, *buf, *cap);
  if (used == SIZE_MAX)
    return -1;
  *len = used;
  return 0;
}
