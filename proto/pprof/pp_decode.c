/* A decoder for profile.proto specialised by hand: it fills the same
 * protobuf-c structs as perftools__profiles__profile__unpack, in a pp_pprof
 * arena, several times faster than protobuf-c's descriptor-driven unpack.
 *
 * The contract is protobuf-c 1.4's (protobuf-c.c, protobuf_c_message_unpack
 * and what it calls), input for input, so that a profile decodes the same
 * whichever decoder a reader uses (tests/unit/proto/test_pp_decode.c and
 * tests/fuzz/fuzz_pprof.c compare the two):
 *  - a tag is at most 5 bytes; a first byte without tag bits is an error, but
 *    a longer encoding of tag 0 is just an unknown field; wire types 3, 4
 *    (groups), 6 and 7 are errors, known field or not;
 *  - a varint is at most 10 bytes (the bits past 64 are dropped); a length
 *    prefix at most 5 bytes and at most INT_MAX, and it must fit;
 *  - a known scalar field with another wire type than its own is an error,
 *    except a bool, which protobuf-c reads as "any of the field's bytes after
 *    the tag has a bit other than 0x80 set" whatever the wire type (prefix
 *    bytes included);
 *  - repeated scalars may come packed, unpacked or both, in any order;
 *  - a repeated non-packed scalar or sub-message repeats; a singular scalar
 *    given twice keeps the last; a singular sub-message given twice
 *    (period_type) keeps the last whole: protobuf-c "merges" the two, but
 *    for proto3 scalars its merge reads the message's first word as a has
 *    flag, which is never zero, so the earlier fields are never taken;
 *  - strings are copied with a NUL appended (embedded NULs kept);
 *  - at most 2^27 - 16 fields per message (protobuf-c's slabs).
 * Unknown fields are checked like known ones and skipped: nothing reads them
 * (protobuf-c keeps them; base.n_unknown_fields is 0 here). One corner is
 * not copied: protobuf-c keeps a repeated field's count in an unsigned int
 * while it allocates, which would go wrong past 2^32 elements; those need
 * over 4 GiB of input, far past any limit a caller sets.
 * The message depth is fixed (Profile > Sample > Label, Profile > Location >
 * Line), so nothing recurses. A message is read twice: once to check its
 * framing and count its repeated fields, once to fill arrays carved from
 * the arena; a sample (most of a profile) is read once into scratch arrays
 * and copied, unless it does not fit them. Allocation failures return NULL
 * with the arena's oom flag set. */
#include "pp_decode.h"

#include <limits.h>
#include <string.h>

#define WT_VARINT 0
#define WT_64BIT 1
#define WT_LEN 2
#define WT_32BIT 5
#define MAX_FIELDS PP_WIRE_MAX_FIELDS

typedef struct fld {
  uint32_t num;
  unsigned wt;
  uint64_t v;         /* WT_VARINT: the value */
  const uint8_t *raw; /* what follows the tag, rawlen bytes (a bool reads it) */
  size_t rawlen;
  const uint8_t *data; /* WT_LEN: the payload */
  size_t len;
} fld;

/* The varint at p of at most max bytes (rem bytes readable): its length,
 * or 0 if it does not end in time. Values of 1 and 2 bytes are read inline. */
static __attribute__((noinline)) size_t varint_slow(const uint8_t *p, size_t rem, size_t max,
                                                    uint64_t *out) {
  if (max > rem)
    max = rem;
  uint64_t v = 0;
  for (size_t i = 0; i < max; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *out = v;
      return i + 1;
    }
  }
  return 0;
}

/* A varint of at most max bytes: its length, or 0 (malformed). */
static inline __attribute__((always_inline)) size_t varint(const uint8_t *p, size_t rem, size_t max,
                                                           uint64_t *v) {
  if (rem >= 1 && p[0] < 0x80) {
    *v = p[0];
    return 1;
  }
  if (rem >= 2 && p[1] < 0x80) { /* p[0] >= 0x80 */
    *v = (p[0] & 0x7f) | (uint64_t)p[1] << 7;
    return 2;
  }
  return varint_slow(p, rem, max, v);
}

