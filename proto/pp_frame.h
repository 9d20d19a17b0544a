/* The SDK <-> sidecar frame codec (see PROTOCOL.md).
 * A frame: 12-byte header then payload.
 *   bytes 0..3  magic "PPRF"
 *   bytes 4..5  version, big-endian (1)
 *   bytes 6..7  type, big-endian (1 = PushRequest, 2 = PushReply)
 *   bytes 8..11 payload length, big-endian
 * Pure functions: thread-safe, no allocation. */
#ifndef PP_FRAME_H
#define PP_FRAME_H
#include <stddef.h>
#include <stdint.h>

#define PP_FRAME_MAGIC "PPRF"
#define PP_FRAME_VERSION 1
#define PP_FRAME_HEADER_SIZE 12
#define PP_FRAME_MAX_DEFAULT (16u << 20)

enum pp_frame_type { PP_FRAME_PUSH = 1, PP_FRAME_REPLY = 2 };

typedef struct pp_frame_header {
  uint16_t version;
  uint16_t type;
  uint32_t length;
} pp_frame_header;

void pp_frame_header_encode(uint8_t out[PP_FRAME_HEADER_SIZE], uint16_t type, uint32_t length);

/* Decodes and validates a header against max_length. Returns 0, or -1 with
 * *why set to a static one-line reason ("bad magic", "frame too large", ...). */
int pp_frame_header_decode(const uint8_t in[PP_FRAME_HEADER_SIZE], uint32_t max_length,
                           pp_frame_header *out, const char **why);
#endif
