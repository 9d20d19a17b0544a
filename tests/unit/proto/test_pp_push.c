/* proto/wire/pp_push.c: decoding and validating a push frame. */
#include <stdlib.h>
#include <string.h>

#include "batch_test_util.h"
#include "pp_decode_ref.h"
#include "pp_push.h"
#include "pp_test.h"
#include "pp_gzip.h"

static int decode_code(const uint8_t *f, size_t len, char *why, size_t wl) {
  int code = -1;
  pp_push *p = pp_push_decode(f, len, PP_FRAME_MAX_DEFAULT, &code, why, wl);
  if (p) {
    PP_CHECK_INT(code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__OK);
    pp_push_free(p);
    return 0;
  }
  PP_CHECK(why[0] != '\0');
  return code;
}

/* Frames req and checks that pp_push_decode answers code (0: accepted); the
 * reason, if refused, in why. */
static void expect_code_at(const Pushprof__V1__PushRequest *req, int code, char *why, size_t wl,
                           int line) {
  size_t len = 0;
  uint8_t *f = btu_frame_req(req, &len);
  int got = decode_code(f, len, why, wl);
  if (got != code) {
    fprintf(stderr, "%s:%d: pp_push_decode answered %d, want %d (%s)\n", __FILE__, line, got, code,
            why);
    pp_test_failures++;
  }
  free(f);
}
#define EXPECT_CODE(req, code, why, wl) expect_code_at((req), (code), (why), (wl), __LINE__)