/* Reads the field at *pp (< end) and moves *pp past it; false if malformed.
 * Inlined: it is most of the work, and the callers' switch follows it. */
static inline __attribute__((always_inline)) bool next_field(const uint8_t **pp, const uint8_t *end,
                                                             fld *f) {
  const uint8_t *p = *pp;
  size_t rem = (size_t)(end - p);
  uint32_t b = *p++;
  if ((b & 0xf8) == 0)
    return false;
  f->wt = b & 7;
  uint32_t tag = (b & 0x7f) >> 3;
  if (b & 0x80) {
    size_t max = rem < 5 ? rem : 5; /* tag bytes, the first included */
    unsigned shift = 4;
    for (size_t i = 1;; i++) {
      if (i >= max)
        return false;
      uint32_t c = *p++;
      tag |= (c & 0x7f) << shift;
      if (!(c & 0x80))
        break;
      shift += 7;
    }
  }
  f->num = tag;
  rem = (size_t)(end - p);
  f->raw = p;
  if (f->wt == WT_VARINT) {
    if (!(f->rawlen = varint(p, rem, 10, &f->v)))
      return false;
  } else if (f->wt == WT_LEN) {
    uint64_t v;
    size_t hdr = varint(p, rem, 5, &v);
    if (!hdr || v > INT_MAX || v > rem - hdr)
      return false;
    f->data = p + hdr;
    f->len = (size_t)v;
    f->rawlen = hdr + (size_t)v;
  } else if (f->wt == WT_64BIT) {
    if (rem < 8)
      return false;
    f->rawlen = 8;
  } else if (f->wt == WT_32BIT) {
    if (rem < 4)
      return false;
    f->rawlen = 4;
  } else {
    return false;
  }
  *pp = p + f->rawlen;
  return true;
}

/* protobuf-c's parse_boolean over the field's bytes after the tag. */
static bool field_bool(const fld *f) {
  for (size_t i = 0; i < f->rawlen; i++)
    if (f->raw[i] & 0x7f)
      return true;
  return false;
}

#define HIGH_BITS 0x8080808080808080ull

/* Elements in a packed varint run: its bytes without the continuation bit
 * (exact once the run has decoded without error). */
static size_t packed_count(const uint8_t *p, size_t len) {
  size_t n = len, i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    /* The continuation bits as 0/1 bytes, summed into the top byte. */
    n -= (size_t)((((w & HIGH_BITS) >> 7) * 0x0101010101010101ull) >> 56);
  }
  for (; i < len; i++)
    n -= p[i] >> 7;
  return n;
}

/* The value of the varint whose bytes are the low bytes of x (the rest 0),
 * at most 8 of them. */
static inline uint64_t varint_bits(uint64_t x) {
  return (x & 0x7f) | (x >> 1 & 0x7f << 7) | (x >> 2 & 0x7full << 14) | (x >> 3 & 0x7full << 21) |
         (x >> 4 & 0x7full << 28) | (x >> 5 & 0x7full << 35) | (x >> 6 & 0x7full << 42) |
         (x >> 7 & 0x7full << 49);
}

/* Appends the packed varints of p[0..len) to out (room counted beforehand).
 * Eight bytes at a time where it can: each stop bit (a byte < 0x80) ends one
 * value, so the values of a word are independent of each other, and the
 * only chain from one word to the next is its last stop. lim is the end of
 * the whole input: a run's last bytes are read as a word too where lim
 * allows, the bytes past the run marked as continuations (never a stop). */
