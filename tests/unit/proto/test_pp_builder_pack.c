/* proto/pprof/pp_builder_pack.c, the direct encoder: what it packs reads
 * back with protobuf-c, byte for byte what protobuf-c's own encoder writes
 * (pp_pack_ref.c) for random, widest, empty, edge, merged and reset
 * builders. With "--write-edge FILE" it writes the edge profile below
 * (it_proto_pprof_raw.sh reads it with `go tool pprof -raw`). */
#include "pp_builder_int.h"
#include "pp_builder.h"
#include "pp_merge.h"
#include "pp_pack_ref.h"
#include "pp_validate.h"
#include "pp_varint.h"
#include "pprof_fixture.h"
#include <limits.h>

static uint64_t rnd(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dULL;
}

static bool edge_widest; /* edge_u64 returns only 10-byte varints */

/* Mostly values at varint size boundaries (1, 2, 3, 9 and 10 bytes, the
 * extremes, negatives), sometimes any 64 bits. */
static uint64_t edge_u64(uint64_t *s) {
  if (edge_widest)
    return rnd(s) | 1ULL << 63;
  static const uint64_t edges[] = {0,
                                   1,
                                   127,
                                   128,
                                   16383,
                                   16384,
                                   (1ULL << 21) - 1,
                                   1ULL << 21,
                                   (1ULL << 56) - 1,
                                   1ULL << 56,
                                   (1ULL << 63) - 1,
                                   1ULL << 63,
                                   UINT64_MAX,
                                   UINT64_MAX - 127,
                                   (uint64_t)-300};
  uint64_t r = rnd(s);
  return r % 4 == 0 ? rnd(s) : edges[(r >> 8) % (sizeof edges / sizeof *edges)];
}

static int64_t edge_i64(uint64_t *s) {
  return (int64_t)edge_u64(s);
}

/* Packs b with both encoders; the bytes must be identical and decode. */
static void check_pack_matches_ref(pp_builder *b, const char *what) {
  uint8_t *got = NULL, *want = NULL;
  size_t glen = 0, wlen = 0;
  PP_CHECK_INT(pp_builder_pack(b, &got, &glen), ==, 0);
  PP_CHECK_INT(pp_builder_pack_pbc(b, &want, &wlen), ==, 0);
  if (!got || !want || glen != wlen || memcmp(got, want, glen) != 0) {
    size_t at = 0;
    while (got && want && at < glen && at < wlen && got[at] == want[at])
      at++;
    fprintf(stderr, "  %s: %zu bytes, protobuf-c %zu; first difference at byte %zu\n", what, glen,
            wlen, at);
    pp_test_failures++;
  }
  Perftools__Profiles__Profile *p =
      got ? perftools__profiles__profile__unpack(NULL, glen, got) : NULL;
  PP_CHECK(p != NULL);
  if (p)
    PP_CHECK_INT(p->n_string_table, ==, pp_builder_string_count(b));
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(got);
  free(want);
}

/* A random builder through the index-level API, so that every field can
 * take any value (the string-level API only makes well-formed strings). */
static pp_builder *random_builder(uint64_t *s, size_t scale) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  if (!b)
    return NULL;
  size_t nstr = 1 + rnd(s) % (4 * scale + 2);
  char text[400];
  for (size_t i = 0; i < nstr; i++) {
    size_t n = (size_t)snprintf(text, sizeof text, "s%zu-", i);
    size_t pad = rnd(s) % 8 == 0 ? 130 + rnd(s) % 200 : rnd(s) % 12;
    for (size_t k = 0; k < pad && n + 1 < sizeof text; k++)
      text[n++] = (char)('a' + k % 26);
    text[n] = '\0';
    PP_CHECK(pp_builder_string(b, text) >= 0);
  }
  int64_t ns = (int64_t)pp_builder_string_count(b);
