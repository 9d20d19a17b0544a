/* Unit tests for sidecar/batcher_group.c's pure parts: the grouping key
 * (which pushes share a batch), a batch's profile type, when a push was
 * born, and a group's list of pushes. */
#include <stdlib.h>
#include <string.h>

#include "batcher_int.h"
#include "pp_test.h"

/* A push and a profile that tests vary field by field. */
typedef struct fixture {
  Pushprof__V1__PushRequest req;
  Pushprof__V1__Label lab[3], *labp[3];
  Perftools__Profiles__Profile p;
  Perftools__Profiles__ValueType st[2], *stp[2], period;
  char *strings[6];
} fixture;

static void fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  pushprof__v1__push_request__init(&f->req);
  f->req.service = (char *)"api";
  static const char *const kv[3][2] = {{"zone", "a"}, {"env", "prod"}, {"app", "x"}};
  for (int i = 0; i < 3; i++) {
    pushprof__v1__label__init(&f->lab[i]);
    f->lab[i].key = (char *)kv[i][0];
    f->lab[i].value = (char *)kv[i][1];
    f->labp[i] = &f->lab[i];
  }
  f->req.labels = f->labp;
  f->req.n_labels = 3;
  perftools__profiles__profile__init(&f->p);
  static const char *const s[6] = {"", "samples", "count", "cpu", "nanoseconds", "alloc_space"};
  for (int i = 0; i < 6; i++)
    f->strings[i] = (char *)s[i];
  f->p.string_table = f->strings;
  f->p.n_string_table = 6;
  for (int i = 0; i < 2; i++) {
    perftools__profiles__value_type__init(&f->st[i]);
    f->stp[i] = &f->st[i];
  }
  f->st[0].type = 1, f->st[0].unit = 2; /* samples/count */
  f->st[1].type = 3, f->st[1].unit = 4; /* cpu/nanoseconds */
  f->p.sample_type = f->stp;
  f->p.n_sample_type = 2;
  perftools__profiles__value_type__init(&f->period);
  f->period.type = 3, f->period.unit = 4;
  f->p.period_type = &f->period;
  f->p.period = 10000000;
}

/* f's key, malloc'ed, with its length; NULL-terminated for comparisons. */
static char *key_of(fixture *f, size_t *len) {
  char *k = batcher_key(&f->req, &f->p, len);
  PP_CHECK(k != NULL);
  return k;
}

static bool same_key(fixture *a, fixture *b) {
  size_t la = 0, lb = 0;
  char *ka = key_of(a, &la), *kb = key_of(b, &lb);
  bool same = ka && kb && la == lb && memcmp(ka, kb, la) == 0;
  free(ka);
  free(kb);
  return same;
}

static void test_batcher_key_ignores_label_order_only(void) {
  fixture a, b;
  fixture_init(&a);
  fixture_init(&b);
  PP_CHECK(same_key(&a, &b));
  /* Labels in another order: one batch. */
  b.labp[0] = &b.lab[2], b.labp[2] = &b.lab[0];
  PP_CHECK(same_key(&a, &b));
  fixture_init(&b);
  b.req.service = (char *)"api2";
  PP_CHECK(!same_key(&a, &b));
  fixture_init(&b);
  b.lab[1].value = (char *)"dev";
  PP_CHECK(!same_key(&a, &b));
  fixture_init(&b);
  b.req.n_labels = 2;
  PP_CHECK(!same_key(&a, &b));
  fixture_init(&b);
  b.p.n_sample_type = 1;
  PP_CHECK(!same_key(&a, &b));
  fixture_init(&b);
  b.st[1].unit = 2;
  PP_CHECK(!same_key(&a, &b));
  fixture_init(&b);
  b.p.period = 20000000;
  PP_CHECK(!same_key(&a, &b));
  fixture_init(&b);
  b.p.period_type = NULL;
  PP_CHECK(!same_key(&a, &b));
  /* Another string table with the same strings is the same profile. */
  fixture_init(&b);
  b.strings[1] = (char *)"cpu", b.strings[3] = (char *)"samples";
  b.st[0].type = 3, b.st[1].type = 1, b.period.type = 1;
  PP_CHECK(same_key(&a, &b));
}

/* Fields are length-prefixed: moving bytes from one field to the next
 * gives another key. */