static bool packed_u64(const uint8_t *p, size_t len, const uint8_t *lim, uint64_t *out, size_t *n) {
  const uint8_t *end = p + len;
  size_t k = *n;
  while (p < end) {
    if (lim - p >= 8) {
      uint64_t w;
      memcpy(&w, p, 8);
      size_t rem = (size_t)(end - p);
      if (rem < 8)
        w |= HIGH_BITS & ~((1ull << (8 * rem)) - 1);
      uint64_t stops = ~w & HIGH_BITS;
      if (stops) {
        unsigned start = 0;              /* bit where the next value starts */
        if (!(w & w << 8 & HIGH_BITS)) { /* no value of 3 bytes or more: ids */
          do {
            uint64_t x = (w & (stops ^ (stops - 1))) >> start;
            out[k++] = (x & 0x7f) | (x >> 1 & 0x3f80);
            start = (unsigned)__builtin_ctzll(stops) + 1;
            stops &= stops - 1;
          } while (stops);
        } else {
          do {
            out[k++] = varint_bits((w & (stops ^ (stops - 1))) >> start);
            start = (unsigned)__builtin_ctzll(stops) + 1;
            stops &= stops - 1;
          } while (stops);
        }
        p += start >> 3;
        continue;
      }
    }
    /* Near the input's end, or a value of more than 8 bytes. */
    size_t rem = (size_t)(end - p), max = rem < 10 ? rem : 10;
    uint64_t v = 0;
    size_t i = 0;
    for (;; i++) {
      if (i >= max)
        return false;
      v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
      if (!(p[i] & 0x80))
        break;
    }
    out[k++] = v;
    p += i + 1;
  }
  *n = k;
  return true;
}

/* A repeated varint field (packed or not) into out[*n...]. */
static inline bool repeated_u64(const fld *f, const uint8_t *lim, uint64_t *out, size_t *n) {
  if (f->wt == WT_VARINT) {
    out[(*n)++] = f->v;
    return true;
  }
  return f->wt == WT_LEN && packed_u64(f->data, f->len, lim, out, n);
}

/* What the counting pass adds for a repeated varint field. */
static inline size_t repeated_u64_count(const fld *f) {
  return f->wt == WT_LEN ? packed_count(f->data, f->len) : 1;
}

#define VARINT_OR_FAIL(f, dst, type)                                                               \
  do {                                                                                             \
    if ((f).wt != WT_VARINT)                                                                       \
      return false;                                                                                \
    (dst) = (type)(f).v;                                                                           \
  } while (0)

/* What the message decoders share: the arena, and the input's end. */
typedef struct dec {
  pp_pprof *a;
  const uint8_t *lim;
} dec;

static void *alloc(pp_pprof *a, size_t n) {
  return pp_pprof_arena_alloc(a, n);
}

/* n * size, or SIZE_MAX when that would overflow (the arena then fails). */
static size_t array_bytes(size_t n, size_t size) {
  return n > SIZE_MAX / size ? SIZE_MAX : n * size;
}

/* Pointer array and element array of n messages in one allocation. */
static bool carve(pp_pprof *a, size_t n, size_t size, void ***ptrs, unsigned char **elems) {
  if (n == 0)
    return true;
  size_t pb = array_bytes(n, sizeof(void *)), eb = array_bytes(n, size);
  unsigned char *mem = pb <= SIZE_MAX - eb ? alloc(a, pb + eb) : NULL;
  if (!mem)
    return false;
  *ptrs = (void **)mem;
  *elems = mem + pb;
  return true;
}

static bool dec_value_type(const uint8_t *p, size_t len, Perftools__Profiles__ValueType *m) {
  static const Perftools__Profiles__ValueType init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
  const uint8_t *end = p + len;
  size_t nf = 0;
  fld f = {0};
  *m = init;
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return false;
    switch (f.num) {
    case 1:
      VARINT_OR_FAIL(f, m->type, int64_t);
      break;
    case 2:
      VARINT_OR_FAIL(f, m->unit, int64_t);
      break;
    }
  }
  return true;
}

static inline __attribute__((always_inline)) bool dec_label(const uint8_t *p, size_t len,
                                                            Perftools__Profiles__Label *m) {
  static const Perftools__Profiles__Label init = PERFTOOLS__PROFILES__LABEL__INIT;
  const uint8_t *end = p + len;
  size_t nf = 0;
  fld f = {0};
  *m = init;
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return false;
    switch (f.num) {
    case 1:
      VARINT_OR_FAIL(f, m->key, int64_t);
      break;
    case 2:
      VARINT_OR_FAIL(f, m->str, int64_t);
      break;
    case 3:
      VARINT_OR_FAIL(f, m->num, int64_t);
      break;
    case 4:
      VARINT_OR_FAIL(f, m->num_unit, int64_t);
      break;
    }
  }
  return true;
}

