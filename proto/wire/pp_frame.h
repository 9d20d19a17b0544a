/* The SDK <-> sidecar frame codec (see PROTOCOL.md).
 * A frame: 12-byte header then payload.
 *   bytes 0..3  magic "PPRF"
 *   bytes 4..5  version, big-endian (1)
 *   bytes 6..7  type, big-endian (1 = PushRequest, 2 = PushReply,
 *               3 = Subscribe, 4 = Control)
 *   bytes 8..11 payload length, big-endian
 * Thread-safe; only pp_frame_pack allocates. */
#ifndef PP_FRAME_H
#define PP_FRAME_H
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#define PP_FRAME_MAGIC "PPRF"
#define PP_FRAME_VERSION 1
#define PP_FRAME_HEADER_SIZE 12
#define PP_FRAME_MAX_DEFAULT (16u << 20)

/* PushRequest limits (PROTOCOL.md); the sidecar refuses pushes beyond them. */
#define PP_SERVICE_MAX 128      /* bytes; at least 1 */
#define PP_LABELS_MAX 64        /* process labels per push */
#define PP_LABEL_KEY_MAX 128    /* bytes; at least 1 */
#define PP_LABEL_VALUE_MAX 1024 /* bytes */
#define PP_HOSTNAME_MAX 255
#define PP_PROFILE_TYPE_MAX 16

/* Spool drop-in (PROTOCOL.md): a client that cannot reach the sidecar may
 * write one complete frame per file into the sidecar's spool directory:
 * write "." + name, fsync, rename to name. Names end in PP_SPOOL_SUFFIX;
 * names starting with '.' are ignored by the sidecar. */
#define PP_SPOOL_SUFFIX ".push"

/* PP_FRAME_SUBSCRIBE and PP_FRAME_CONTROL: the on-demand subscription
 * (PROTOCOL.md "On-demand profiles"). A sidecar older than them answers a
 * Subscribe with INVALID_FRAME and closes. */
enum pp_frame_type {
  PP_FRAME_PUSH = 1,
  PP_FRAME_REPLY = 2,
  PP_FRAME_SUBSCRIBE = 3,
  PP_FRAME_CONTROL = 4
};
#define PP_CONTROL_VERSION 1
#define PP_SUBSCRIBE_MAX (64u << 10) /* a Subscribe frame's payload, bytes */
#define PP_CONTROL_MAX 4096          /* a Control frame's payload, bytes */

typedef struct pp_frame_header {
  uint16_t version;
  uint16_t type;
  uint32_t length;
} pp_frame_header;

void pp_frame_header_encode(uint8_t out[PP_FRAME_HEADER_SIZE], uint16_t type, uint32_t length);

/* Packs msg as one frame of the given type: header, then msg's protobuf
 * encoding. Returns a malloc'd buffer the caller frees, *len its size; NULL
 * when the payload would exceed max_payload bytes or memory is short. */
uint8_t *pp_frame_pack(uint16_t type, const ProtobufCMessage *msg, size_t max_payload, size_t *len);

/* Decodes and validates a header against max_length. Returns 0, or -1 with
 * *why set to a static one-line reason ("bad magic", "frame too large", ...). */
int pp_frame_header_decode(const uint8_t in[PP_FRAME_HEADER_SIZE], uint32_t max_length,
                           pp_frame_header *out, const char **why);
#endif
