/* The hand-written profile.proto decoder (proto/pp_decode.c) against
 * protobuf-c's unpack: the same accept/reject decision and, on accept, the
 * same tree, on random profiles, hand-encoded corner cases and random
 * mutations of both. */
#include <stdbool.h>

#include "pp_builder_int.h"
#include "pp_decode.h"
#include "pp_decode_ref.h"
#include "pp_test.h"
#include "pp_parse_ref.h"

/* ---- a small protobuf encoder for hand-made inputs ---- */

typedef struct enc {
  uint8_t *b;
  size_t n, cap;
} enc;

static void put(enc *e, const void *p, size_t n) {
  if (e->n + n > e->cap) {
    size_t cap = e->cap ? e->cap : 64;
    while (cap < e->n + n)
      cap *= 2;
    uint8_t *b = realloc(e->b, cap);
    if (!b)
      abort();
    e->b = b;
    e->cap = cap;
  }
  if (n)
    memcpy(e->b + e->n, p, n);
  e->n += n;
}

static void put_byte(enc *e, uint8_t c) {
  put(e, &c, 1);
}

static void put_varint(enc *e, uint64_t v) {
  while (v >= 0x80) {
    put_byte(e, (uint8_t)(v | 0x80));
    v >>= 7;
  }
  put_byte(e, (uint8_t)v);
}

static void put_tag(enc *e, uint32_t field, unsigned wt) {
  put_varint(e, (uint64_t)field << 3 | wt);
}

static void put_fv(enc *e, uint32_t field, uint64_t v) { /* varint field */
  put_tag(e, field, 0);
  put_varint(e, v);
}

static void put_fl(enc *e, uint32_t field, const void *p, size_t n) { /* length-delimited */
  put_tag(e, field, 2);
  put_varint(e, n);
  put(e, p, n);
}

static void put_fm(enc *e, uint32_t field, const enc *sub) { /* a sub-message */
  put_fl(e, field, sub->b, sub->n);
}

static void reset(enc *e) {
  e->n = 0;
}

static void drop(enc *e) {
  free(e->b);
  *e = (enc){0};
}

/* ---- checks ---- */

enum { REJECT = 0, ACCEPT = 1 };

/* Both decoders must agree, and give want. */
static void expect_line(const uint8_t *data, size_t len, int want, const char *what, int line) {
  char why[256] = "";
  int rc = pp_decode_ref_check(data, len, why, sizeof why);
  if (rc < 0) {
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, line, what, why);
    pp_test_failures++;
  } else if (want >= 0 && rc != want) {
    fprintf(stderr, "%s:%d: %s: both decoders %s it, expected the opposite\n", __FILE__, line, what,
            rc ? "accept" : "reject");
    pp_test_failures++;
  }
}
#define EXPECT(e, want, what) expect_line((e)->b, (e)->n, want, what, __LINE__)

/* The hand decoder's tree for e (must decode); in arena *a, freed by the caller. */
static const Perftools__Profiles__Profile *decode(const enc *e, pp_pprof **a) {
  *a = pp_pprof_arena_new(e->n);
  PP_CHECK(*a != NULL);
  const Perftools__Profiles__Profile *p = *a ? pp_pprof_decode(*a, e->b, e->n) : NULL;
  PP_CHECK(p != NULL);
  return p;
}

static uint64_t rnd(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dULL;
}

/* Values at varint width boundaries, negatives, or any 64 bits. */
static uint64_t any_u64(uint64_t *s) {
  static const uint64_t edges[] = {0,          1,          127,          128,
                                   16383,      16384,      1ULL << 35,   (1ULL << 63) - 1,
                                   1ULL << 63, UINT64_MAX, (uint64_t)-2, (uint64_t)-300};
  uint64_t r = rnd(s);
  return r % 3 == 0 ? rnd(s) : edges[(r >> 8) % (sizeof edges / sizeof *edges)];
}

