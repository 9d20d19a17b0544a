/* Unit tests for sidecar/spool_names.c: the sorted sets of spool file ids,
 * against a plain array searched linearly as the reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_test.h"
#include "spool_int.h"

static void check_sorted(const name_set *s) {
  for (size_t i = 1; i < s->n; i++)
    if (strcmp(s->v[i - 1].id, s->v[i].id) >= 0) {
      PP_CHECK(strcmp(s->v[i - 1].id, s->v[i].id) < 0);
      return;
    }
}

static void test_spool_set_empty_set_finds_nothing(void) {
  name_set s = {0};
  bool found = true;
  PP_CHECK_INT(spool_set_lower(&s, "a", &found), ==, 0);
  PP_CHECK(!found);
  PP_CHECK(!spool_set_has(&s, "a"));
  PP_CHECK(spool_set_find(&s, "a") == NULL);
  uint64_t bytes = 7;
  PP_CHECK(!spool_set_erase(&s, "a", &bytes));
  PP_CHECK_INT(bytes, ==, 7);
}

static void test_spool_set_keeps_order_and_bytes(void) {
  name_set s = {0};
  PP_CHECK_INT(spool_set_insert(&s, "b", 2), ==, 0);
  PP_CHECK_INT(spool_set_insert(&s, "d", 4), ==, 0);
  PP_CHECK_INT(spool_set_insert(&s, "a", 1), ==, 0);
  PP_CHECK_INT(spool_set_insert(&s, "c", 3), ==, 0);
  PP_CHECK_INT(s.n, ==, 4);
  PP_CHECK_STR(s.v[0].id, "a");
  PP_CHECK_STR(s.v[3].id, "d");
  check_sorted(&s);
  /* Where a missing id would go, between its neighbours. */
  bool found = true;
  PP_CHECK_INT(spool_set_lower(&s, "bb", &found), ==, 2);
  PP_CHECK(!found);
  PP_CHECK_INT(spool_set_lower(&s, "e", &found), ==, 4);
  PP_CHECK_INT(spool_set_lower(&s, "c", &found), ==, 2);
  PP_CHECK(found);
  /* A second insert updates the bytes, not the size. */
  PP_CHECK_INT(spool_set_insert(&s, "c", 30), ==, 0);
  PP_CHECK_INT(s.n, ==, 4);
  spool_entry *e = spool_set_find(&s, "c");
  PP_CHECK(e != NULL && e->bytes == 30);
  uint64_t bytes = 0;
  PP_CHECK(spool_set_erase(&s, "a", &bytes));
  PP_CHECK_INT(bytes, ==, 1);
  PP_CHECK(spool_set_erase(&s, "d", NULL));
  PP_CHECK(!spool_set_erase(&s, "d", &bytes));
  PP_CHECK_INT(s.n, ==, 2);
  PP_CHECK_STR(s.v[0].id, "b");
  PP_CHECK_STR(s.v[1].id, "c");
  PP_CHECK(!spool_set_has(&s, "a") && spool_set_has(&s, "b"));
  free(s.v);
}

/* Random inserts and erases past several growths, checked after each step
 * against the reference: same members, same bytes, sorted. */
static void test_spool_set_matches_a_reference_under_random_ops(void) {
  enum { IDS = 500, STEPS = 20000 };
  static char ids[IDS][SPOOL_ID_MAX];
  static uint64_t ref[IDS]; /* bytes + 1, 0 when absent */
  for (int i = 0; i < IDS; i++)
    snprintf(ids[i], sizeof ids[i], "%08x-%d.pb", (unsigned)(i * 2654435761u), i);
  name_set s = {0};
  uint64_t x = 0x9e3779b97f4a7c15ull;
  size_t members = 0, bad = 0;
  for (int step = 0; step < STEPS; step++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int k = (int)(x % IDS);
    if ((x >> 32) % 3 != 0) {
      PP_CHECK_INT(spool_set_insert(&s, ids[k], x & 0xffff), ==, 0);
      members += ref[k] == 0;
      ref[k] = (x & 0xffff) + 1;
    } else {
      uint64_t bytes = 0;
      bool was = spool_set_erase(&s, ids[k], &bytes);
      if (was != (ref[k] != 0) || (was && bytes + 1 != ref[k]))
        bad++;
      members -= ref[k] != 0;
      ref[k] = 0;
    }
    if (s.n != members)
      bad++;
  }
  PP_CHECK_INT(bad, ==, 0);
  check_sorted(&s);
  for (int i = 0; i < IDS; i++) {
    spool_entry *e = spool_set_find(&s, ids[i]);
    if ((e != NULL) != (ref[i] != 0) || (e && e->bytes + 1 != ref[i]))
      bad++;
  }
  PP_CHECK_INT(bad, ==, 0);
  PP_CHECK(s.cap >= s.n && s.n > 64); /* grew past its first allocation */
  free(s.v);
}

int main(void) {
  PP_RUN(test_spool_set_empty_set_finds_nothing);
  PP_RUN(test_spool_set_keeps_order_and_bytes);
  PP_RUN(test_spool_set_matches_a_reference_under_random_ops);
  PP_DONE();
}