static void test_batcher_key_fields_cannot_run_together(void) {
  fixture a, b;
  fixture_init(&a);
  fixture_init(&b);
  a.req.n_labels = b.req.n_labels = 1;
  a.lab[0].key = (char *)"ab", a.lab[0].value = (char *)"c";
  b.lab[0].key = (char *)"a", b.lab[0].value = (char *)"bc";
  PP_CHECK(!same_key(&a, &b));
  /* Type indexes outside the string table read as "". */
  fixture_init(&a);
  fixture_init(&b);
  a.st[0].unit = 99;
  b.st[0].unit = 0;
  PP_CHECK(same_key(&a, &b));
}

static void test_batcher_profile_type_names_the_batch(void) {
  fixture f;
  fixture_init(&f);
  PP_CHECK_STR(batcher_profile_type(&f.req, &f.p), "");
  f.req.profile_type = (char *)"cpu"; /* CPU batches never had a type */
  PP_CHECK_STR(batcher_profile_type(&f.req, &f.p), "");
  f.req.profile_type = (char *)"offcpu";
  PP_CHECK_STR(batcher_profile_type(&f.req, &f.p), "offcpu");
  /* No type in the push: the profile's layout decides. */
  f.req.profile_type = (char *)"";
  f.st[1].type = 5;
  PP_CHECK_STR(batcher_profile_type(&f.req, &f.p), "heap");
  PP_CHECK_STR(batcher_profile_type(NULL, &f.p), "heap");
  /* The type splits batches of one service. */
  fixture a;
  fixture_init(&a);
  fixture_init(&f);
  f.req.profile_type = (char *)"lock";
  PP_CHECK(!same_key(&a, &f));
  f.req.profile_type = (char *)"cpu";
  PP_CHECK(same_key(&a, &f));
}

static void test_batcher_push_birth_prefers_the_spool_id_time(void) {
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  const int64_t now = 1700000000000000000LL;
  req.end_time_nanos = now - 5;
  PP_CHECK_INT(batcher_push_birth("01699999999000000000-7.push", &req, now), ==,
               1699999999000000000LL);
  /* An id time in the future, a short or non-numeric prefix, no dash: the
   * push's end time. */
  PP_CHECK_INT(batcher_push_birth("01700000000000000001-7.push", &req, now), ==, now - 5);
  PP_CHECK_INT(batcher_push_birth("0169999999900000000-7.push", &req, now), ==, now - 5);
  PP_CHECK_INT(batcher_push_birth("0169999999900000000x-7.push", &req, now), ==, now - 5);
  PP_CHECK_INT(batcher_push_birth("016999999990000000007.push", &req, now), ==, now - 5);
  PP_CHECK_INT(batcher_push_birth("00000000000000000000-7.push", &req, now), ==, now - 5);
  PP_CHECK_INT(batcher_push_birth("01699999999000000000-", &req, now), ==, now - 5);
  /* An implausible end time: now. */
  req.end_time_nanos = now + 1;
  PP_CHECK_INT(batcher_push_birth("drop-in.push", &req, now), ==, now);
  req.end_time_nanos = 0;
  PP_CHECK_INT(batcher_push_birth("drop-in.push", &req, now), ==, now);
}

static void test_batcher_group_add_id_keeps_every_push(void) {
  group *g = calloc(1, sizeof *g);
  PP_CHECK(g != NULL);
  if (!g)
    return;
  char id[SPOOL_ID_MAX];
  for (int i = 0; i < 100; i++) {
    dedup_id d;
    memset(d.b, i, sizeof d.b);
    snprintf(id, sizeof id, "%020d-%d.push", i + 1, i);
    PP_CHECK_INT(batcher_group_add_id(g, id, &d), ==, 0);
  }
  PP_CHECK_INT(g->nids, ==, 100);
  PP_CHECK(g->capids >= 100);
  size_t bad = 0;
  for (int i = 0; i < 100; i++) {
    snprintf(id, sizeof id, "%020d-%d.push", i + 1, i);
    if (strcmp(g->ids[i], id) != 0 || g->pids[i].b[0] != i || g->pids[i].b[15] != i)
      bad++;
  }
  PP_CHECK_INT(bad, ==, 0);
  batcher_group_free(g);
}

int main(void) {
  PP_RUN(test_batcher_key_ignores_label_order_only);
  PP_RUN(test_batcher_key_fields_cannot_run_together);
  PP_RUN(test_batcher_profile_type_names_the_batch);
  PP_RUN(test_batcher_push_birth_prefers_the_spool_id_time);
  PP_RUN(test_batcher_group_add_id_keeps_every_push);
  PP_DONE();
}