#define RS() ((int64_t)(rnd(s) % (uint64_t)ns))
  size_t nst = rnd(s) % 4;
  for (size_t i = 0; i < nst; i++)
    PP_CHECK_INT(pp_builder_add_sample_type_ix(b, RS(), RS()), ==, 0);
  if (rnd(s) % 2)
    pp_builder_set_period_ix(b, rnd(s) % 4 ? RS() : 0, rnd(s) % 4 ? RS() : 0, edge_i64(s));
  pp_builder_set_time(b, edge_i64(s), edge_i64(s));
  for (size_t i = rnd(s) % 4; i > 0; i--)
    PP_CHECK_INT(pp_builder_add_comment_ix(b, RS()), ==, 0);
  if (rnd(s) % 2)
    pp_builder_set_extras_ix(b, RS(), RS(), RS(), RS());
  uint64_t nmap = 0, nfn = 0, nloc = 0;
  for (size_t i = rnd(s) % (scale + 1); i > 0; i--) {
    uint64_t id = pp_builder_mapping_ix(b, edge_u64(s), edge_u64(s), edge_u64(s), RS(), RS(),
                                        (unsigned)(rnd(s) % 16));
    PP_CHECK(id > 0);
    nmap = id > nmap ? id : nmap;
  }
  for (size_t i = rnd(s) % (2 * scale + 1); i > 0; i--) {
    uint64_t id = pp_builder_function_ix(b, RS(), RS(), RS(), edge_i64(s));
    PP_CHECK(id > 0);
    nfn = id > nfn ? id : nfn;
  }
  uint64_t fids[5];
  int64_t lines[5];
  for (size_t i = rnd(s) % (2 * scale + 1); i > 0; i--) {
    size_t nl = nfn ? rnd(s) % 5 : 0;
    for (size_t k = 0; k < nl; k++) {
      fids[k] = 1 + rnd(s) % nfn;
      lines[k] = edge_i64(s);
    }
    uint64_t id = pp_builder_location(b, rnd(s) % (nmap + 1), edge_u64(s), fids, lines, nl);
    PP_CHECK(id > 0);
    nloc = id > nloc ? id : nloc;
  }
  uint64_t stack[64];
  int64_t values[3];
  pp_ilabel labels[4];
  for (size_t i = nst ? rnd(s) % (3 * scale + 1) : 0; i > 0; i--) {
    size_t depth = nloc ? rnd(s) % 64 : 0, nlab = rnd(s) % 5;
    for (size_t k = 0; k < depth; k++)
      stack[k] = 1 + rnd(s) % nloc;
    for (size_t k = 0; k < nst; k++)
      values[k] = edge_i64(s);
    for (size_t k = 0; k < nlab; k++) {
      bool num = rnd(s) % 2;
      labels[k] =
          (pp_ilabel){RS(), num ? 0 : RS(), num ? edge_i64(s) : 0, num && rnd(s) % 2 ? RS() : 0};
    }
    PP_CHECK_INT(pp_builder_sample_ix(b, stack, depth, values, nst, labels, nlab), ==, 0);
  }
#undef RS
  return b;
}

#define EDGE_N 17000 /* ids and string indices past 16383: 3-byte varints */

#define EDGE_DEEP 6000 /* frames of one sample: its packed ids pass 16383 bytes */

#define EDGE_LONG 20000

/* A profile at the edges of the wire format that go tool pprof accepts:
 * ids and string indices of 1, 2 and 3 bytes, int64s below 0 (10 bytes),
 * a sample and a string longer than 16383 bytes, numeric labels, every
 * mapping flag, comments, drop/keep_frames, default_sample_type, doc_url. */
static pp_builder *edge_builder(void) {
  pp_builder *b = typed_builder();
  static char long_comment[EDGE_LONG + 1];
  memset(long_comment, 'x', EDGE_LONG);
  pp_builder_set_time(b, -1000, INT64_MAX);
  uint64_t m1 =
      pp_builder_mapping(b, 0x400000, 0xffffffffffff0000ULL, 1ULL << 63, "/bin/edge", "b1d", true);
  uint64_t m2 =
      pp_builder_mapping_ix(b, 0, UINT64_MAX, 0, pp_builder_string(b, "/lib/all.so"), 0,
                            PP_MAPPING_HAS_FUNCTIONS | PP_MAPPING_HAS_FILENAMES |
                                PP_MAPPING_HAS_LINE_NUMBERS | PP_MAPPING_HAS_INLINE_FRAMES);
  static uint64_t loc[EDGE_N + 1];
  char name[32];
  for (int i = 1; i <= EDGE_N; i++) {
    snprintf(name, sizeof name, "f%05d", i);
    uint64_t f = pp_builder_function(b, name, name, "edge.c", i % 2 ? INT64_MIN : i);
    int64_t line = i % 3 ? -i : i;
    loc[i] = pp_builder_location(
        b, i % 2 ? m1 : m2, i == EDGE_N ? UINT64_MAX : 0x400000 + 16 * (uint64_t)i, &f, &line, 1);
  }
  static uint64_t deep[EDGE_DEEP];
  for (int i = 0; i < EDGE_DEEP; i++)
    deep[i] = loc[EDGE_N - i];
  pp_label route = {"route", "/edge", 0, NULL}, neg = {"bytes", NULL, -4096, "bytes"};
  uint64_t s1[] = {loc[1], loc[128], loc[16384], loc[EDGE_N]};
  PP_CHECK_INT(pp_builder_sample(b, s1, 4, (int64_t[]){INT64_MIN, -1}, 2, &route, 1), ==, 0);
  PP_CHECK_INT(pp_builder_sample(b, deep, EDGE_DEEP, (int64_t[]){INT64_MAX, 128}, 2, &neg, 1), ==,
               0);
  PP_CHECK_INT(pp_builder_sample(b, NULL, 0, (int64_t[]){-300, 16384}, 2, NULL, 0), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(b, "pushprof edge"), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(b, long_comment), ==, 0);
  pp_builder_set_extras_ix(b, pp_builder_string(b, "^nomatch_drop$"),
                           pp_builder_string(b, "^nomatch_keep$"), pp_builder_string(b, "cpu"),
                           pp_builder_string(b, "https://example.com/edge"));
  return b;
}