static inline __attribute__((always_inline)) bool dec_line(const uint8_t *p, size_t len,
                                                           Perftools__Profiles__Line *m) {
  static const Perftools__Profiles__Line init = PERFTOOLS__PROFILES__LINE__INIT;
  const uint8_t *end = p + len;
  size_t nf = 0;
  fld f = {0};
  *m = init;
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return false;
    switch (f.num) {
    case 1:
      VARINT_OR_FAIL(f, m->function_id, uint64_t);
      break;
    case 2:
      VARINT_OR_FAIL(f, m->line, int64_t);
      break;
    case 3:
      VARINT_OR_FAIL(f, m->column, int64_t);
      break;
    }
  }
  return true;
}

static bool dec_function(const uint8_t *p, size_t len, Perftools__Profiles__Function *m) {
  static const Perftools__Profiles__Function init = PERFTOOLS__PROFILES__FUNCTION__INIT;
  const uint8_t *end = p + len;
  size_t nf = 0;
  fld f = {0};
  *m = init;
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return false;
    switch (f.num) {
    case 1:
      VARINT_OR_FAIL(f, m->id, uint64_t);
      break;
    case 2:
      VARINT_OR_FAIL(f, m->name, int64_t);
      break;
    case 3:
      VARINT_OR_FAIL(f, m->system_name, int64_t);
      break;
    case 4:
      VARINT_OR_FAIL(f, m->filename, int64_t);
      break;
    case 5:
      VARINT_OR_FAIL(f, m->start_line, int64_t);
      break;
    }
  }
  return true;
}

static bool dec_mapping(const uint8_t *p, size_t len, Perftools__Profiles__Mapping *m) {
  static const Perftools__Profiles__Mapping init = PERFTOOLS__PROFILES__MAPPING__INIT;
  const uint8_t *end = p + len;
  size_t nf = 0;
  fld f = {0};
  *m = init;
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return false;
    switch (f.num) {
    case 1:
      VARINT_OR_FAIL(f, m->id, uint64_t);
      break;
    case 2:
      VARINT_OR_FAIL(f, m->memory_start, uint64_t);
      break;
    case 3:
      VARINT_OR_FAIL(f, m->memory_limit, uint64_t);
      break;
    case 4:
      VARINT_OR_FAIL(f, m->file_offset, uint64_t);
      break;
    case 5:
      VARINT_OR_FAIL(f, m->filename, int64_t);
      break;
    case 6:
      VARINT_OR_FAIL(f, m->build_id, int64_t);
      break;
    case 7:
      m->has_functions = field_bool(&f);
      break;
    case 8:
      m->has_filenames = field_bool(&f);
      break;
    case 9:
      m->has_line_numbers = field_bool(&f);
      break;
    case 10:
      m->has_inline_frames = field_bool(&f);
      break;
    }
  }
  return true;
}

static bool dec_location(const dec *d, const uint8_t *p, size_t len,
                         Perftools__Profiles__Location *m) {
  static const Perftools__Profiles__Location init = PERFTOOLS__PROFILES__LOCATION__INIT;
  const uint8_t *q = p, *end = p + len;
  size_t nf = 0, nline = 0;
  fld f = {0};
  *m = init;
  while (q < end) {
    if (!next_field(&q, end, &f) || ++nf > MAX_FIELDS)
      return false;
    nline += f.num == 4;
  }
  Perftools__Profiles__Line *lines = NULL;
  if (!carve(d->a, nline, sizeof *lines, (void ***)&m->line, (unsigned char **)&lines))
    return false;
  while (p < end) {
    if (!next_field(&p, end, &f)) /* checked by the counting pass */
      return false;
    switch (f.num) {
    case 1:
      VARINT_OR_FAIL(f, m->id, uint64_t);
      break;
    case 2:
      VARINT_OR_FAIL(f, m->mapping_id, uint64_t);
      break;
    case 3:
      VARINT_OR_FAIL(f, m->address, uint64_t);
      break;
    case 4: {
      if (f.wt != WT_LEN)
        return false;
      Perftools__Profiles__Line *l = &lines[m->n_line];
      if (!dec_line(f.data, f.len, l))
        return false;
      m->line[m->n_line++] = l;
      break;
    }
    case 5:
      m->is_folded = field_bool(&f);
      break;
    }
  }
  return true;
}