/* A random, valid profile (dense ids, strings in range), packed. */
static void random_profile(uint64_t *s, size_t scale, enc *out) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  if (!b)
    return;
  char text[300];
  size_t nstr = 1 + rnd(s) % (3 * scale + 2);
  for (size_t i = 0; i < nstr; i++) {
    size_t n = (size_t)snprintf(text, sizeof text, "str%zu.", i);
    size_t pad = rnd(s) % 10 == 0 ? 128 + rnd(s) % 150 : rnd(s) % 9;
    for (size_t k = 0; k < pad && n + 1 < sizeof text; k++)
      text[n++] = (char)('A' + (k * 7 + i) % 26);
    text[n] = '\0';
    PP_CHECK(pp_builder_string(b, text) >= 0);
  }
  int64_t ns = (int64_t)pp_builder_string_count(b);
#define STR() ((int64_t)(rnd(s) % (uint64_t)ns))
  size_t ntypes = 1 + rnd(s) % 3;
  for (size_t i = 0; i < ntypes; i++)
    PP_CHECK_INT(pp_builder_add_sample_type_ix(b, STR(), STR()), ==, 0);
  if (rnd(s) % 2)
    pp_builder_set_period_ix(b, STR(), STR(), (int64_t)any_u64(s));
  pp_builder_set_time(b, (int64_t)any_u64(s), (int64_t)any_u64(s));
  for (size_t i = rnd(s) % 3; i > 0; i--)
    PP_CHECK_INT(pp_builder_add_comment_ix(b, STR()), ==, 0);
  if (rnd(s) % 2)
    pp_builder_set_extras_ix(b, STR(), STR(), STR(), STR());
  uint64_t nmap = 0, nfn = 0, nloc = 0, id;
  for (size_t i = rnd(s) % (scale + 2); i > 0; i--)
    if ((id = pp_builder_mapping_ix(b, any_u64(s), any_u64(s), any_u64(s), STR(), STR(),
                                    (unsigned)(rnd(s) % 16))) > nmap)
      nmap = id;
  for (size_t i = rnd(s) % (2 * scale + 2); i > 0; i--)
    if ((id = pp_builder_function_ix(b, STR(), STR(), STR(), (int64_t)any_u64(s))) > nfn)
      nfn = id;
  uint64_t fids[4];
  int64_t lines[4];
  for (size_t i = rnd(s) % (3 * scale + 2); i > 0; i--) {
    size_t nl = nfn ? rnd(s) % 4 : 0;
    for (size_t k = 0; k < nl; k++) {
      fids[k] = 1 + rnd(s) % nfn;
      lines[k] = (int64_t)any_u64(s);
    }
    if ((id = pp_builder_location(b, rnd(s) % (nmap + 1), any_u64(s), fids, lines, nl)) > nloc)
      nloc = id;
  }
  uint64_t stack[48];
  int64_t values[3];
  pp_ilabel labels[3];
  for (size_t i = rnd(s) % (4 * scale + 2); i > 0; i--) {
    size_t depth = nloc ? rnd(s) % 48 : 0, nlab = rnd(s) % 4;
    for (size_t k = 0; k < depth; k++)
      stack[k] = 1 + rnd(s) % nloc;
    for (size_t k = 0; k < ntypes; k++)
      values[k] = (int64_t)any_u64(s);
    for (size_t k = 0; k < nlab; k++) {
      bool num = rnd(s) % 2;
      labels[k] = (pp_ilabel){1 + STR() % (ns - 1 ? ns - 1 : 1), num ? 0 : STR(),
                              num ? (int64_t)any_u64(s) : 0, num ? STR() : 0};
    }
    PP_CHECK_INT(pp_builder_sample_ix(b, stack, depth, values, ntypes, labels, nlab), ==, 0);
  }
#undef STR
  uint8_t *bytes = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &bytes, &len), ==, 0);
  reset(out);
  put(out, bytes, len);
  free(bytes);
  pp_builder_free(b);
}

/* ---- cases ---- */

static void test_decode_matches_protobuf_c_on_random_profiles(void) {
  uint64_t seed = 0x51ed2701f00dULL;
  enc e = {0};
  char what[64];
  for (int i = 0; i < 300; i++) {
    random_profile(&seed, i % 60 == 0 ? 300 : (size_t)i % 10, &e);
    snprintf(what, sizeof what, "random profile %d (%zu bytes)", i, e.n);
    EXPECT(&e, ACCEPT, what);
  }
  drop(&e);
}

