/* Frame header codec: round trip and each rejection; frame packing. */
#include "pp_frame.h"
#include "pp_test.h"
#include "pushprof.pb-c.h"

#include <stdlib.h>

static void test_frame_round_trip(void) {
  uint8_t h[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(h, PP_FRAME_PUSH, 0x01020304u);
  PP_CHECK(memcmp(h, "PPRF\x00\x01\x00\x01\x01\x02\x03\x04", 12) == 0);
  pp_frame_header out = {0};
  const char *why = NULL;
  PP_CHECK_INT(pp_frame_header_decode(h, 0x01020304u, &out, &why), ==, 0);
  PP_CHECK_INT(out.version, ==, 1);
  PP_CHECK_INT(out.type, ==, PP_FRAME_PUSH);
  PP_CHECK_INT(out.length, ==, 0x01020304u);
  pp_frame_header_encode(h, PP_FRAME_REPLY, 0);
  PP_CHECK_INT(pp_frame_header_decode(h, 0, &out, &why), ==, 0);
  PP_CHECK_INT(out.type, ==, PP_FRAME_REPLY);
  PP_CHECK_INT(out.length, ==, 0);
}

static void expect_reject(const uint8_t *h, uint32_t max, const char *word) {
  pp_frame_header out = {7, 7, 7};
  const char *why = NULL;
  PP_CHECK_INT(pp_frame_header_decode(h, max, &out, &why), ==, -1);
  PP_CHECK(why != NULL && strstr(why, word) != NULL);
  if (why && !strstr(why, word))
    fprintf(stderr, "  reason was: %s (want it to mention \"%s\")\n", why, word);
  PP_CHECK_INT(out.length, ==, 7); /* untouched on failure */
}

static void test_frame_rejects_bad_magic(void) {
  uint8_t h[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(h, PP_FRAME_PUSH, 10);
  h[0] = 'G'; /* e.g. an HTTP "GET " */
  expect_reject(h, 100, "magic");
}

static void test_frame_rejects_bad_version(void) {
  uint8_t h[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(h, PP_FRAME_PUSH, 10);
  h[5] = 2;
  expect_reject(h, 100, "version");
  h[4] = 1;
  h[5] = 1; /* 0x0101: big-endian matters */
  expect_reject(h, 100, "version");
}

static void test_frame_rejects_bad_type(void) {
  uint8_t h[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(h, 5, 10);
  expect_reject(h, 100, "type");
  pp_frame_header_encode(h, 0, 10);
  expect_reject(h, 100, "type");
}

static void test_frame_takes_subscribe_and_control(void) {
  uint8_t h[PP_FRAME_HEADER_SIZE];
  pp_frame_header out;
  pp_frame_header_encode(h, PP_FRAME_SUBSCRIBE, 10);
  PP_CHECK_INT(pp_frame_header_decode(h, 100, &out, NULL), ==, 0);
  PP_CHECK_INT(out.type, ==, 3);
  pp_frame_header_encode(h, PP_FRAME_CONTROL, 10);
  PP_CHECK_INT(pp_frame_header_decode(h, 100, &out, NULL), ==, 0);
  PP_CHECK_INT(out.type, ==, 4);
}

static void test_frame_rejects_too_large(void) {
  uint8_t h[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(h, PP_FRAME_PUSH, PP_FRAME_MAX_DEFAULT + 1);
  expect_reject(h, PP_FRAME_MAX_DEFAULT, "too large");
  pp_frame_header_encode(h, PP_FRAME_PUSH, 0xffffffffu); /* "4 GiB" */
  expect_reject(h, PP_FRAME_MAX_DEFAULT, "too large");
  pp_frame_header_encode(h, PP_FRAME_PUSH, PP_FRAME_MAX_DEFAULT);
  pp_frame_header out;
  const char *why = NULL;
  PP_CHECK_INT(pp_frame_header_decode(h, PP_FRAME_MAX_DEFAULT, &out, &why), ==, 0);
}

static void test_frame_pack_holds_header_and_message(void) {
  Pushprof__V1__Control m = PUSHPROF__V1__CONTROL__INIT;
  m.kind = PUSHPROF__V1__CONTROL__KIND__START;
  m.session_id = 42;
  m.profile_type = (char *)"cpu";
  m.sampling_hz = 250;
  m.control_version = PP_CONTROL_VERSION;
  size_t n = pushprof__v1__control__get_packed_size(&m), len = 0;
  uint8_t *f = pp_frame_pack(PP_FRAME_CONTROL, &m.base, n, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(len, ==, PP_FRAME_HEADER_SIZE + n);
  pp_frame_header h;
  PP_CHECK_INT(pp_frame_header_decode(f, PP_CONTROL_MAX, &h, NULL), ==, 0);
  PP_CHECK_INT(h.type, ==, PP_FRAME_CONTROL);
  PP_CHECK_INT(h.length, ==, n);
  Pushprof__V1__Control *back =
      pushprof__v1__control__unpack(NULL, len - PP_FRAME_HEADER_SIZE, f + PP_FRAME_HEADER_SIZE);
  PP_CHECK(back != NULL);
  if (back) {
    PP_CHECK_INT(back->kind, ==, PUSHPROF__V1__CONTROL__KIND__START);
    PP_CHECK_INT(back->session_id, ==, 42);
    PP_CHECK_STR(back->profile_type, "cpu");
    PP_CHECK_INT(back->sampling_hz, ==, 250);
    pushprof__v1__control__free_unpacked(back, NULL);
  }
  free(f);
  len = 7;
  PP_CHECK(pp_frame_pack(PP_FRAME_CONTROL, &m.base, n - 1, &len) == NULL);
  PP_CHECK_INT(len, ==, 7); /* untouched on failure */
}

int main(void) {
  PP_RUN(test_frame_round_trip);
  PP_RUN(test_frame_rejects_bad_magic);
  PP_RUN(test_frame_rejects_bad_version);
  PP_RUN(test_frame_rejects_bad_type);
  PP_RUN(test_frame_takes_subscribe_and_control);
  PP_RUN(test_frame_rejects_too_large);
  PP_RUN(test_frame_pack_holds_header_and_message);
  PP_DONE();
}