/* Most samples fit in these: decoded in one pass, then copied. */
#define SCRATCH_IDS 1024
#define SCRATCH_VALUES 64
#define SCRATCH_LABELS 32

/* The room a sample's arrays need, carved from one allocation. */
static bool sample_room(pp_pprof *a, size_t nloc, size_t nval, size_t nlab,
                        Perftools__Profiles__Sample *m, Perftools__Profiles__Label **labels) {
  /* Counts are at most len (< 2^31), so the sizes cannot overflow. */
  size_t total = (nloc + nval + nlab) * 8 + nlab * sizeof(Perftools__Profiles__Label);
  if (!total)
    return true;
  unsigned char *mem = alloc(a, total);
  if (!mem)
    return false;
  if (nloc)
    m->location_id = (uint64_t *)mem;
  if (nval)
    m->value = (int64_t *)(mem + nloc * 8);
  if (nlab) {
    m->label = (Perftools__Profiles__Label **)(mem + (nloc + nval) * 8);
    *labels = (Perftools__Profiles__Label *)(mem + (nloc + nval + nlab) * 8);
  }
  return true;
}

/* A repeated varint field into scratch[*n...], at most cap in all: 1 if
 * done, 0 if it does not fit, -1 if malformed. */
static int scratch_u64(const fld *f, const uint8_t *lim, uint64_t *scratch, size_t *n, size_t cap) {
  if (f->wt == WT_VARINT) {
    if (*n == cap)
      return 0;
    scratch[(*n)++] = f->v;
    return 1;
  }
  if (f->wt != WT_LEN)
    return -1;
  if (f->len > cap - *n) /* a packed value takes at least one byte */
    return 0;
  return packed_u64(f->data, f->len, lim, scratch, n) ? 1 : -1;
}

/* A sample in one pass through scratch arrays: 1 if decoded, 0 if it is too
 * large for them (m is then as dec_sample_2pass wants it), -1 if malformed
 * or out of memory. */
static int dec_sample_1pass(const dec *d, const uint8_t *p, size_t len,
                            Perftools__Profiles__Sample *m) {
  uint64_t ids[SCRATCH_IDS], vals[SCRATCH_VALUES];
  Perftools__Profiles__Label labs[SCRATCH_LABELS];
  const uint8_t *end = p + len;
  size_t nf = 0, nloc = 0, nval = 0, nlab = 0;
  int rc;
  fld f = {0};
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return -1;
    switch (f.num) {
    case 1:
      if ((rc = scratch_u64(&f, d->lim, ids, &nloc, SCRATCH_IDS)) != 1)
        return rc;
      break;
    case 2:
      if ((rc = scratch_u64(&f, d->lim, vals, &nval, SCRATCH_VALUES)) != 1)
        return rc;
      break;
    case 3:
      if (f.wt != WT_LEN)
        return -1;
      if (nlab == SCRATCH_LABELS)
        return 0;
      if (!dec_label(f.data, f.len, &labs[nlab++]))
        return -1;
      break;
    }
  }
  Perftools__Profiles__Label *labels = NULL;
  if (!sample_room(d->a, nloc, nval, nlab, m, &labels))
    return -1;
  if (nloc)
    memcpy(m->location_id, ids, nloc * sizeof *ids);
  if (nval)
    memcpy(m->value, vals, nval * sizeof *vals);
  if (nlab)
    memcpy(labels, labs, nlab * sizeof *labs);
  for (size_t i = 0; i < nlab; i++)
    m->label[i] = &labels[i];
  m->n_location_id = nloc;
  m->n_value = nval;
  m->n_label = nlab;
  return 1;
}

