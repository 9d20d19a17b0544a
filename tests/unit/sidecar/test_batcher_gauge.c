/* Unit tests for sidecar/batcher_gauge.c: which columns are gauges, which
 * push of a process is its latest, what the kept profiles cost, and what
 * they add to a batch. The batcher's use of it is in test_batcher.c. */
#include "batch_test_util.h"
#include "batcher_gauge.h"
#include "pp_merge.h"
#include "pp_parse_ref.h"
#include "pp_push.h"
#include "pp_test.h"

#define SEC 1000000000LL
#define T0 (1795341600LL * SEC)

static pp_push *heap_push(int64_t alloc, int64_t inuse, const btu_who *w) {
  size_t len = 0;
  char why[256];
  int code;
  uint8_t *f = btu_heap_frame("api", alloc, inuse, w, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return NULL;
  pp_push *p = pp_push_decode(f, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  free(f);
  PP_CHECK(p != NULL);
  if (!p)
    fprintf(stderr, "decode: %s\n", why);
  return p;
}

/* The gauge columns of the heap layout (btu_heap_pprof). */
static gauge_cols heap_cols(void) {
  const int64_t v[4] = {0, 0, 0, 0};
  size_t len = 0;
  char why[256] = "";
  gauge_cols c = {0};
  uint8_t *raw = btu_heap_pprof(v, v, &len);
  Perftools__Profiles__Profile *shape =
      raw ? pp_ref_parse(raw, len, 1 << 20, why, sizeof why) : NULL;
  PP_CHECK(shape != NULL);
  if (shape) {
    PP_CHECK_INT(batcher_gauge_cols(&c, shape), ==, 0);
    perftools__profiles__profile__free_unpacked(shape, NULL);
  }
  free(raw);
  return c;
}

/* Offers push as batcher_add does, then frees it. */
static void offer(gauge_latest *s, pp_push *p) {
  char why[256] = "";
  if (!p)
    return;
  gauge_cols c = heap_cols();
  PP_CHECK_INT(batcher_gauge_offer(s, &c, p, why, sizeof why), ==, 0);
  batcher_gauge_cols_free(&c);
  pp_push_free(p);
}

/* The inuse_space (column 3) of main->grow the kept profiles add up to. */
static int64_t kept_inuse(gauge_latest *s) {
  pp_builder *b = pp_builder_new();
  char why[256] = "";
  PP_CHECK(b != NULL);
  if (!b)
    return -2;
  PP_CHECK_INT(batcher_gauge_merge(s, b, why, sizeof why), ==, 0);
  PP_CHECK_INT(s->n, ==, 0);
  uint8_t *out = NULL;
  size_t olen = 0;
  int64_t got = -2;
  PP_CHECK_INT(pp_builder_pack(b, &out, &olen), ==, 0);
  Perftools__Profiles__Profile *p = pp_ref_parse(out, olen, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    got = btu_leaf_value(p, "grow", 3);
    /* only gauge columns: alloc_* is the counter merge's */
    PP_CHECK_INT(btu_leaf_value(p, "grow", 1), <=, 0);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  free(out);
  pp_builder_free(b);
  return got;
}

static void test_gauge_columns_are_the_inuse_types(void) {
  const int64_t v[4] = {1, 512, 1, 512};
  size_t len = 0;
  char why[256] = "";
  uint8_t *raw = btu_heap_pprof(v, v, &len);
  Perftools__Profiles__Profile *p = pp_ref_parse(raw, len, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  gauge_cols c;
  if (p) {
    PP_CHECK_INT(batcher_gauge_cols(&c, p), ==, 0);
    PP_CHECK_INT(c.n, ==, 4);
    PP_CHECK_INT(c.ngauge, ==, 2);
    PP_CHECK(c.counter[0] && c.counter[1] && !c.counter[2] && !c.counter[3]);
    PP_CHECK(!c.gauge[0] && !c.gauge[1] && c.gauge[2] && c.gauge[3]);
    batcher_gauge_cols_free(&c);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  free(raw);
  raw = btu_pprof(5, "work", &len); /* a CPU profile: no gauge */
  p = pp_ref_parse(raw, len, 1 << 20, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_INT(batcher_gauge_cols(&c, p), ==, 0);
    PP_CHECK_INT(c.ngauge, ==, 0);
    batcher_gauge_cols_free(&c);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  free(raw);
}

/* Six pushes of one process: its latest counts, whatever the order they
 * come in (a restart replays them in the spool's order, an SDK's backlog
 * may send an older one late). */
static void test_latest_push_of_a_process_wins_in_any_order(void) {
  static const int orders[4][6] = {
      {1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}, {3, 6, 1, 5, 2, 4}, {2, 1, 4, 3, 6, 5}};
  for (int o = 0; o < 4; o++) {
    gauge_latest s = {0};
    for (int i = 0; i < 6; i++) {
      int k = orders[o][i];
      btu_who w = {.pid = 7,
                   .host = "h1",
                   .process_start_ns = T0 - 60 * SEC,
                   .seq = (uint64_t)k,
                   .end_ns = T0 + k * SEC};
      offer(&s, heap_push(100, 1000 * k, &w));
    }
    PP_CHECK_INT(s.n, ==, 1);
    PP_CHECK_INT(kept_inuse(&s), ==, 6000);
    batcher_gauge_free(&s);
  }
}

/* The window's end orders first, then the sequence, then arrival: after an
 * exec (same pid and start time, sequences from 1 again) the new image's
 * heap wins; a push that repeats another's end and sequence replaces it. */
static void test_exec_and_ties(void) {
  gauge_latest s = {0};
  btu_who w = {.pid = 7, .host = "h1", .process_start_ns = T0, .seq = 40, .end_ns = T0 + 40 * SEC};
  offer(&s, heap_push(100, 40000, &w));
  w.seq = 1; /* the new image */
  w.end_ns = T0 + 41 * SEC;
  offer(&s, heap_push(100, 1000, &w));
  PP_CHECK_INT(s.n, ==, 1);
  w.seq = 2; /* same end, higher sequence */
  offer(&s, heap_push(100, 2000, &w));
  w.seq = 2; /* a full tie: the later arrival */
  offer(&s, heap_push(100, 2500, &w));
  w.seq = 1; /* same end, lower sequence: older */
  offer(&s, heap_push(100, 9999, &w));
  PP_CHECK_INT(kept_inuse(&s), ==, 2500);
  batcher_gauge_free(&s);
}

/* Processes differ by host, pid or start time, and each adds its latest;
 * a push with pid 0 names no process and adds its own. */
static void test_processes_add_their_latest(void) {
  gauge_latest s = {0};
  btu_who a = {.pid = 7, .host = "h1", .process_start_ns = T0, .seq = 1, .end_ns = T0 + SEC};
  offer(&s, heap_push(100, 1000, &a));
  a.seq = 2;
  a.end_ns += SEC;
  offer(&s, heap_push(100, 3000, &a));
  btu_who b = a;
  b.host = "h2"; /* another host, same pid */
  offer(&s, heap_push(100, 500, &b));
  btu_who c = a;
  c.process_start_ns = T0 + 5; /* the pid reused by a new process */
  offer(&s, heap_push(100, 70, &c));
  btu_who anon = {.pid = 0, .host = "", .seq = 0, .end_ns = T0 + SEC};
  offer(&s, heap_push(100, 4, &anon));
  offer(&s, heap_push(100, 4, &anon));
  PP_CHECK_INT(s.n, ==, 5);
  PP_CHECK_INT(kept_inuse(&s), ==, 3000 + 500 + 70 + 4 + 4);
  batcher_gauge_free(&s);
}

/* What the kept gauges cost is counted while they are kept and given back
 * when they are replaced or added to a batch: a packed profile of the gauge
 * columns, much less than the decoded push. */
static void test_memory_is_accounted(void) {
  gauge_latest s = {0};
  btu_who w = {.pid = 7, .host = "h1", .process_start_ns = T0, .seq = 2, .end_ns = T0 + 2 * SEC};
  offer(&s, heap_push(100, 1000, &w));
  PP_CHECK_INT(s.n, ==, 1);
  size_t one = s.mem;
  PP_CHECK(one > 0 && one < 4096);
  w.seq = 3;
  w.end_ns += SEC;
  offer(&s, heap_push(100, 2000, &w)); /* replaces it */
  PP_CHECK(s.mem > 0 && s.mem < 2 * one);
  w.seq = 1;
  w.end_ns = T0 + SEC;
  offer(&s, heap_push(100, 9000, &w)); /* older: not kept */
  PP_CHECK(s.mem > 0 && s.mem < 2 * one);
  PP_CHECK_INT(kept_inuse(&s), ==, 2000);
  PP_CHECK(s.mem < one); /* the table alone */
  batcher_gauge_free(&s);
  PP_CHECK_INT(s.mem, ==, 0);
}

int main(void) {
  PP_RUN(test_gauge_columns_are_the_inuse_types);
  PP_RUN(test_latest_push_of_a_process_wins_in_any_order);
  PP_RUN(test_exec_and_ties);
  PP_RUN(test_processes_add_their_latest);
  PP_RUN(test_memory_is_accounted);
  PP_DONE();
}
