/* The collector (sdk/collector.c): how it splits a thread's label snapshot
 * ("k\0v\0k\0v\0", as labels_copy writes it) into pprof labels. The
 * windows it drains and cuts are checked through the sampler
 * (test_sampler_linux, test_labels) and the wait and heap profilers. */
#include <string.h>

#include "collector.h"
#include "pp_builder.h"
#include "pp_test.h"
#include "ring.h"

static void test_collector_decodes_well_formed_pairs(void) {
  static const char snap[] = "route\0/checkout\0tenant\0acme\0\0empty key";
  pp_label out[RING_MAX_LABELS + 1];
  memset(out, 0, sizeof out);
  PP_CHECK_INT(collector_decode_labels(snap, 2, 28, out), ==, 2);
  PP_CHECK_STR(out[0].key, "route");
  PP_CHECK_STR(out[0].str, "/checkout");
  PP_CHECK_STR(out[1].key, "tenant");
  PP_CHECK_STR(out[1].str, "acme");
  PP_CHECK(out[0].key == snap && out[1].str == snap + 23); /* pointing into the snapshot */
  /* An empty key and value are still a pair. */
  PP_CHECK_INT(collector_decode_labels(snap, 3, sizeof snap, out), ==, 3);
  PP_CHECK_STR(out[2].key, "");
  PP_CHECK_STR(out[2].str, "empty key");
  /* No more pairs than the snapshot says it holds. */
  PP_CHECK_INT(collector_decode_labels(snap, 1, sizeof snap, out), ==, 1);
  PP_CHECK_INT(collector_decode_labels(snap, 0, sizeof snap, out), ==, 0);
  PP_CHECK_INT(collector_decode_labels(snap, 2, 0, out), ==, 0);
}

/* A pair cut by len (no terminator for its key or its value, or no value
 * at all) is not returned; the pairs before it are. */
static void test_collector_stops_at_a_cut_pair(void) {
  static const char snap[] = "route\0/checkout\0tenant\0acme";
  pp_label out[RING_MAX_LABELS];
  PP_CHECK_INT(collector_decode_labels(snap, 2, 16, out), ==, 1); /* ends after the first */
  PP_CHECK_INT(collector_decode_labels(snap, 2, 27, out), ==, 1); /* "acme" unterminated */
  PP_CHECK_INT(collector_decode_labels(snap, 2, 23, out), ==, 1); /* key, no value */
  PP_CHECK_INT(collector_decode_labels(snap, 2, 20, out), ==, 1); /* key unterminated */
  PP_CHECK_INT(collector_decode_labels(snap, 2, 15, out), ==, 0); /* "/checkout" cut */
  PP_CHECK_INT(collector_decode_labels(snap, 2, 5, out), ==, 0);  /* "route" cut */
  PP_CHECK_INT(collector_decode_labels(snap, 2, 28, out), ==, 2);
}

/* At most RING_MAX_LABELS pairs, whatever the count says. */
static void test_collector_caps_the_labels(void) {
  char snap[4 * (RING_MAX_LABELS + 2)];
  size_t len = 0;
  for (int i = 0; i < RING_MAX_LABELS + 2; i++) {
    snap[len++] = (char)('a' + i);
    snap[len++] = '\0';
    snap[len++] = (char)('A' + i);
    snap[len++] = '\0';
  }
  pp_label out[RING_MAX_LABELS + 2];
  memset(out, 0, sizeof out);
  PP_CHECK_INT(collector_decode_labels(snap, RING_MAX_LABELS + 2, (uint16_t)len, out), ==,
               RING_MAX_LABELS);
  const char last[2] = {(char)('A' + RING_MAX_LABELS - 1), '\0'};
  PP_CHECK_STR(out[RING_MAX_LABELS - 1].str, last);
  PP_CHECK(out[RING_MAX_LABELS].key == NULL); /* nothing written past the cap */
}

int main(void) {
  PP_RUN(test_collector_decodes_well_formed_pairs);
  PP_RUN(test_collector_stops_at_a_cut_pair);
  PP_RUN(test_collector_caps_the_labels);
  PP_DONE();
}
