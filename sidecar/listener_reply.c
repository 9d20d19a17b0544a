/* Replies to a client, and reads of single fields from a payload's wire
 * bytes (the sequence, for replies to frames that did not decode). */
#include "listener_int.h"

int listener_peek_sequence(const uint8_t *payload, size_t len, uint64_t *seq) {
  enum { SEQUENCE_FIELD = 7 }; /* PushRequest.sequence, pushprof.proto */
  return listener_peek_varint(payload, len, SEQUENCE_FIELD, seq);
}

int listener_peek_varint(const uint8_t *payload, size_t len, unsigned field, uint64_t *out) {
  int found = -1;
  const uint8_t *p = payload, *end = payload + len;
  pp_wire_field f;
  /* Up to the first field protobuf-c could not frame; the last one wins. */
  while (p < end && pp_wire_next(&p, end, &f))
    if (f.wire_type == 0 && f.num == field) {
      *out = f.v;
      found = 0;
    }
  return found;
}

/* Sends one PushReply frame within the deadline. 0 or -1. */
int listener_send_reply(int fd, int code, const char *reason, uint64_t seq, const char *push_id,
                        int64_t deadline) {
  char why[REASON_MAX + 1];
  snprintf(why, sizeof why, "%s", reason ? reason : "");
  Pushprof__V1__PushReply r = PUSHPROF__V1__PUSH_REPLY__INIT;
  r.code = (Pushprof__V1__PushReply__Code)code;
  r.reason = why;
  r.sequence = seq;
  if (push_id)
    r.push_id = (char *)push_id;
  uint8_t buf[PP_FRAME_HEADER_SIZE + 1024];
  size_t n = pushprof__v1__push_reply__get_packed_size(&r);
  if (n > sizeof buf - PP_FRAME_HEADER_SIZE)
    return -1;
  pushprof__v1__push_reply__pack(&r, buf + PP_FRAME_HEADER_SIZE);
  pp_frame_header_encode(buf, PP_FRAME_REPLY, (uint32_t)n);
  size_t total = n + PP_FRAME_HEADER_SIZE, off = 0;
  while (off < total) {
    ssize_t w = send(fd, buf + off, total - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int64_t left = deadline - now_ms();
      if (left <= 0)
        return -1;
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
        return -1;
      continue;
    }
    return -1;
  }
  return 0;
}
