/* The 12-byte frame header codec (layout in pp_frame.h and PROTOCOL.md). */
#include "pp_frame.h"

#include <stdlib.h>
#include <string.h>

static void put_be16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static uint16_t get_be16(const uint8_t *p) {
  return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void pp_frame_header_encode(uint8_t out[PP_FRAME_HEADER_SIZE], uint16_t type, uint32_t length) {
  memcpy(out, PP_FRAME_MAGIC, 4);
  put_be16(out + 4, PP_FRAME_VERSION);
  put_be16(out + 6, type);
  put_be32(out + 8, length);
}

uint8_t *pp_frame_pack(uint16_t type, const ProtobufCMessage *msg, size_t max_payload,
                       size_t *len) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  if (n > max_payload || n > UINT32_MAX)
    return NULL;
  uint8_t *f = malloc(PP_FRAME_HEADER_SIZE + n);
  if (!f)
    return NULL;
  pp_frame_header_encode(f, type, (uint32_t)n);
  if (protobuf_c_message_pack(msg, f + PP_FRAME_HEADER_SIZE) != n) {
    free(f);
    return NULL;
  }
  *len = PP_FRAME_HEADER_SIZE + n;
  return f;
}

int pp_frame_header_decode(const uint8_t in[PP_FRAME_HEADER_SIZE], uint32_t max_length,
                           pp_frame_header *out, const char **why) {
  const char *reason = NULL;
  pp_frame_header h = {get_be16(in + 4), get_be16(in + 6), get_be32(in + 8)};
  if (memcmp(in, PP_FRAME_MAGIC, 4) != 0)
    reason = "bad magic (want \"PPRF\": not a pushprof frame)";
  else if (h.version != PP_FRAME_VERSION)
    reason = "unsupported frame version (this side speaks version 1)";
  else if (h.type < PP_FRAME_PUSH || h.type > PP_FRAME_CONTROL)
    reason = "unknown frame type (want 1 = PushRequest, 2 = PushReply, 3 = Subscribe or 4 = "
             "Control)";
  else if (h.length > max_length)
    reason = "frame too large (payload length over the limit)";
  if (reason) {
    if (why)
      *why = reason;
    return -1;
  }
  if (out)
    *out = h;
  return 0;
}
