/* proto/pprof/pp_why.c: a reason is formatted into the caller's buffer,
 * cut to fit and terminated, and a NULL or empty buffer is left alone. */
#include "pp_test.h"
#include "pp_why.h"

static void test_say_formats_into_the_buffer(void) {
  char why[64];
  memset(why, 'z', sizeof why);
  pp_say(why, sizeof why, "profile %d of %s: %zu bytes", 3, "svc", (size_t)4096);
  PP_CHECK_STR(why, "profile 3 of svc: 4096 bytes");
}

static void test_say_cuts_to_fit_and_terminates(void) {
  char why[16];
  memset(why, 'z', sizeof why);
  pp_say(why, 8, "%s", "0123456789");
  PP_CHECK_STR(why, "0123456");
  for (size_t i = 8; i < sizeof why; i++) /* nothing written past whylen */
    PP_CHECK_INT(why[i], ==, 'z');
  pp_say(why, 1, "%s", "abc");
  PP_CHECK_STR(why, "");
}

static void test_say_leaves_a_null_or_empty_buffer_alone(void) {
  pp_say(NULL, 64, "%s", "no buffer");
  char why[4] = {'a', 'b', 'c', '\0'};
  pp_say(why, 0, "%s", "xyz");
  PP_CHECK_STR(why, "abc");
}

int main(void) {
  PP_RUN(test_say_formats_into_the_buffer);
  PP_RUN(test_say_cuts_to_fit_and_terminates);
  PP_RUN(test_say_leaves_a_null_or_empty_buffer_alone);
  PP_DONE();
}
