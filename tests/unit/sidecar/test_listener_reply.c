/* Unit tests for sidecar/listener_reply.c: the reply frame on the wire,
 * its bounds, a peer that is gone or never reads, and reading single
 * varint fields out of a payload that may not decode. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listener_int.h"
#include "listener_test_util.h"
#include "pp_test.h"

static void test_listener_peek_sequence_reads_the_wire(void) {
  uint64_t seq = 0;
  /* service="ab" (field 1), then sequence=300 (field 7, varint ac 02). */
  const uint8_t ok[] = {0x0a, 0x02, 'a', 'b', 0x38, 0xac, 0x02};
  PP_CHECK_INT(listener_peek_sequence(ok, sizeof ok, &seq), ==, 0);
  PP_CHECK_INT(seq, ==, 300);
  /* Fixed64 and fixed32 fields are skipped; a later sequence wins. */
  const uint8_t skip[] = {0x38, 0x01, 0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x15, 1, 2, 3, 4, 0x38, 0x05};
  PP_CHECK_INT(listener_peek_sequence(skip, sizeof skip, &seq), ==, 0);
  PP_CHECK_INT(seq, ==, 5);
  /* The sequence before a malformed field still counts; garbage finds none. */
  const uint8_t torn[] = {0x38, 0x07, 0x42, 0x7f, 'x'};
  PP_CHECK_INT(listener_peek_sequence(torn, sizeof torn, &seq), ==, 0);
  PP_CHECK_INT(seq, ==, 7);
  const uint8_t junk[] = {0x42, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x38, 0x01};
  seq = 99;
  PP_CHECK_INT(listener_peek_sequence(junk, sizeof junk, &seq), ==, -1);
  PP_CHECK_INT(seq, ==, 99);
  PP_CHECK_INT(listener_peek_sequence(junk, 0, &seq), ==, -1);
  const uint8_t longvar[] = {0x38, 0xff, 0xff, 0xff, 0xff, 0xff,
                             0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  PP_CHECK_INT(listener_peek_sequence(longvar, sizeof longvar, &seq), ==, -1);
}

/* Every prefix of a real payload (the sequence, field 7, is found in those
 * that reach past it) and random bytes: in bounds (ASan), never a crash. */
static void test_listener_peek_sequence_survives_prefixes_and_noise(void) {
  uint8_t *frame = NULL;
  size_t len = 0;
  PP_CHECK_INT(make_frame(&frame, &len, "svc"), ==, 0);
  if (!frame)
    return;
  const uint8_t *payload = frame + PP_FRAME_HEADER_SIZE;
  size_t plen = len - PP_FRAME_HEADER_SIZE, found = 0;
  for (size_t n = 0; n <= plen; n++) {
    uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
    memcpy(copy, payload, n);
    uint64_t seq = 0;
    if (listener_peek_sequence(copy, n, &seq) == 0) {
      PP_CHECK_INT(seq, ==, 42);
      found++;
    }
    free(copy);
  }
  PP_CHECK(found > 0);
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; i++) {
    size_t n = (size_t)(i % 64);
    uint8_t *b = malloc(n ? n : 1);
    for (size_t k = 0; k < n; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b[k] = (uint8_t)x;
    }
    uint64_t seq;
    (void)listener_peek_sequence(b, n, &seq);
    free(b);
  }
  free(frame);
}

static void test_listener_peek_varint_reads_any_field(void) {
  uint64_t v = 0;
  /* field 3 = 5, field 7 = 1, field 3 = 9 (the last wins), field 12 = 2^35. */
  const uint8_t p[] = {0x18, 0x05, 0x38, 0x01, 0x18, 0x09, 0x60,
                       0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  PP_CHECK_INT(listener_peek_varint(p, sizeof p, 3, &v), ==, 0);
  PP_CHECK_INT(v, ==, 9);
  PP_CHECK_INT(listener_peek_varint(p, sizeof p, 12, &v), ==, 0);
  PP_CHECK_INT(v, ==, 1ull << 35);
  v = 77;
  PP_CHECK_INT(listener_peek_varint(p, sizeof p, 4, &v), ==, -1);
  PP_CHECK_INT(v, ==, 77);
  /* A length-delimited field with the number asked for is not a varint. */
  const uint8_t bytes[] = {0x1a, 0x01, 'x'};
  PP_CHECK_INT(listener_peek_varint(bytes, sizeof bytes, 3, &v), ==, -1);
  PP_CHECK_INT(v, ==, 77);
}

/* Reads one reply frame from fd: its header checked, the body decoded. */
static Pushprof__V1__PushReply *recv_reply(int fd) {
  uint8_t hdr[PP_FRAME_HEADER_SIZE], body[2048];
  if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr)
    return NULL;
  pp_frame_header h;
  const char *why = NULL;
  if (pp_frame_header_decode(hdr, sizeof body, &h, &why) != 0 || h.type != PP_FRAME_REPLY)
    return NULL;
  if (h.length && recv(fd, body, h.length, MSG_WAITALL) != (ssize_t)h.length)
    return NULL;
  return pushprof__v1__push_reply__unpack(NULL, h.length, body);
}

