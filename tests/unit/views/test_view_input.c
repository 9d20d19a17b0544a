/* views/view_input.c: times for --since and --until. */
#include "pp_test.h"
#include "view_input.h"

static void test_input_parse_time(void) {
  int64_t t = 0, now = 1700000000LL * 1000000000;
  PP_CHECK_INT(view_parse_time("2023-11-14T22:13:20Z", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now);
  PP_CHECK_INT(view_parse_time("2023-11-14T23:13:20.5+01:00", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now + 500000000);
  PP_CHECK_INT(view_parse_time("@1700000000", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now);
  PP_CHECK_INT(view_parse_time("2h", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now - 7200LL * 1000000000);
  PP_CHECK_INT(view_parse_time("2023-11-14", now, &t), ==, 0);
  PP_CHECK_INT(view_parse_time("2023-11-14T10:00:00", now, &t), ==, -1); /* no zone */
  PP_CHECK_INT(view_parse_time("yesterday", now, &t), ==, -1);
  PP_CHECK_INT(view_parse_time("5x", now, &t), ==, -1);
}

int main(void) {
  PP_RUN(test_input_parse_time);
  PP_DONE();
}