static void test_decode_frame_validates_every_layer(void) {
  char why[256];
  size_t len, plen;
  uint8_t *f = btu_frame("svc", 3, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(decode_code(f, len, why, sizeof why), ==, 0);
  /* framing */
  PP_CHECK_INT(decode_code(f, 5, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
  PP_CHECK_INT(decode_code(f, len - 1, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
  uint8_t *bad = malloc(len);
  memcpy(bad, f, len);
  bad[0] = 'X';
  PP_CHECK_INT(decode_code(bad, len, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
  memcpy(bad, f, len);
  pp_frame_header_encode(bad, PP_FRAME_REPLY, (uint32_t)(len - PP_FRAME_HEADER_SIZE));
  PP_CHECK_INT(decode_code(bad, len, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
  /* a payload that is not a PushRequest */
  memcpy(bad, f, len);
  memset(bad + PP_FRAME_HEADER_SIZE, 0xff, len - PP_FRAME_HEADER_SIZE);
  PP_CHECK_INT(decode_code(bad, len, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  free(bad);
  free(f);

  uint8_t *pprof = btu_pprof(3, "leaf", &plen);
  PP_CHECK(pprof != NULL);
  if (!pprof)
    return;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = "svc";
  req.pprof.data = pprof;
  req.pprof.len = plen;
  EXPECT_CODE(&req, 0, why, sizeof why);
  req.service = "";
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  PP_CHECK(strstr(why, "service") != NULL);
  char longsvc[PP_SERVICE_MAX + 2];
  memset(longsvc, 'a', sizeof longsvc - 1);
  longsvc[sizeof longsvc - 1] = '\0';
  req.service = longsvc;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  req.service = "svc";
  req.start_time_nanos = 10;
  req.end_time_nanos = 5;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  req.end_time_nanos = 10;
  /* labels: too many, empty key, long value */
  Pushprof__V1__Label ls[PP_LABELS_MAX + 1], *lp[PP_LABELS_MAX + 1];
  for (int i = 0; i <= PP_LABELS_MAX; i++) {
    pushprof__v1__label__init(&ls[i]);
    ls[i].key = "k";
    ls[i].value = "v";
    lp[i] = &ls[i];
  }
  req.labels = lp;
  req.n_labels = PP_LABELS_MAX + 1;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  req.n_labels = PP_LABELS_MAX;
  EXPECT_CODE(&req, 0, why, sizeof why);
  ls[3].key = "";
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  ls[3].key = "k";
  static char longval[PP_LABEL_VALUE_MAX + 2];
  memset(longval, 'v', sizeof longval - 1);
  ls[5].value = longval;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  req.n_labels = 0;
  /* no pprof */
  req.pprof.len = 0;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH, why, sizeof why);
  /* a pprof go tool pprof would reject: not a protobuf at all */
  uint8_t junk[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  req.pprof.data = junk;
  req.pprof.len = sizeof junk;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF, why, sizeof why);
  /* a valid protobuf but an invalid pprof: string_table[0] not empty */
  Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
  char *strs[1] = {"notempty"};
  p.string_table = strs;
  p.n_string_table = 1;
  size_t pl = perftools__profiles__profile__get_packed_size(&p);
  uint8_t *pb = malloc(pl);
  perftools__profiles__profile__pack(&p, pb);
  req.pprof.data = pb;
  req.pprof.len = pl;
  EXPECT_CODE(&req, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF, why, sizeof why);
  free(pb);
  free(pprof);
}

/* pp_push_decode hands over the parsed pprof (the same profile the frame
 * holds) and drops the encoded copy from the request. */
static void test_decode_hands_over_parsed_pprof(void) {
  size_t plen = 0, flen = 0;
  uint8_t *p = btu_pprof(42, "leaf_fn", &plen);
  PP_CHECK(p != NULL);
  uint8_t *f = p ? btu_frame_raw("svc", p, plen, &flen) : NULL;
  PP_CHECK(f != NULL);
  if (!f) {
    free(p);
    return;
  }
  char why[256] = "";
  int code = -1;
  uint64_t n0 = pp_push_decode_count();
  pp_push *push = pp_push_decode(f, flen, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(push != NULL);
  PP_CHECK_INT(pp_push_decode_count(), ==, n0 + 1);
  Pushprof__V1__PushRequest *r = push ? push->req : NULL;
  pp_pprof *prof = push ? push->prof : NULL;
  PP_CHECK(prof != NULL);
  if (r && prof) {
    PP_CHECK_INT(push->frame_bytes, ==, flen);
    PP_CHECK_INT(code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__OK);
    PP_CHECK(r->pprof.data == NULL);
    PP_CHECK_INT(r->pprof.len, ==, 0);
    PP_CHECK_STR(r->service, "svc");
    PP_CHECK_INT(btu_total(pp_pprof_profile(prof)), ==, 3 * 42); /* 42 + 2 * 42 */
    PP_CHECK(pp_pprof_mem(prof) > 0);
  }
  pp_push_free(push);
  /* A bad pprof: nothing handed over. */
  free(f);
  f = btu_frame_raw("svc", (const uint8_t *)"\x0a\x05junk!", 7, &flen);
  push = f ? pp_push_decode(f, flen, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why) : NULL;
  PP_CHECK(f != NULL);
  PP_CHECK(push == NULL);
  PP_CHECK_INT(code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF);
  free(f);
  free(p);
}

/* The decoded request keeps every field but the pprof, in memory of its
 * own: nothing points into the frame, which the caller may reuse. */
static void test_decode_keeps_every_request_field(void) {
  size_t plen = 0, flen = 0;
  uint8_t *pprof = btu_pprof(5, "leaf", &plen);
  PP_CHECK(pprof != NULL);
  if (!pprof)
    return;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  Pushprof__V1__Label l1 = PUSHPROF__V1__LABEL__INIT, l2 = PUSHPROF__V1__LABEL__INIT;
  Pushprof__V1__Label *labels[2] = {&l1, &l2};
  l1.key = "env";
  l1.value = "prod";
  l2.key = "zone";
  l2.value = "";
  req.service = "api";
  req.labels = labels;
  req.n_labels = 2;
  req.pid = 4242;
  req.hostname = "host-7";
  req.start_time_nanos = 1000;
  req.end_time_nanos = 61000;
  req.sequence = 77;
  req.pprof.data = pprof;
  req.pprof.len = plen;
  req.process_start_time_nanos = 12;
  req.dropped_profiles = 3;
  uint8_t *f = btu_frame_req(&req, &flen);
  char why[256] = "";
  int code = -1;
  pp_push *p = pp_push_decode(f, flen, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  memset(f, 0, flen); /* the decoded push must not need the frame */
  PP_CHECK(p != NULL);
  if (p) {
    const Pushprof__V1__PushRequest *r = p->req;
    PP_CHECK_STR(r->service, "api");
    PP_CHECK_INT(r->n_labels, ==, 2);
    if (r->n_labels == 2) {
      PP_CHECK_STR(r->labels[0]->key, "env");
      PP_CHECK_STR(r->labels[0]->value, "prod");
      PP_CHECK_STR(r->labels[1]->key, "zone");
      PP_CHECK_STR(r->labels[1]->value, "");
    }
    PP_CHECK_INT(r->pid, ==, 4242);
    PP_CHECK_STR(r->hostname, "host-7");
    PP_CHECK_INT(r->start_time_nanos, ==, 1000);
    PP_CHECK_INT(r->end_time_nanos, ==, 61000);
    PP_CHECK_INT(r->sequence, ==, 77);
    PP_CHECK_INT(r->process_start_time_nanos, ==, 12);
    PP_CHECK_INT(r->dropped_profiles, ==, 3);
    PP_CHECK_INT(r->no_samples, ==, 0);
    PP_CHECK_INT(r->pprof.len, ==, 0);
    PP_CHECK(p->prof != NULL);
    if (p->prof)
      PP_CHECK_INT(btu_total(pp_pprof_profile(p->prof)), ==, 3 * 5);
  }
  pp_push_free(p);
  free(f);
  free(pprof);
}

/* A no_samples push carries no pprof: decoded without a profile, and one
 * that says no_samples but holds a pprof is refused. */
static void test_no_samples_push_has_no_profile(void) {
  char why[256];
  int code = -1;
  size_t len, plen;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = "cron";
  req.no_samples = 1;
  req.sequence = 9;
  uint8_t *f = btu_frame_req(&req, &len);
  pp_push *p = pp_push_decode(f, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK(p->prof == NULL);
    PP_CHECK_INT(p->req->sequence, ==, 9);
  }
  pp_push_free(p);
  free(f);
  uint8_t *pprof = btu_pprof(3, "leaf", &plen);
  PP_CHECK(pprof != NULL);
  req.pprof.data = pprof;
  req.pprof.len = plen;
  f = btu_frame_req(&req, &len);
  PP_CHECK_INT(decode_code(f, len, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  PP_CHECK(strstr(why, "no_samples") != NULL);
  free(f);
  free(pprof);
}

/* Every decode is counted, refused ones too (the sidecar's tests count the
 * decodes of a scan with it). */
static void test_decode_count_counts_every_call(void) {
  char why[64];
  int code;
  uint64_t n0 = pp_push_decode_count();
  PP_CHECK(pp_push_decode((const uint8_t *)"PPRF", 4, PP_FRAME_MAX_DEFAULT, &code, why,
                          sizeof why) == NULL);
  PP_CHECK_INT(code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
  PP_CHECK_INT(pp_push_decode_count(), ==, n0 + 1);
}

/* A frame of payload bytes written by hand (the header made to match). */
static uint8_t *frame_of(const uint8_t *payload, size_t n, size_t *len) {
  uint8_t *f = malloc(PP_FRAME_HEADER_SIZE + n + 1);
  pp_frame_header_encode(f, PP_FRAME_PUSH, (uint32_t)n);
  memcpy(f + PP_FRAME_HEADER_SIZE, payload, n);
  *len = PP_FRAME_HEADER_SIZE + n;
  return f;
}

/* Appends field 8 (pprof) holding p[0..n) to buf at *at. */
static void put_pprof(uint8_t *buf, size_t *at, const uint8_t *p, size_t n) {
  buf[(*at)++] = 0x42;
  size_t v = n;
  while (v >= 0x80) {
    buf[(*at)++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  buf[(*at)++] = (uint8_t)v;
  if (n)
    memcpy(buf + *at, p, n);
  *at += n;
}

/* The request with a hand-placed pprof: given twice (the last counts, as
 * protobuf-c takes it), between other fields, empty, missing, as a varint,
 * gzipped. */
static void test_decode_finds_the_pprof_where_protobuf_c_would(void) {
  size_t plen = 0, glen = 0, flen = 0, at;
  uint8_t *pprof = btu_pprof(7, "leaf", &plen), *gz = NULL;
  PP_CHECK(pprof != NULL);
  if (!pprof)
    return;
  PP_CHECK_INT(pp_gzip(pprof, plen, &gz, &glen), ==, 0);
  static const uint8_t svc[] = {0x0a, 0x03, 's', 'v', 'c'}, seq[] = {0x38, 0x05};
  static const uint8_t junk[] = {0x0a, 0x05, 'j', 'u', 'n', 'k'};
  uint8_t *buf = malloc(2 * plen + glen + 64), *f;
  char why[256];
  int code;
  pp_push *p;

  /* junk, then the profile: the profile counts; service after the pprof. */
  at = 0;
  put_pprof(buf, &at, junk, sizeof junk);
  put_pprof(buf, &at, pprof, plen);
  memcpy(buf + at, svc, sizeof svc);
  at += sizeof svc;
  memcpy(buf + at, seq, sizeof seq);
  at += sizeof seq;
  f = frame_of(buf, at, &flen);
  p = pp_push_decode(f, flen, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_STR(p->req->service, "svc");
    PP_CHECK_INT(p->req->sequence, ==, 5);
    PP_CHECK(p->req->pprof.data == NULL && p->req->pprof.len == 0);
    PP_CHECK_INT(btu_total(pp_pprof_profile(p->prof)), ==, 3 * 7);
  }
  pp_push_free(p);
  free(f);

  /* The profile, then junk: the junk counts. */
  at = 0;
  memcpy(buf + at, svc, sizeof svc);
  at += sizeof svc;
  put_pprof(buf, &at, pprof, plen);
  put_pprof(buf, &at, junk, sizeof junk);
  f = frame_of(buf, at, &flen);
  PP_CHECK_INT(decode_code(f, flen, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF);
  PP_CHECK(strncmp(why, "invalid pprof: ", 15) == 0);
  free(f);

  /* The profile, then an empty one: missing. No pprof at all: missing. */
  at = 0;
  memcpy(buf + at, svc, sizeof svc);
  at += sizeof svc;
  put_pprof(buf, &at, pprof, plen);
  put_pprof(buf, &at, NULL, 0);
  f = frame_of(buf, at, &flen);
  PP_CHECK_INT(decode_code(f, flen, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  PP_CHECK_STR(why, "pprof is missing");
  free(f);
  f = frame_of(svc, sizeof svc, &flen);
  PP_CHECK_INT(decode_code(f, flen, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  PP_CHECK_STR(why, "pprof is missing");
  free(f);

  /* pprof as a varint, or cut short: not a PushRequest. */
  static const uint8_t as_varint[] = {0x0a, 0x01, 's', 0x40, 0x01};
  static const uint8_t cut[] = {0x0a, 0x01, 's', 0x42, 0x09, 0x01};
  f = frame_of(as_varint, sizeof as_varint, &flen);
  PP_CHECK_INT(decode_code(f, flen, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  PP_CHECK_STR(why, "payload is not a valid PushRequest protobuf");
  free(f);
  f = frame_of(cut, sizeof cut, &flen);
  PP_CHECK_INT(decode_code(f, flen, why, sizeof why), ==,
               PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
  PP_CHECK_STR(why, "payload is not a valid PushRequest protobuf");
  free(f);

  /* gzipped */
  at = 0;
  put_pprof(buf, &at, gz, glen);
  memcpy(buf + at, svc, sizeof svc);
  at += sizeof svc;
  f = frame_of(buf, at, &flen);
  p = pp_push_decode(f, flen, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p)
    PP_CHECK_INT(btu_total(pp_pprof_profile(p->prof)), ==, 3 * 7);
  pp_push_free(p);
  free(f);
  free(buf);
  free(gz);
  free(pprof);
}

static uint64_t rnd(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dULL;
}

static const char *or_empty(const char *s) {
  return s ? s : "";
}

/* Mutated payloads: pp_push_decode must refuse as "not a PushRequest"
 * exactly what protobuf-c's unpack of the whole payload refuses, and
 * otherwise decode the same fields and the same profile. */
static void test_decode_agrees_with_protobuf_c_on_mutated_payloads(void) {
  size_t plen = 0;
  uint8_t *pprof = btu_pprof(3, "leaf", &plen);
  PP_CHECK(pprof != NULL);
  if (!pprof)
    return;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  Pushprof__V1__Label l1 = PUSHPROF__V1__LABEL__INIT, *labels[1] = {&l1};
  l1.key = "env";
  l1.value = "prod";
  req.service = "api";
  req.labels = labels;
  req.n_labels = 1;
  req.hostname = "h";
  req.end_time_nanos = 10;
  req.sequence = 3;
  req.pprof.data = pprof;
  req.pprof.len = plen;
  size_t n = pushprof__v1__push_request__get_packed_size(&req);
  uint8_t *good = malloc(n), *mut = malloc(n + 16);
  pushprof__v1__push_request__pack(&req, good);
  uint64_t seed = 7;
  int ok = 0, not_push = 0, other = 0;
  char why[256], pwhy[256];
  for (int i = 0; i < 20000; i++) {
    size_t m = n;
    memcpy(mut, good, n);
    for (int k = 1 + (int)(rnd(&seed) % 2); k > 0 && m > 0; k--) {
      size_t at = rnd(&seed) % m;
      if (rnd(&seed) % 4 == 0)
        m = at; /* truncate */
      else
        mut[at] ^= (uint8_t)(1u << rnd(&seed) % 8);
    }
    size_t flen;
    uint8_t *f = frame_of(mut, m, &flen);
    int code = -1;
    pp_push *p = pp_push_decode(f, flen, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
    Pushprof__V1__PushRequest *ref = pushprof__v1__push_request__unpack(NULL, m, mut);
    if (!ref) {
      not_push++;
      PP_CHECK(p == NULL);
      PP_CHECK_INT(code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
      PP_CHECK_STR(why, "payload is not a valid PushRequest protobuf");
    } else if (!p) {
      other++;
      PP_CHECK(strcmp(why, "payload is not a valid PushRequest protobuf") != 0);
      if (code == PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF) {
        pp_pprof *q = pp_pprof_parse(ref->pprof.data, ref->pprof.len, 8u * PP_FRAME_MAX_DEFAULT,
                                     pwhy, sizeof pwhy);
        PP_CHECK(q == NULL);
        PP_CHECK(strstr(why, pwhy) != NULL);
        pp_pprof_free(q);
      }
    } else {
      ok++;
      const Pushprof__V1__PushRequest *r = p->req;
      PP_CHECK_STR(or_empty(r->service), or_empty(ref->service));
      PP_CHECK_STR(or_empty(r->hostname), or_empty(ref->hostname));
      PP_CHECK_INT(r->n_labels, ==, ref->n_labels);
      for (size_t j = 0; j < r->n_labels && j < ref->n_labels; j++) {
        PP_CHECK_STR(or_empty(r->labels[j]->key), or_empty(ref->labels[j]->key));
        PP_CHECK_STR(or_empty(r->labels[j]->value), or_empty(ref->labels[j]->value));
      }
      PP_CHECK(r->pid == ref->pid && r->start_time_nanos == ref->start_time_nanos &&
               r->end_time_nanos == ref->end_time_nanos && r->sequence == ref->sequence &&
               r->process_start_time_nanos == ref->process_start_time_nanos &&
               r->dropped_profiles == ref->dropped_profiles && r->no_samples == ref->no_samples);
      Perftools__Profiles__Profile *rp =
          perftools__profiles__profile__unpack(NULL, ref->pprof.len, ref->pprof.data);
      PP_CHECK(rp != NULL && p->prof != NULL);
      if (rp && p->prof)
        PP_CHECK(pp_decode_ref_compare(rp, pp_pprof_profile(p->prof), why, sizeof why) == 0);
      perftools__profiles__profile__free_unpacked(rp, NULL);
    }
    pushprof__v1__push_request__free_unpacked(ref, NULL);
    pp_push_free(p);
    free(f);
  }
  fprintf(stderr, "  decoded %d, refused as not a PushRequest %d, refused otherwise %d\n", ok,
          not_push, other);
  PP_CHECK(ok > 1000 && not_push > 1000 && other > 1000);
  free(good);
  free(mut);
  free(pprof);
}

int main(void) {
  PP_RUN(test_decode_frame_validates_every_layer);
  PP_RUN(test_decode_hands_over_parsed_pprof);
  PP_RUN(test_decode_keeps_every_request_field);
  PP_RUN(test_no_samples_push_has_no_profile);
  PP_RUN(test_decode_count_counts_every_call);
  PP_RUN(test_decode_finds_the_pprof_where_protobuf_c_would);
  PP_RUN(test_decode_agrees_with_protobuf_c_on_mutated_payloads);
  PP_DONE();
}