/* Packed location ids as profiles carry them (one or two bytes each) mixed
 * with longer ones, in runs of every length from 0 to 70, ending at the
 * input's end or followed by more input: the word loop takes a run's
 * middle, the byte loop its edges. Each input is compared with protobuf-c
 * (pp_decode_ref_check). */
static void test_decode_packed_ids_of_every_width_and_position(void) {
  uint64_t seed = 0x9acced1d5ULL;
  enc run = {0}, sample = {0}, e = {0};
  char what[96];
  for (size_t n = 0; n <= 70; n++) {
    for (int trial = 0; trial < 12; trial++) {
      reset(&run);
      for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd(&seed) % 100, id;
        if (trial < 4) /* one or two bytes only */
          id = 1 + rnd(&seed) % (r < 60 ? 127 : 16383);
        else if (r < 50)
          id = 1 + rnd(&seed) % 127;
        else if (r < 85)
          id = 128 + rnd(&seed) % (16384 - 128);
        else if (r < 95)
          id = 16384 + rnd(&seed) % ((1u << 21) - 16384);
        else
          id = any_u64(&seed) | 1;
        put_varint(&run, id);
      }
      reset(&sample);
      put_fl(&sample, 1, run.b, run.n);
      put_fv(&sample, 2, n);
      reset(&e);
      put_fl(&e, 6, "", 0);
      put_fl(&e, 2, sample.b, sample.n);
      bool tail = trial % 2;
      if (tail) /* the run ends well inside the input */
        put_fl(&e, 6, "a string after the sample", 25);
      snprintf(what, sizeof what, "%zu packed ids in %zu bytes, trial %d, %s", n, run.n, trial,
               tail ? "then more input" : "at the input's end");
      EXPECT(&e, ACCEPT, what);
    }
  }
  drop(&run);
  drop(&sample);
  drop(&e);
}