/* Any sample: one pass to count, one to fill. */
static bool dec_sample_2pass(const dec *d, const uint8_t *p, size_t len,
                             Perftools__Profiles__Sample *m) {
  const uint8_t *q = p, *end = p + len;
  size_t nf = 0, nloc = 0, nval = 0, nlab = 0;
  fld f = {0};
  while (q < end) {
    if (!next_field(&q, end, &f) || ++nf > MAX_FIELDS)
      return false;
    switch (f.num) {
    case 1:
      nloc += repeated_u64_count(&f);
      break;
    case 2:
      nval += repeated_u64_count(&f);
      break;
    case 3:
      nlab++;
      break;
    }
  }
  Perftools__Profiles__Label *labels = NULL;
  if (!sample_room(d->a, nloc, nval, nlab, m, &labels))
    return false;
  while (p < end) {
    if (!next_field(&p, end, &f))
      return false;
    switch (f.num) {
    case 1:
      if (!repeated_u64(&f, d->lim, m->location_id, &m->n_location_id))
        return false;
      break;
    case 2:
      if (!repeated_u64(&f, d->lim, (uint64_t *)m->value, &m->n_value))
        return false;
      break;
    case 3: {
      if (f.wt != WT_LEN)
        return false;
      Perftools__Profiles__Label *l = &labels[m->n_label];
      if (!dec_label(f.data, f.len, l))
        return false;
      m->label[m->n_label++] = l;
      break;
    }
    }
  }
  return true;
}

static bool dec_sample(const dec *d, const uint8_t *p, size_t len, Perftools__Profiles__Sample *m) {
  static const Perftools__Profiles__Sample init = PERFTOOLS__PROFILES__SAMPLE__INIT;
  *m = init;
  int rc = dec_sample_1pass(d, p, len, m);
  return rc > 0 || (rc == 0 && dec_sample_2pass(d, p, len, m));
}

/* The arrays pass 2 fills, sized by pass 1. */
typedef struct profile_room {
  Perftools__Profiles__ValueType *st;
  Perftools__Profiles__Sample *s;
  Perftools__Profiles__Mapping *mp;
  Perftools__Profiles__Location *lo;
  Perftools__Profiles__Function *fn;
  char *strs;
} profile_room;

static bool fill_profile(const dec *d, const uint8_t *p, const uint8_t *end, profile_room *r,
                         Perftools__Profiles__Profile *m) {
  fld f = {0};
  while (p < end) {
    if (!next_field(&p, end, &f)) /* checked by the counting pass */
      return false;
    switch (f.num) {
    case 1: {
      Perftools__Profiles__ValueType *e = r->st + m->n_sample_type;
      if (f.wt != WT_LEN || !dec_value_type(f.data, f.len, e))
        return false;
      m->sample_type[m->n_sample_type++] = e;
      break;
    }
    case 2: {
      Perftools__Profiles__Sample *e = r->s + m->n_sample;
      if (f.wt != WT_LEN || !dec_sample(d, f.data, f.len, e))
        return false;
      m->sample[m->n_sample++] = e;
      break;
    }
    case 3: {
      Perftools__Profiles__Mapping *e = r->mp + m->n_mapping;
      if (f.wt != WT_LEN || !dec_mapping(f.data, f.len, e))
        return false;
      m->mapping[m->n_mapping++] = e;
      break;
    }
    case 4: {
      Perftools__Profiles__Location *e = r->lo + m->n_location;
      if (f.wt != WT_LEN || !dec_location(d, f.data, f.len, e))
        return false;
      m->location[m->n_location++] = e;
      break;
    }
    case 5: {
      Perftools__Profiles__Function *e = r->fn + m->n_function;
      if (f.wt != WT_LEN || !dec_function(f.data, f.len, e))
        return false;
      m->function[m->n_function++] = e;
      break;
    }
    case 6:
      if (f.wt != WT_LEN)
        return false;
      memcpy(r->strs, f.data, f.len);
      r->strs[f.len] = '\0';
      m->string_table[m->n_string_table++] = r->strs;
      r->strs += f.len + 1;
      break;
    case 7:
      VARINT_OR_FAIL(f, m->drop_frames, int64_t);
      break;
    case 8:
      VARINT_OR_FAIL(f, m->keep_frames, int64_t);
      break;
    case 9:
      VARINT_OR_FAIL(f, m->time_nanos, int64_t);
      break;
    case 10:
      VARINT_OR_FAIL(f, m->duration_nanos, int64_t);
      break;
    case 11:
      /* The last one wins whole (see the top of the file); each must decode. */
      if (f.wt != WT_LEN)
        return false;
      if (!m->period_type && !(m->period_type = alloc(d->a, sizeof *m->period_type)))
        return false;
      if (!dec_value_type(f.data, f.len, m->period_type))
        return false;
      break;
    case 12:
      VARINT_OR_FAIL(f, m->period, int64_t);
      break;
    case 13:
      if (!repeated_u64(&f, d->lim, (uint64_t *)m->comment, &m->n_comment))
        return false;
      break;
    case 14:
      VARINT_OR_FAIL(f, m->default_sample_type, int64_t);
      break;
    case 15:
      VARINT_OR_FAIL(f, m->doc_url, int64_t);
      break;
    }
  }
  return true;
}

