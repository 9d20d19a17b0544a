/* Push identities and the index that makes a push that arrives twice export
 * once: what makes two pushes the same, what tells them apart, pending and
 * exported entries, expiry and the bound on remembered identities. */
#include <stdio.h>
#include <string.h>

#include "dedup.h"
#include "pp_test.h"

static Pushprof__V1__PushRequest push(uint64_t seq, int64_t start) {
  Pushprof__V1__PushRequest r = PUSHPROF__V1__PUSH_REQUEST__INIT;
  r.service = "checkout";
  r.hostname = "node-1";
  r.pid = 4242;
  r.process_start_time_nanos = 1700000000000000000;
  r.sequence = seq;
  r.start_time_nanos = start;
  r.end_time_nanos = start + 10000000000;
  return r;
}

static void test_dedup_a_retried_push_has_the_same_identity(void) {
  Pushprof__V1__PushRequest a = push(7, 1700000001000000000), b = push(7, 1700000001000000000);
  b.dropped_profiles = 5; /* a retry may report more drops: still the same push */
  dedup_id ia, ib;
  PP_CHECK(dedup_push_id(&a, &ia));
  PP_CHECK(dedup_push_id(&b, &ib));
  PP_CHECK(memcmp(&ia, &ib, sizeof ia) == 0);
  PP_CHECK(!dedup_id_is_zero(&ia));
}

static void test_dedup_any_field_of_the_identity_tells_pushes_apart(void) {
  Pushprof__V1__PushRequest base = push(7, 1700000001000000000);
  dedup_id id0, id;
  PP_CHECK(dedup_push_id(&base, &id0));
  Pushprof__V1__PushRequest v[6];
  for (int i = 0; i < 6; i++)
    v[i] = base;
  v[0].sequence = 8;
  v[1].pid = 4243;
  v[2].service = "billing";
  v[3].hostname = "node-2";
  v[4].start_time_nanos += 1; /* another image of the process (exec) */
  v[5].process_start_time_nanos += 1;
  for (int i = 0; i < 6; i++) {
    PP_CHECK(dedup_push_id(&v[i], &id));
    PP_CHECK(memcmp(&id, &id0, sizeof id) != 0);
  }
}

static void test_dedup_a_push_without_sequence_or_start_has_none(void) {
  Pushprof__V1__PushRequest a = push(0, 1700000001000000000), b = push(3, 1);
  b.process_start_time_nanos = 0;
  dedup_id id;
  memset(&id, 0xff, sizeof id);
  PP_CHECK(!dedup_push_id(&a, &id));
  PP_CHECK(dedup_id_is_zero(&id));
  PP_CHECK(!dedup_push_id(&b, &id));
  PP_CHECK(!dedup_push_id(NULL, &id));
  /* Such a push is known by its spool file's name instead. */
  dedup_id f1, f2, f1b;
  dedup_file_id("1700000000000000000-00000001", &f1);
  dedup_file_id("1700000000000000000-00000002", &f2);
  dedup_file_id("1700000000000000000-00000001", &f1b);
  PP_CHECK(memcmp(&f1, &f1b, sizeof f1) == 0 && memcmp(&f1, &f2, sizeof f1) != 0);
  PP_CHECK_INT(dedup_file_tag("a"), ==, dedup_file_tag("a"));
  PP_CHECK(dedup_file_tag("a") != dedup_file_tag("b"));
}

static void test_dedup_index_keeps_pending_and_expires_exported(void) {
  dedup_index *x = dedup_new();
  PP_CHECK(x != NULL);
  if (!x)
    return;
  dedup_id a, b, zero;
  dedup_file_id("a", &a);
  dedup_file_id("b", &b);
  memset(&zero, 0, sizeof zero);
  PP_CHECK_INT(dedup_put(x, &zero, 1, 0), ==, -1); /* no identity: not indexed */
  PP_CHECK_INT(dedup_put(x, &a, 11, 0), ==, 0);    /* pending */
  PP_CHECK_INT(dedup_put(x, &b, 12, 2000000000), ==, 0);
  dedup_entry e;
  PP_CHECK(dedup_find(x, &a, &e) && e.file_tag == 11 && e.expires_ns == 0);
  PP_CHECK(dedup_find(x, &b, &e) && e.file_tag == 12 && e.expires_ns == 2000000000);
  PP_CHECK_INT(dedup_size(x), ==, 2);
  dedup_expire(x, 3000000000LL); /* b's time is past; a, pending, stays */
  PP_CHECK(dedup_find(x, &a, NULL));
  PP_CHECK(!dedup_find(x, &b, NULL));
  PP_CHECK_INT(dedup_size(x), ==, 1);
  /* Exported: a now expires; replacing keeps one entry. */
  PP_CHECK_INT(dedup_put(x, &a, 11, 5000000000), ==, 0);
  PP_CHECK_INT(dedup_size(x), ==, 1);
  dedup_erase(x, &a);
  PP_CHECK(!dedup_find(x, &a, NULL));
  PP_CHECK_INT(dedup_size(x), ==, 0);
  dedup_free(x);
}