static void test_decode_packed_unpacked_and_mixed_repeated_scalars(void) {
  enc s = {0}, p = {0}, pk = {0};
  /* location_id: packed [1, 300], unpacked 7, packed [], packed [UINT64_MAX]. */
  put_varint(&pk, 1);
  put_varint(&pk, 300);
  put_fl(&s, 1, pk.b, pk.n);
  put_fv(&s, 1, 7);
  put_fl(&s, 1, NULL, 0);
  reset(&pk);
  put_varint(&pk, UINT64_MAX);
  put_fl(&s, 1, pk.b, pk.n);
  /* value: unpacked -1 (10 bytes), packed [-300, 5], unpacked INT64_MIN. */
  put_fv(&s, 2, (uint64_t)-1);
  reset(&pk);
  put_varint(&pk, (uint64_t)-300);
  put_varint(&pk, 5);
  put_fl(&s, 2, pk.b, pk.n);
  put_fv(&s, 2, (uint64_t)INT64_MIN);
  put_fm(&p, 2, &s);
  /* comment: unpacked, then packed, then an empty packed run. */
  put_fv(&p, 13, 3);
  reset(&pk);
  put_varint(&pk, 4);
  put_varint(&pk, (uint64_t)-4);
  put_fl(&p, 13, pk.b, pk.n);
  put_fl(&p, 13, NULL, 0);
  EXPECT(&p, ACCEPT, "mixed packed and unpacked");

  pp_pprof *a = NULL;
  const Perftools__Profiles__Profile *d = decode(&p, &a);
  if (d && d->n_sample == 1) {
    const Perftools__Profiles__Sample *x = d->sample[0];
    PP_CHECK_INT(x->n_location_id, ==, 4);
    if (x->n_location_id == 4) {
      PP_CHECK(x->location_id[0] == 1 && x->location_id[1] == 300 && x->location_id[2] == 7);
      PP_CHECK(x->location_id[3] == UINT64_MAX);
    }
    PP_CHECK_INT(x->n_value, ==, 4);
    if (x->n_value == 4)
      PP_CHECK(x->value[0] == -1 && x->value[1] == -300 && x->value[2] == 5 &&
               x->value[3] == INT64_MIN);
    PP_CHECK_INT(d->n_comment, ==, 3);
  }
  pp_pprof_free(a);

  /* Only empty packed runs: no array at all, as protobuf-c. */
  reset(&s);
  reset(&p);
  put_fl(&s, 1, NULL, 0);
  put_fl(&s, 2, NULL, 0);
  put_fm(&p, 2, &s);
  put_fl(&p, 13, NULL, 0);
  EXPECT(&p, ACCEPT, "empty packed runs");
  d = decode(&p, &a);
  if (d && d->n_sample == 1)
    PP_CHECK(d->sample[0]->location_id == NULL && d->sample[0]->value == NULL &&
             d->comment == NULL && d->sample[0]->n_value == 0);
  pp_pprof_free(a);

  /* A packed run whose last varint is cut, or 11 bytes long. */
  const uint8_t cut[] = {0x12, 0x04, 0x0a, 0x02, 0x01, 0x80};
  expect_line(cut, sizeof cut, REJECT, "packed run ends inside a varint", __LINE__);
  const uint8_t eleven[] = {0x12, 0x0d, 0x0a, 0x0b, 0x80, 0x80, 0x80, 0x80,
                            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  expect_line(eleven, sizeof eleven, REJECT, "11-byte varint in a packed run", __LINE__);
  /* 10 bytes, bits past 64 set: protobuf-c drops them. */
  const uint8_t ten[] = {0x12, 0x0c, 0x0a, 0x0a, 0xff, 0xff, 0xff,
                         0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  expect_line(ten, sizeof ten, ACCEPT, "10-byte varint with bits past 64", __LINE__);

  /* Repeated scalars with a fixed-width wire type: protobuf-c refuses. */
  reset(&s);
  reset(&p);
  put_tag(&s, 1, 1);
  put(&s, "\1\0\0\0\0\0\0\0", 8);
  put_fm(&p, 2, &s);
  EXPECT(&p, REJECT, "location_id as fixed64");
  reset(&s);
  reset(&p);
  put_tag(&s, 2, 5);
  put(&s, "\1\0\0\0", 4);
  put_fm(&p, 2, &s);
  EXPECT(&p, REJECT, "value as fixed32");
  reset(&p);
  put_tag(&p, 13, 5);
  put(&p, "\1\0\0\0", 4);
  EXPECT(&p, REJECT, "comment as fixed32");
  drop(&s);
  drop(&p);
  drop(&pk);
}

static void test_decode_singular_fields_repeated_keep_the_last(void) {
  enc p = {0}, v = {0};
  put_fv(&p, 9, 5);
  put_fv(&p, 9, (uint64_t)-7);
  put_fv(&p, 12, 100);
  put_fv(&p, 12, 0);
  /* period_type twice: {type 3} then {unit 4}. */
  put_fv(&v, 1, 3);
  put_fm(&p, 11, &v);
  reset(&v);
  put_fv(&v, 2, 4);
  put_fm(&p, 11, &v);
  EXPECT(&p, ACCEPT, "singular fields given twice");
  pp_pprof *a = NULL;
  const Perftools__Profiles__Profile *d = decode(&p, &a);
  if (d) {
    PP_CHECK_INT(d->time_nanos, ==, -7);
    PP_CHECK_INT(d->period, ==, 0);
    PP_CHECK(d->period_type != NULL);
    /* protobuf-c 1.4's merge keeps none of the earlier message's proto3
     * scalars (see pp_decode.c): the last period_type wins whole. */
    if (d->period_type) {
      PP_CHECK_INT(d->period_type->type, ==, 0);
      PP_CHECK_INT(d->period_type->unit, ==, 4);
    }
  }
  pp_pprof_free(a);

  /* Sub-messages with a field twice; mapping and function given twice. */
  reset(&p);
  reset(&v);
  put_fv(&v, 1, 1);
  put_fv(&v, 2, 5);
  put_fv(&v, 1, 2);
  put_fm(&p, 3, &v);
  put_fm(&p, 3, &v);
  put_fm(&p, 5, &v);
  put_fm(&p, 5, &v);
  put_fm(&p, 4, &v);
  put_fm(&p, 1, &v);
  EXPECT(&p, ACCEPT, "sub-message fields given twice");

  /* A later period_type that does not decode fails the profile. */
  reset(&p);
  reset(&v);
  put_fv(&v, 1, 3);
  put_fm(&p, 11, &v);
  const uint8_t bad[] = {0x5a, 0x01, 0x08};
  put(&p, bad, sizeof bad);
  EXPECT(&p, REJECT, "second period_type truncated");
  reset(&p);
  put_fv(&p, 11, 1);
  EXPECT(&p, REJECT, "period_type as a varint");
  reset(&p);
  put_fl(&p, 9, "x", 1);
  EXPECT(&p, REJECT, "time_nanos length-delimited");
  reset(&p);
  put_tag(&p, 7, 1);
  put(&p, "\0\0\0\0\0\0\0\0", 8);
  EXPECT(&p, REJECT, "drop_frames as fixed64");
  reset(&p);
  put_fv(&p, 6, 1);
  EXPECT(&p, REJECT, "a string as a varint");
  reset(&p);
  put_fv(&p, 2, 1);
  EXPECT(&p, REJECT, "a sample as a varint");
  drop(&p);
  drop(&v);
}

/* Every message's own scalars with wrong wire types, and unknown fields of
 * every wire type at every depth. */
static void test_decode_unknown_fields_and_wire_types(void) {
  static const uint32_t fields[] = {100, 16, 536870911, 0x7fffffff};
  enc p = {0}, s = {0}, l = {0};
  for (unsigned wt = 0; wt < 8; wt++) {
    for (size_t fi = 0; fi < sizeof fields / sizeof *fields; fi++) {
      uint32_t f = fields[fi];
      enc unk = {0};
      put_tag(&unk, f, wt);
      switch (wt) {
      case 0:
        put_varint(&unk, UINT64_MAX);
        break;
      case 1:
        put(&unk, "12345678", 8);
        break;
      case 2:
        put_varint(&unk, 3);
        put(&unk, "abc", 3);
        break;
      case 5:
        put(&unk, "1234", 4);
        break;
      default: /* groups (3, 4) and 6, 7: protobuf-c refuses them */
        put_varint(&unk, 0);
        break;
      }
      int want = wt == 0 || wt == 1 || wt == 2 || wt == 5 ? ACCEPT : REJECT;
      char what[80];
      for (int depth = 0; depth < 3; depth++) {
        reset(&p);
        reset(&s);
        reset(&l);
        put_fv(&l, 1, 2);
        if (depth == 2)
          put(&l, unk.b, unk.n);
        put_fv(&s, 1, 1);
        if (depth == 1)
          put(&s, unk.b, unk.n);
        put_fm(&s, 3, &l);
        put_fm(&p, 2, &s);
        if (depth == 0)
          put(&p, unk.b, unk.n);
        put_fl(&p, 6, "", 0);
        snprintf(what, sizeof what, "unknown field %u wire type %u at depth %d", f, wt, depth);
        EXPECT(&p, want, what);
      }
      /* The same field in every other message too. */
      for (uint32_t top = 1; top <= 5; top++) {
        reset(&p);
        reset(&s);
        put(&s, unk.b, unk.n);
        put_fm(&p, top, &s);
        snprintf(what, sizeof what, "unknown field %u wire type %u in field %u", f, wt, top);
        EXPECT(&p, want, what);
      }
      reset(&p);
      reset(&s);
      reset(&l);
      put(&l, unk.b, unk.n);
      put_fm(&s, 4, &l);
      put_fm(&p, 4, &s);
      snprintf(what, sizeof what, "unknown field %u wire type %u in a line", f, wt);
      EXPECT(&p, want, what);
      drop(&unk);
    }
    /* Known scalar fields of each message with wire type wt: only varints
     * pass, except bools, which take any wire type protobuf-c can frame. */
    for (uint32_t top = 1; top <= 5; top++) {
      for (uint32_t f = 1; f <= 10; f++) {
        reset(&p);
        reset(&s);
        put_tag(&s, f, wt);
        if (wt == 1)
          put(&s, "\0\0\0\0\0\0\0\x80", 8);
        else if (wt == 5)
          put(&s, "\x80\0\0\0", 4);
        else
          put_varint(&s, 0); /* a varint 0, or length 0 */
        put_fm(&p, top, &s);
        EXPECT(&p, -1, "known field, any wire type"); /* agreement only */
      }
    }
    /* Truncated fixed-width fields. */
    reset(&p);
    put_tag(&p, 100, wt);
    put(&p, "\x80\x80\x80", 3);
    EXPECT(&p, REJECT, "truncated field");
  }
  drop(&p);
  drop(&s);
  drop(&l);
}

static void test_decode_bools_take_any_wire_type_like_protobuf_c(void) {
  enc p = {0}, m = {0};
  struct {
    const char *bytes;
    size_t n;
    int want; /* has_functions */
  } cases[] = {
      {"\x38\x02", 2, 1},                                      /* varint 2 */
      {"\x38\x80\x00", 3, 0},                                  /* zero, two bytes */
      {"\x38\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", 11, 1}, /* only bits past 64 */
      {"\x39\x80\x80\x80\x80\x80\x80\x80\x80", 9, 0},          /* fixed64 of 0x80s */
      {"\x39\x00\x00\x00\x00\x00\x00\x00\x01", 9, 1},          /* fixed64 */
      {"\x3d\x00\x00\x00\x00", 5, 0},                          /* fixed32 zero */
      {"\x3d\x00\x00\x10\x00", 5, 1},                          /* fixed32 */
      {"\x3a\x00", 2, 0},                                      /* empty bytes */
      {"\x3a\x80\x00", 3, 0},                                  /* empty, long prefix */
      {"\x3a\x01\x00", 3, 1},                                  /* one byte: the prefix counts */
      {"\x3a\x02\x80\x80", 4, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    reset(&p);
    reset(&m);
    put_fv(&m, 1, 1);
    put(&m, cases[i].bytes, cases[i].n);
    put_fm(&p, 3, &m);
    char what[48];
    snprintf(what, sizeof what, "bool case %zu", i);
    EXPECT(&p, ACCEPT, what);
    pp_pprof *a = NULL;
    const Perftools__Profiles__Profile *d = decode(&p, &a);
    if (d && d->n_mapping == 1)
      PP_CHECK_INT(d->mapping[0]->has_functions, ==, cases[i].want);
    pp_pprof_free(a);
    /* Location.is_folded (field 5) the same way. */
    reset(&p);
    reset(&m);
    uint8_t b0 = (uint8_t)((5 << 3) | (cases[i].bytes[0] & 7));
    put_byte(&m, b0);
    put(&m, cases[i].bytes + 1, cases[i].n - 1);
    put_fm(&p, 4, &m);
    EXPECT(&p, ACCEPT, what);
  }
  drop(&p);
  drop(&m);
}

static void test_decode_tags_varints_and_lengths_at_their_limits(void) {
  static const struct {
    const char *bytes;
    size_t n;
    int want;
    const char *what;
  } cases[] = {
      {"", 0, ACCEPT, "empty input"},
      {"\x00", 1, REJECT, "tag 0"},
      {"\x02\x00", 2, REJECT, "tag 0, length-delimited"},
      {"\x80\x00\x01", 3, ACCEPT, "tag 0 in two bytes: an unknown field"},
      {"\x92\x80\x80\x80\x00\x00", 6, ACCEPT, "tag 2 in five bytes"},
      {"\x92\x80\x80\x80\x80\x00\x00", 7, REJECT, "tag in six bytes"},
      {"\xf8\xff\xff\xff\x7f\x01", 6, ACCEPT, "tag 2^32-1"},
      {"\xf8\xff\xff\xff\x0f\x01", 6, ACCEPT, "tag 2^32-1 without its top bits"},
      {"\x92\x80\x80", 3, REJECT, "tag cut short"},
      {"\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, ACCEPT, "10-byte varint"},
      {"\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11, ACCEPT, "10-byte varint, high bits"},
      {"\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x80\x01", 12, REJECT, "11-byte varint"},
      {"\x48\xff\xff", 3, REJECT, "varint cut short"},
      {"\x48", 1, REJECT, "varint missing"},
      {"\x32\x85\x80\x80\x80\x00hello", 11, ACCEPT, "length in five bytes"},
      {"\x32\x85\x80\x80\x80\x80\x00hello", 12, REJECT, "length in six bytes"},
      {"\x32\x80\x80\x80\x80\x08", 6, REJECT, "length 2^31"},
      {"\x32\xff\xff\xff\xff\x0f", 6, REJECT, "length 2^32-1"},
      {"\x32\x06hello", 7, REJECT, "length past the end"},
      {"\x32\x05hello", 7, ACCEPT, "a string"},
      {"\x32\x00\x32\x03\x61\x00\x62", 7, ACCEPT, "empty string, embedded NUL"},
      {"\x32", 1, REJECT, "length missing"},
      {"\x12\x02\x0a", 3, REJECT, "sample shorter than its length"},
      {"\x12\x01\x0a", 3, REJECT, "sample ends inside a field"},
      {"\x12\x02\x0a\x00\x12\x00", 6, ACCEPT, "a sample with an empty packed run"},
      {"\x12\x02\x1a\x00", 4, ACCEPT, "an empty label"},
      {"\x12\x02\x1a\x01", 4, REJECT, "a label past its sample"},
      {"\x12\x03\x1a\x01\x08", 5, REJECT, "a label's varint missing"},
      {"\x22\x04\x22\x02\x18\x05", 6, ACCEPT, "a line's column"},
      {"\x22\x03\x22\x01\x18", 5, REJECT, "a line's column missing"},
      {"\x22\x02\x20\x01", 4, REJECT, "a line as a varint"},
      {"\x12\x02\x18\x01", 4, REJECT, "a label as a varint"},
      {"\x12\x02\x0b\x0c", 4, REJECT, "a group in a sample"},
      {"\x5a\x02\x08\x01\x5a\x00", 6, ACCEPT, "period_type, then an empty one"},
      {"\x09\x01\x02\x03\x04\x05\x06\x07", 8, REJECT, "fixed64 cut short"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_line((const uint8_t *)cases[i].bytes, cases[i].n, cases[i].want, cases[i].what,
                __LINE__);
}

/* Each prefix of a profile; then random byte changes, insertions, deletions
 * and duplications. Both sides must agree on every one; enough of them must
 * be accepted and rejected for the comparison to mean something. */
static void test_decode_matches_protobuf_c_on_mutations(void) {
  static const uint8_t edge_bytes[] = {0x00, 0x7f, 0x80, 0xff, 0x0b, 0x0c, 0x02};
  uint64_t seed = 0xdec0de5eedULL;
  enc e = {0}, m = {0};
  char why[256];
  long accepted = 0, rejected = 0, total = 0, cut_ok = 0, cut_bad = 0;
  for (int i = 0; i < 150; i++) {
    random_profile(&seed, (size_t)i % 4, &e);
    for (size_t cut = 0; cut < e.n; cut++) {
      int rc = pp_decode_ref_check(e.b, cut, why, sizeof why);
      if (rc < 0) {
        fprintf(stderr, "  profile %d cut at %zu of %zu: %s\n", i, cut, e.n, why);
        pp_test_failures++;
      }
      rc == 1 ? cut_ok++ : cut_bad++;
    }
    for (int k = 0; k < 1000 && e.n > 0; k++) {
      reset(&m);
      put(&m, e.b, e.n);
      int nmut = 1 + (int)(rnd(&seed) % 3);
      for (int j = 0; j < nmut && m.n > 0; j++) {
        size_t at = rnd(&seed) % m.n;
        switch (rnd(&seed) % 6) {
        case 0: /* flip a bit */
          m.b[at] ^= (uint8_t)(1u << rnd(&seed) % 8);
          break;
        case 1: /* any byte, often a varint or wire-type edge */
          m.b[at] = rnd(&seed) % 2 ? (uint8_t)rnd(&seed) : edge_bytes[at % sizeof edge_bytes];
          break;
        case 2: /* truncate */
          m.n = at;
          break;
        case 3: { /* insert 1..4 bytes */
          size_t n = 1 + rnd(&seed) % 4;
          uint8_t ins[4];
          for (size_t q = 0; q < n; q++)
            ins[q] = (uint8_t)rnd(&seed);
          put(&m, ins, n); /* grow, then shift */
          memmove(m.b + at + n, m.b + at, m.n - n - at);
          memcpy(m.b + at, ins, n);
          break;
        }
        case 4: { /* delete a range */
          size_t n = 1 + rnd(&seed) % 8;
          if (n > m.n - at)
            n = m.n - at;
          memmove(m.b + at, m.b + at + n, m.n - at - n);
          m.n -= n;
          break;
        }
        default: { /* duplicate a range at the end (repeats fields) */
          size_t n = 1 + rnd(&seed) % 32;
          if (n > m.n - at)
            n = m.n - at;
          uint8_t tmp[32];
          memcpy(tmp, m.b + at, n);
          put(&m, tmp, n);
          break;
        }
        }
      }
      int rc = pp_decode_ref_check(m.b, m.n, why, sizeof why);
      if (rc < 0) {
        fprintf(stderr, "  profile %d mutation %d (%zu bytes): %s\n", i, k, m.n, why);
        pp_test_failures++;
      }
      rc == 1 ? accepted++ : rejected++;
      total++;
    }
  }
  fprintf(stderr,
          "  prefixes: both decoders accepted %ld, both rejected %ld; "
          "%ld mutations: both accepted %ld, both rejected %ld\n",
          cut_ok, cut_bad, total, accepted, rejected);
  PP_CHECK(cut_ok > 1000);
  PP_CHECK(cut_bad > 10000);
  PP_CHECK(accepted > total / 10);
  PP_CHECK(rejected > total / 10);
  drop(&e);
  drop(&m);
}

/* The sidecar's path: pp_pprof_parse decodes by hand and validates. */
static void test_parse_pooled_agrees_with_parse(void) {
  uint64_t seed = 42;
  enc e = {0};
  for (int i = 0; i < 50; i++) {
    random_profile(&seed, (size_t)i % 8, &e);
    char why[256] = "", pwhy[256] = "";
    Perftools__Profiles__Profile *p = pp_ref_parse(e.b, e.n, 1 << 24, why, sizeof why);
    pp_pprof *q = pp_pprof_parse(e.b, e.n, 1 << 24, pwhy, sizeof pwhy);
    PP_CHECK((p != NULL) == (q != NULL));
    if (p && q)
      PP_CHECK(pp_decode_ref_compare(p, pp_pprof_profile(q), why, sizeof why) == 0);
    if (!p)
      PP_CHECK_STR(why, pwhy);
    perftools__profiles__profile__free_unpacked(p, NULL);
    pp_pprof_free(q);
  }
  const uint8_t junk[] = {0x0a, 0x05, 0x01};
  char why[256] = "";
  PP_CHECK(pp_pprof_parse(junk, sizeof junk, 100, why, sizeof why) == NULL);
  PP_CHECK_STR(why, "not a pprof profile: protobuf decoding of 3 bytes failed");
  drop(&e);
}

int main(void) {
  PP_RUN(test_decode_matches_protobuf_c_on_random_profiles);
  PP_RUN(test_decode_packed_unpacked_and_mixed_repeated_scalars);
  PP_RUN(test_decode_packed_ids_of_every_width_and_position);
  PP_RUN(test_decode_singular_fields_repeated_keep_the_last);
  PP_RUN(test_decode_unknown_fields_and_wire_types);
  PP_RUN(test_decode_bools_take_any_wire_type_like_protobuf_c);
  PP_RUN(test_decode_tags_varints_and_lengths_at_their_limits);
  PP_RUN(test_decode_matches_protobuf_c_on_mutations);
  PP_RUN(test_parse_pooled_agrees_with_parse);
  pp_pprof_cache_trim();
  PP_DONE();
}