static void test_listener_send_reply_writes_one_reply_frame(void) {
  int sv[2];
  PP_CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
  PP_CHECK_INT(listener_send_reply(sv[0], PUSHPROF__V1__PUSH_REPLY__CODE__OK, "stored", 42,
                                   "push-1", now_ms() + 1000),
               ==, 0);
  Pushprof__V1__PushReply *r = recv_reply(sv[1]);
  PP_CHECK(r != NULL);
  if (r) {
    PP_CHECK_INT(r->code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__OK);
    PP_CHECK_STR(r->reason, "stored");
    PP_CHECK_INT(r->sequence, ==, 42);
    PP_CHECK_STR(r->push_id, "push-1");
    pushprof__v1__push_reply__free_unpacked(r, NULL);
  }
  /* A long reason is cut to REASON_MAX bytes; no reason and no id are "". */
  static char reason[REASON_MAX + 100];
  memset(reason, 'r', sizeof reason - 1);
  PP_CHECK_INT(listener_send_reply(sv[0], PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME, reason, 7,
                                   NULL, now_ms() + 1000),
               ==, 0);
  r = recv_reply(sv[1]);
  PP_CHECK(r != NULL);
  if (r) {
    PP_CHECK_INT(r->code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME);
    PP_CHECK_INT(strlen(r->reason), ==, REASON_MAX);
    PP_CHECK_STR(r->push_id, "");
    pushprof__v1__push_reply__free_unpacked(r, NULL);
  }
  PP_CHECK_INT(listener_send_reply(sv[0], PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME, NULL, 0,
                                   NULL, now_ms() + 1000),
               ==, 0);
  r = recv_reply(sv[1]);
  PP_CHECK(r != NULL && strcmp(r->reason, "") == 0);
  if (r)
    pushprof__v1__push_reply__free_unpacked(r, NULL);
  /* A reply that does not fit the frame buffer is not sent at all. */
  static char id[2000];
  memset(id, 'i', sizeof id - 1);
  PP_CHECK_INT(
      listener_send_reply(sv[0], PUSHPROF__V1__PUSH_REPLY__CODE__OK, "ok", 1, id, now_ms() + 1000),
      ==, -1);
  uint8_t b;
  PP_CHECK_INT(recv(sv[1], &b, 1, MSG_DONTWAIT), ==, -1);
  close(sv[0]);
  close(sv[1]);
}

static void test_listener_send_reply_gives_up_on_a_gone_or_stuck_peer(void) {
  int sv[2];
  PP_CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
  close(sv[1]); /* MSG_NOSIGNAL: EPIPE, not SIGPIPE */
  PP_CHECK_INT(listener_send_reply(sv[0], 0, "x", 1, NULL, now_ms() + 1000), ==, -1);
  close(sv[0]);
  /* A peer that never reads: the send buffer fills, the deadline passes. */
  PP_CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  static char fill[1 << 16];
  while (send(sv[0], fill, sizeof fill, MSG_DONTWAIT) > 0)
    ;
  int64_t t0 = now_ms();
  PP_CHECK_INT(listener_send_reply(sv[0], 0, "x", 1, NULL, t0 + 100), ==, -1);
  int64_t took = now_ms() - t0;
  PP_CHECK(took >= 90 && took < 5000);
  close(sv[0]);
  close(sv[1]);
}

int main(void) {
  PP_RUN(test_listener_peek_sequence_reads_the_wire);
  PP_RUN(test_listener_peek_sequence_survives_prefixes_and_noise);
  PP_RUN(test_listener_peek_varint_reads_any_field);
  PP_RUN(test_listener_send_reply_writes_one_reply_frame);
  PP_RUN(test_listener_send_reply_gives_up_on_a_gone_or_stuck_peer);
  PP_DONE();
}