static void test_pack_unpack_round_trip(void) {
  Perftools__Profiles__Profile *p = profile_a();
  char why[256] = "";
  PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
  PP_CHECK_STR(p->string_table[0], "");
  PP_CHECK_INT(p->n_sample_type, ==, 2);
  PP_CHECK_STR(str(p, p->sample_type[0]->type), "samples");
  PP_CHECK_STR(str(p, p->sample_type[0]->unit), "count");
  PP_CHECK_STR(str(p, p->sample_type[1]->type), "cpu");
  PP_CHECK_STR(str(p, p->sample_type[1]->unit), "nanoseconds");
  PP_CHECK(p->period_type != NULL);
  if (p->period_type)
    PP_CHECK_STR(str(p, p->period_type->unit), "nanoseconds");
  PP_CHECK_INT(p->period, ==, 10000000);
  PP_CHECK_INT(p->time_nanos, ==, 1000);
  PP_CHECK_INT(p->duration_nanos, ==, 500);
  PP_CHECK_INT(p->n_comment, ==, 1);
  if (p->n_comment)
    PP_CHECK_STR(str(p, p->comment[0]), "from a");
  PP_CHECK_INT(p->n_mapping, ==, 1);
  PP_CHECK_STR(str(p, p->mapping[0]->filename), "/bin/app");
  PP_CHECK_STR(str(p, p->mapping[0]->build_id), "abc");
  PP_CHECK(p->mapping[0]->has_functions);
  PP_CHECK_INT(p->mapping[0]->memory_start, ==, 0x400000);
  PP_CHECK_INT(p->mapping[0]->memory_limit, ==, 0x500000);
  PP_CHECK_INT(p->n_function, ==, 3);
  PP_CHECK_STR(str(p, p->function[2]->system_name), "_Z4leafv");
  PP_CHECK_INT(p->function[2]->start_line, ==, 20);
  PP_CHECK_INT(p->location[2]->address, ==, 0x403000);
  PP_CHECK_INT(p->n_sample, ==, 2);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 0), ==, 4);
  PP_CHECK_INT(value_of(p, "leaf;work;main|route=/a", 1), ==, 40);
  PP_CHECK_INT(value_of(p, "work;main", 1), ==, 20);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* n random profiles from seed packed and compared with protobuf-c's: every
 * big_every-th with big samples, the others with up to small - 1. */
static void check_random_profiles(uint64_t seed, int n, int big_every, size_t big, size_t small,
                                  const char *kind) {
  char what[64];
  for (int i = 0; i < n; i++) {
    pp_builder *b = random_builder(&seed, i % big_every == 0 ? big : (size_t)i % small);
    snprintf(what, sizeof what, "%s profile %d", kind, i);
    if (b)
      check_pack_matches_ref(b, what);
    pp_builder_free(b);
  }
}

static void test_pack_matches_protobuf_c_on_random_profiles(void) {
  check_random_profiles(0x9e3779b97f4a7c15ULL, 400, 50, 200, 12, "random");
}

/* Every number at its widest: pp_builder_pack.c's buffer bound must hold (ASan and
 * the encoder's assert would see an overrun). */
static void test_pack_matches_protobuf_c_on_widest_values(void) {
  edge_widest = true;
  check_random_profiles(0x2545f4914f6cdd1dULL, 100, 25, 150, 10, "widest");
  edge_widest = false;
}

