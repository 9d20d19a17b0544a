/* The SDK -> sidecar frame: the header codec (pp_frame_header_decode, which
 * must agree with pp_frame_header_encode), the PushRequest/PushReply unpack,
 * and the sidecar's whole-frame decoder pp_push_decode (header, push, limits,
 * pprof), whose accepted requests must respect every limit of PROTOCOL.md. The first input byte
 * picks the frame limit (bits 0-1) and, with bit 2 set, has the header's length field rewritten to
 * the real payload length, so mutations inside a payload still reach the PushRequest and pprof
 * checks. */
#include <stdbool.h>
#include <string.h>

#include "fuzz_target.h"
#include "pp_frame.h"
#include "pp_parse.h"
#include "pp_push.h"
#include "pushprof.pb-c.h"

static void check_header(const uint8_t *data, size_t size, uint32_t max) {
  if (size < PP_FRAME_HEADER_SIZE)
    return;
  pp_frame_header h;
  const char *why = NULL;
  if (pp_frame_header_decode(data, max, &h, &why) != 0) {
    FUZZ_CHECK(why != NULL && why[0] != '\0', "a refused header must say why");
    return;
  }
  FUZZ_CHECK(memcmp(data, PP_FRAME_MAGIC, 4) == 0, "accepted a bad magic");
  FUZZ_CHECK(h.version == PP_FRAME_VERSION, "accepted version %u", (unsigned)h.version);
  FUZZ_CHECK(h.type == PP_FRAME_PUSH || h.type == PP_FRAME_REPLY, "accepted type %u",
             (unsigned)h.type);
  FUZZ_CHECK(h.length <= max, "accepted length %u over the limit %u", (unsigned)h.length,
             (unsigned)max);
  uint8_t again[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(again, h.type, h.length);
  FUZZ_CHECK(memcmp(again, data, PP_FRAME_HEADER_SIZE) == 0, "decode/encode do not round-trip");
}

/* The payload as either message: protobuf-c's unpack over our generated
 * descriptors (the sidecar reads PushRequests, the SDK PushReplies). Not
 * checked: that a repacked message unpacks again. protobuf-c 1.4.1 does not
 * guarantee it (an overlong-varint field number 0 is kept as an unknown field
 * and repacked in a form it refuses), and pushprof never repacks what it got. */
static void check_messages(const uint8_t *payload, size_t len) {
  Pushprof__V1__PushRequest *req = pushprof__v1__push_request__unpack(NULL, len, payload);
  if (req)
    pushprof__v1__push_request__free_unpacked(req, NULL);
  Pushprof__V1__PushReply *rep = pushprof__v1__push_reply__unpack(NULL, len, payload);
  if (rep)
    pushprof__v1__push_reply__free_unpacked(rep, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint32_t limits[] = {PP_FRAME_MAX_DEFAULT, 4096, 64, PP_FRAME_HEADER_SIZE};
  uint32_t max = PP_FRAME_MAX_DEFAULT;
  uint8_t *fixed = NULL;
  if (size > 0) {
    max = limits[data[0] & 3];
    bool fix_length = (data[0] & 4) != 0;
    data++;
    size--;
    if (fix_length && size >= PP_FRAME_HEADER_SIZE) {
      fixed = malloc(size);
      FUZZ_CHECK(fixed != NULL, "out of memory");
      memcpy(fixed, data, size);
      uint32_t n = (uint32_t)(size - PP_FRAME_HEADER_SIZE);
      fixed[8] = (uint8_t)(n >> 24);
      fixed[9] = (uint8_t)(n >> 16);
      fixed[10] = (uint8_t)(n >> 8);
      fixed[11] = (uint8_t)n;
      data = fixed;
    }
  }
  check_header(data, size, max);
  if (size >= PP_FRAME_HEADER_SIZE)
    check_messages(data + PP_FRAME_HEADER_SIZE, size - PP_FRAME_HEADER_SIZE);

  /* The listener's and the spool scan's decoder: the parsed pprof is handed
   * over, req->pprof emptied. */
  int code = -1;
  char why[512] = "";
  pp_push *push = pp_push_decode(data, size, max, &code, why, sizeof why);
  if (!push) {
    FUZZ_CHECK(code != PUSHPROF__V1__PUSH_REPLY__CODE__OK, "refused with code OK");
    FUZZ_CHECK(why[0] != '\0', "a refused frame must say why");
    free(fixed);
    return 0;
  }
  const Pushprof__V1__PushRequest *req = push->req;
  FUZZ_CHECK(req != NULL, "accepted push without its request");
  FUZZ_CHECK(req->pprof.data == NULL && req->pprof.len == 0, "encoded pprof kept");
  if (req->no_samples) {
    FUZZ_CHECK(push->prof == NULL, "no_samples push with a profile");
  } else {
    FUZZ_CHECK(push->prof != NULL, "accepted push without its parsed pprof");
    FUZZ_CHECK(pp_pprof_profile(push->prof) != NULL, "parsed pprof without a profile");
  }
  FUZZ_CHECK(push->frame_bytes == size, "frame_bytes %zu, frame %zu", push->frame_bytes, size);
  FUZZ_CHECK(code == PUSHPROF__V1__PUSH_REPLY__CODE__OK, "accepted with code %d", code);
  FUZZ_CHECK(size - PP_FRAME_HEADER_SIZE <= max, "accepted a frame over the limit");
  size_t slen = req->service ? strlen(req->service) : 0;
  FUZZ_CHECK(slen >= 1 && slen <= PP_SERVICE_MAX, "service of %zu bytes", slen);
  FUZZ_CHECK(!req->hostname || strlen(req->hostname) <= PP_HOSTNAME_MAX, "hostname too long");
  FUZZ_CHECK(req->n_labels <= PP_LABELS_MAX, "%zu labels", req->n_labels);
  for (size_t i = 0; i < req->n_labels; i++) {
    const Pushprof__V1__Label *l = req->labels[i];
    size_t kl = l->key ? strlen(l->key) : 0, vl = l->value ? strlen(l->value) : 0;
    FUZZ_CHECK(kl >= 1 && kl <= PP_LABEL_KEY_MAX, "label key of %zu bytes", kl);
    FUZZ_CHECK(vl <= PP_LABEL_VALUE_MAX, "label value of %zu bytes", vl);
  }
  FUZZ_CHECK(req->end_time_nanos >= req->start_time_nanos, "end before start");
  pp_push_free(push);
  free(fixed);
  return 0;
}
