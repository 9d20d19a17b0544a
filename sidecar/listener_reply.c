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
  size_t total, off = 0;
  uint8_t *buf = pp_frame_pack(PP_FRAME_REPLY, &r.base, 1024, &total);
  if (!buf)
    return -1;
  int rc = -1;
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
        goto fail;
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
        goto fail;
      continue;
    }
    goto fail;
  }
  rc = 0;
fail:
  free(buf);
  return rc;
}