static void test_pack_matches_protobuf_c_on_empty_profiles(void) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  check_pack_matches_ref(b, "new builder");
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
  PP_CHECK(p != NULL);
  if (p) { /* just string_table[0] = "" */
    PP_CHECK_INT(p->n_string_table, ==, 1);
    PP_CHECK_STR(p->string_table[0], "");
    PP_CHECK_INT(p->n_sample + p->n_sample_type + p->n_mapping + p->n_location + p->n_function, ==,
                 0);
    PP_CHECK(p->period_type == NULL);
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(buf);
  /* A period type of zeros is still there (an empty message). */
  pp_builder_set_period_ix(b, 0, 0, 0);
  check_pack_matches_ref(b, "zero period type");
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  p = perftools__profiles__profile__unpack(NULL, len, buf);
  PP_CHECK(p != NULL && p->period_type != NULL);
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(buf);
  pp_builder_free(b);
}

static void test_pack_matches_protobuf_c_on_edge_values(void) {
  pp_builder *b = edge_builder();
  check_pack_matches_ref(b, "edge profile");
  /* And the decoded content, independently of the reference. */
  uint8_t *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &buf, &len), ==, 0);
  Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
  char why[256] = "";
  PP_CHECK(p != NULL);
  if (p && p->n_sample == 3 && p->n_mapping == 2 && p->n_location == EDGE_N) {
    PP_CHECK_INT(pp_pprof_validate(p, why, sizeof why), ==, 0);
    PP_CHECK_INT(p->sample[0]->n_location_id, ==, 4);
    PP_CHECK_INT(p->sample[0]->location_id[3], ==, EDGE_N);
    PP_CHECK(p->sample[0]->value[0] == INT64_MIN && p->sample[0]->value[1] == -1);
    PP_CHECK_INT(p->sample[1]->n_location_id, ==, EDGE_DEEP);
    PP_CHECK(p->sample[1]->value[0] == INT64_MAX);
    PP_CHECK_INT(p->sample[1]->n_label, ==, 1);
    PP_CHECK_INT(p->sample[1]->label[0]->num, ==, -4096);
    PP_CHECK_STR(str(p, p->sample[1]->label[0]->num_unit), "bytes");
    PP_CHECK_INT(p->sample[2]->n_location_id, ==, 0);
    PP_CHECK_INT(p->sample[2]->value[0], ==, -300);
    PP_CHECK(p->mapping[0]->file_offset == 1ULL << 63);
    PP_CHECK(p->mapping[0]->has_functions && !p->mapping[0]->has_inline_frames);
    PP_CHECK(p->mapping[1]->memory_limit == UINT64_MAX);
    PP_CHECK(p->mapping[1]->has_functions && p->mapping[1]->has_filenames &&
             p->mapping[1]->has_line_numbers && p->mapping[1]->has_inline_frames);
    PP_CHECK(p->location[EDGE_N - 1]->address == UINT64_MAX);
    PP_CHECK_INT(p->location[EDGE_N - 1]->line[0]->line, ==, -EDGE_N); /* 17000 % 3 != 0 */
    PP_CHECK(p->function[0]->start_line == INT64_MIN);
    PP_CHECK_STR(str(p, p->function[EDGE_N - 1]->name), "f17000");
    PP_CHECK(p->time_nanos == -1000 && p->duration_nanos == INT64_MAX);
    PP_CHECK_INT(p->n_comment, ==, 2);
    PP_CHECK_INT(strlen(str(p, p->comment[1])), ==, EDGE_LONG);
    PP_CHECK_STR(str(p, p->drop_frames), "^nomatch_drop$");
    PP_CHECK_STR(str(p, p->keep_frames), "^nomatch_keep$");
    PP_CHECK_STR(str(p, p->default_sample_type), "cpu");
    PP_CHECK_STR(str(p, p->doc_url), "https://example.com/edge");
  } else {
    fprintf(stderr, "  edge profile: %zu samples, %zu mappings, %zu locations\n",
            p ? p->n_sample : 0, p ? p->n_mapping : 0, p ? p->n_location : 0);
    pp_test_failures++;
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
  free(buf);
  pp_builder_free(b);
}