static dedup_id file_id(const char *fmt, int i) {
  char name[32];
  dedup_id id;
  snprintf(name, sizeof name, fmt, i);
  dedup_file_id(name, &id);
  return id;
}

static void test_dedup_index_put_find_erase_expire(void) {
  dedup_index *x = dedup_new();
  PP_CHECK(x != NULL);
  if (!x)
    return;
  enum { N = 5000 };
  for (int i = 0; i < N; i++) {
    dedup_id id = file_id("%d.push", i);
    PP_CHECK_INT(dedup_put(x, &id, (uint32_t)i, i % 2 ? (1000 + i) * 1000000000LL : 0), ==, 0);
  }
  PP_CHECK_INT(dedup_size(x), ==, N);
  int found = 0;
  for (int i = 0; i < N; i++) {
    dedup_id id = file_id("%d.push", i);
    dedup_entry e;
    if (dedup_find(x, &id, &e) && e.file_tag == (uint32_t)i &&
        e.expires_ns == (i % 2 ? (1000 + i) * 1000000000LL : 0))
      found++;
    if (i % 10 == 0)
      dedup_erase(x, &id);
  }
  PP_CHECK_INT(found, ==, N);
  PP_CHECK_INT(dedup_size(x), ==, N - N / 10);
  dedup_expire(x, (1000 + N) * 1000000000LL); /* every odd one that is left expires */
  int left = 0;
  for (int i = 0; i < N; i++) {
    dedup_id id = file_id("%d.push", i);
    if (dedup_find(x, &id, NULL))
      left++;
  }
  PP_CHECK_INT(left, ==, N / 2 - N / 10);
  PP_CHECK_INT(dedup_size(x), ==, (size_t)left);
  /* Churn through erased slots: the table keeps finding empty ones. */
  for (int i = 0; i < 4 * N; i++) {
    dedup_id id = file_id("churn-%d", i);
    PP_CHECK_INT(dedup_put(x, &id, 1, 0), ==, 0);
    dedup_erase(x, &id);
  }
  PP_CHECK_INT(dedup_size(x), ==, (size_t)left);
  dedup_free(x);
}

static void test_dedup_remembers_at_most_the_bound_and_forgets_the_oldest(void) {
  dedup_index *x = dedup_new();
  PP_CHECK(x != NULL);
  if (!x)
    return;
  char name[32];
  dedup_id id;
  for (int i = 0; i < DEDUP_MAX_DONE + 1000; i++) {
    snprintf(name, sizeof name, "f%d", i);
    dedup_file_id(name, &id);
    /* Expiry grows with i: the first ones are the oldest. */
    PP_CHECK_INT(dedup_put(x, &id, 0, (int64_t)(1000 + i) * 1000000000), ==, 0);
  }
  PP_CHECK(dedup_size(x) <= DEDUP_MAX_DONE);
  PP_CHECK(dedup_size(x) > DEDUP_MAX_DONE / 2); /* eviction keeps the newer half at least */
  dedup_file_id("f0", &id);
  PP_CHECK(!dedup_find(x, &id, NULL)); /* the oldest went */
  snprintf(name, sizeof name, "f%d", DEDUP_MAX_DONE + 999);
  dedup_file_id(name, &id);
  PP_CHECK(dedup_find(x, &id, NULL)); /* the newest stayed */
  /* A pending entry is never evicted for room. */
  dedup_id pend;
  dedup_file_id("pending", &pend);
  PP_CHECK_INT(dedup_put(x, &pend, 0, 0), ==, 0);
  for (int i = 0; i < DEDUP_MAX_DONE; i++) {
    snprintf(name, sizeof name, "g%d", i);
    dedup_file_id(name, &id);
    dedup_put(x, &id, 0, (int64_t)(500000 + i) * 1000000000);
  }
  PP_CHECK(dedup_find(x, &pend, NULL));
  dedup_free(x);
}

int main(void) {
  PP_RUN(test_dedup_a_retried_push_has_the_same_identity);
  PP_RUN(test_dedup_any_field_of_the_identity_tells_pushes_apart);
  PP_RUN(test_dedup_a_push_without_sequence_or_start_has_none);
  PP_RUN(test_dedup_index_keeps_pending_and_expires_exported);
  PP_RUN(test_dedup_index_put_find_erase_expire);
  PP_RUN(test_dedup_remembers_at_most_the_bound_and_forgets_the_oldest);
  PP_DONE();
}