Perftools__Profiles__Profile *pp_pprof_decode(pp_pprof *a, const uint8_t *data, size_t len) {
  static const Perftools__Profiles__Profile init = PERFTOOLS__PROFILES__PROFILE__INIT;
  const uint8_t *p = data, *end = data + len;
  size_t nf = 0, nst = 0, ns = 0, nm = 0, nl = 0, nfn = 0, nstr = 0, strbytes = 0, ncom = 0;
  fld f = {0};

  /* Pass 1: check the fields' framing, count the repeated ones. */
  while (p < end) {
    if (!next_field(&p, end, &f) || ++nf > MAX_FIELDS)
      return NULL;
    switch (f.num) {
    case 1:
      nst++;
      break;
    case 2:
      ns++;
      break;
    case 3:
      nm++;
      break;
    case 4:
      nl++;
      break;
    case 5:
      nfn++;
      break;
    case 6:
      nstr++;
      strbytes += (f.wt == WT_LEN ? f.len : 0) + 1; /* at most 2 * len */
      break;
    case 13:
      ncom += repeated_u64_count(&f);
      break;
    }
  }

  Perftools__Profiles__Profile *m = alloc(a, sizeof *m);
  if (!m)
    return NULL;
  *m = init;
  profile_room r = {0};
  if (!carve(a, nst, sizeof *r.st, (void ***)&m->sample_type, (unsigned char **)&r.st) ||
      !carve(a, ns, sizeof *r.s, (void ***)&m->sample, (unsigned char **)&r.s) ||
      !carve(a, nm, sizeof *r.mp, (void ***)&m->mapping, (unsigned char **)&r.mp) ||
      !carve(a, nl, sizeof *r.lo, (void ***)&m->location, (unsigned char **)&r.lo) ||
      !carve(a, nfn, sizeof *r.fn, (void ***)&m->function, (unsigned char **)&r.fn))
    return NULL;
  if (nstr && (!(m->string_table = alloc(a, array_bytes(nstr, sizeof *m->string_table))) ||
               !(r.strs = alloc(a, strbytes))))
    return NULL;
  if (ncom && !(m->comment = alloc(a, array_bytes(ncom, sizeof *m->comment))))
    return NULL;

  /* Pass 2: decode into the arrays. */
  dec d = {a, end};
  return fill_profile(&d, data, end, &r, m) ? m : NULL;
}

bool pp_wire_next(const uint8_t **p, const uint8_t *end, pp_wire_field *out) {
  fld f = {0};
  if (!next_field(p, end, &f))
    return false;
  *out = (pp_wire_field){f.num, f.wt, f.v, f.data, f.len};
  return true;
}