/* The packs of merged profiles (what the sidecar ships) as well. */
static void test_pack_matches_protobuf_c_on_merges(void) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  pp_builder *m = pp_builder_new();
  char why[256] = "";
  PP_CHECK_INT(pp_merge_add(m, a, why, sizeof why), ==, 0);
  check_pack_matches_ref(m, "merge of a");
  PP_CHECK_INT(pp_merge_add(m, bp, why, sizeof why), ==, 0);
  check_pack_matches_ref(m, "merge of a and b");
  pp_builder *piece = pp_builder_new();
  PP_CHECK_INT(pp_merge_add_samples(piece, bp, 1, 2, why, sizeof why), ==, 0);
  check_pack_matches_ref(piece, "sample 1 of b");
  pp_builder_free(piece);
  pp_builder_free(m);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
}

/* A builder reset and filled again packs the very bytes a new builder
 * packs for the same adds, through several resets, and its content costs
 * what a new one's memory does (pp_builder_mem_content mirrors the growth
 * rules: equal to pp_builder_mem for a builder never reset). */
static void test_reset_builder_packs_as_a_new_one(void) {
  Perftools__Profiles__Profile *a = profile_a(), *bp = profile_b();
  char why[256] = "";
  pp_builder *reused = pp_builder_new();
  for (int round = 0; round < 4 && reused; round++) {
    pp_builder *fresh = pp_builder_new();
    const Perftools__Profiles__Profile *first = round % 2 ? bp : a, *second = round % 2 ? a : bp;
    for (int k = 0; k <= round; k++) { /* the same profiles again: samples sum */
      PP_CHECK_INT(pp_merge_add(reused, first, why, sizeof why), ==, 0);
      PP_CHECK_INT(pp_merge_add(fresh, first, why, sizeof why), ==, 0);
    }
    if (round != 1) {
      PP_CHECK_INT(pp_merge_add(reused, second, why, sizeof why), ==, 0);
      PP_CHECK_INT(pp_merge_add(fresh, second, why, sizeof why), ==, 0);
    }
    uint8_t *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    PP_CHECK_INT(pp_builder_pack(reused, &x, &xl), ==, 0);
    PP_CHECK_INT(pp_builder_pack(fresh, &y, &yl), ==, 0);
    PP_CHECK(x && y && xl == yl && memcmp(x, y, xl) == 0);
    PP_CHECK_INT(pp_builder_mem_content(fresh), ==, pp_builder_mem(fresh));
    PP_CHECK_INT(pp_builder_mem_content(reused), ==, pp_builder_mem(fresh));
    check_pack_matches_ref(reused, "merges into a reset builder");
    free(x);
    free(y);
    pp_builder_free(fresh);
    size_t kept = pp_builder_mem(reused);
    PP_CHECK_INT(pp_builder_reset(reused), ==, 0);
    PP_CHECK_INT(pp_builder_sample_count(reused), ==, 0);
    PP_CHECK_INT(pp_builder_string_count(reused), ==, 1); /* "" only */
    PP_CHECK(pp_builder_mem(reused) + 4096 >= kept);      /* tables kept (chunks freed) */
    pp_builder *empty = pp_builder_new();
    size_t c = pp_builder_mem_content(reused), e = pp_builder_mem(empty);
    PP_CHECK(c >= e && c - e < 4096); /* the scratch space it kept, no more */
    pp_builder_free(empty);
  }
  pp_builder_free(reused);
  perftools__profiles__profile__free_unpacked(a, NULL);
  perftools__profiles__profile__free_unpacked(bp, NULL);
}

/* The edge profile, uncompressed, for it_proto_pprof_raw.sh. */
static int write_edge(const char *path) {
  pp_builder *b = edge_builder();
  uint8_t *raw = NULL;
  size_t len = 0;
  int rc = 1;
  if (pp_builder_pack(b, &raw, &len) != 0) {
    fprintf(stderr, "pack failed\n");
    goto out;
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(raw, 1, len, f) != len || fclose(f) != 0) {
    perror(path);
    goto out;
  }
  rc = 0;
out:
  free(raw);
  pp_builder_free(b);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-edge") == 0)
    return write_edge(argv[2]);
  PP_RUN(test_pack_unpack_round_trip);
  PP_RUN(test_pack_matches_protobuf_c_on_random_profiles);
  PP_RUN(test_pack_matches_protobuf_c_on_widest_values);
  PP_RUN(test_pack_matches_protobuf_c_on_empty_profiles);
  PP_RUN(test_pack_matches_protobuf_c_on_edge_values);
  PP_RUN(test_pack_matches_protobuf_c_on_merges);
  PP_RUN(test_reset_builder_packs_as_a_new_one);
  PP_DONE();
}
